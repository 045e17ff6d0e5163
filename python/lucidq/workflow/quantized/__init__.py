"""Quantized modules that compute with integers on lucidq's kernels (quantized torch tensors in and out)."""

from .activation import (
    ELU, GELU, Hardsigmoid, Hardswish, LeakyReLU, ReLU, ReLU6, SiLU, Sigmoid, Tanh,
)
from .channel_table import BatchNorm2d, BatchNorm3d, BNReLU2d, BNReLU3d, PReLU
from .conv import Conv1d, Conv2d, ConvReLU1d, ConvReLU2d
from .conv3d import Conv3d, ConvReLU3d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout
from .embedding import Embedding, EmbeddingBag
from .functional import QFunctional
from .float_rule import (
    GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm, Softmax,
)
from .linear import Linear, LinearReLU
from .pool import MaxPool2d
from .stubs import DeQuantize, Quantize
from . import dynamic, weight_only
from . import _module_states  # noqa: F401  (declares the state of the types above)
from . import _layer_states  # noqa: F401  (norms, Conv3d, ConvTranspose, PReLU, ... states)

__all__ = [
    "Linear", "LinearReLU", "Quantize", "DeQuantize", "ReLU", "ReLU6", "Sigmoid",
    "Hardsigmoid", "Tanh", "Hardswish", "ELU", "LeakyReLU", "GELU", "SiLU", "dynamic",
    "weight_only", "Conv1d", "Conv2d", "ConvReLU2d", "Embedding", "EmbeddingBag",
    "MaxPool2d", "QFunctional", "BatchNorm2d", "BatchNorm3d", "BNReLU2d", "BNReLU3d", "PReLU",
    "ConvReLU1d", "Conv3d", "ConvReLU3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Dropout", "LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
    "InstanceNorm3d", "Softmax",
]
