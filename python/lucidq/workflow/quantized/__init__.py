"""Quantized modules that compute with integers on lucidq's kernels (quantized torch tensors in and out)."""

from .activation import (
    ELU, GELU, Hardsigmoid, Hardswish, LeakyReLU, ReLU, ReLU6, SiLU, Sigmoid, Tanh,
)
from .conv import Conv1d, Conv2d, ConvReLU2d
from .embedding import Embedding, EmbeddingBag
from .functional import QFunctional
from .linear import Linear, LinearReLU
from .pool import MaxPool2d
from .stubs import DeQuantize, Quantize
from . import dynamic, weight_only
from . import _module_states  # noqa: F401  (declares the state of the types above)

__all__ = [
    "Linear", "LinearReLU", "Quantize", "DeQuantize", "ReLU", "ReLU6", "Sigmoid",
    "Hardsigmoid", "Tanh", "Hardswish", "ELU", "LeakyReLU", "GELU", "SiLU", "dynamic",
    "weight_only", "Conv1d", "Conv2d", "ConvReLU2d", "Embedding", "EmbeddingBag",
    "MaxPool2d", "QFunctional",
]
