"""Modules for quantization-aware training: float modules with fake-quantized weights."""

from .linear import Linear, LinearBn1d, LinearReLU

__all__ = ["Linear", "LinearReLU", "LinearBn1d"]
