"""Modules for quantization-aware training: float modules with fake-quantized weights."""

from .conv import ConvBn2d, ConvBnReLU2d, Conv2d, ConvReLU2d, freeze_bn_stats, update_bn_stats
from .linear import Linear, LinearBn1d, LinearReLU

__all__ = ["Linear", "LinearReLU", "LinearBn1d", "Conv2d", "ConvReLU2d", "ConvBn2d",
           "ConvBnReLU2d", "freeze_bn_stats", "update_bn_stats"]
