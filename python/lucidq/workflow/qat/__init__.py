"""Modules for quantization-aware training: float modules with fake-quantized weights."""

from .conv import (
    Conv1d, Conv2d, Conv3d, ConvBn1d, ConvBn2d, ConvBn3d, ConvBnReLU1d, ConvBnReLU2d, ConvBnReLU3d,
    ConvReLU1d, ConvReLU2d, ConvReLU3d, freeze_bn_stats, update_bn_stats,
)
from .linear import Linear, LinearBn1d, LinearReLU

__all__ = [
    "Linear", "LinearReLU", "LinearBn1d", "Conv1d", "Conv2d", "Conv3d", "ConvReLU1d",
    "ConvReLU2d", "ConvReLU3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d",
    "ConvBnReLU2d", "ConvBnReLU3d", "freeze_bn_stats", "update_bn_stats",
]
