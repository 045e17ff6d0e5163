"""Quantized modules that compute with integers on lucidq's kernels (torch tensors / QTensors in and out)."""

from .activation import (
    ELU, GELU, Hardsigmoid, Hardswish, LeakyReLU, ReLU, ReLU6, SiLU, Sigmoid, Tanh,
)
from .linear import Linear, LinearReLU
from .stubs import DeQuantize, Quantize
from . import dynamic, weight_only

__all__ = [
    "Linear", "LinearReLU", "Quantize", "DeQuantize", "ReLU", "ReLU6", "Sigmoid",
    "Hardsigmoid", "Tanh", "Hardswish", "ELU", "LeakyReLU", "GELU", "SiLU", "dynamic",
    "weight_only",
]
