"""MaxPool2d on quantized activations: the max of codes is the code of the max, so the grid is kept.

Quantized activations are torch quantized tensors, so the pooling is torch's own quantized
max_pool2d on the codes (exact: a max of integers), and every option of nn.MaxPool2d
behaves as in float (padding reads as −∞). Float input (a part of the model left float)
is pooled as float.
"""

import copy

from torch import nn

from ._state import QuantizedState

__all__ = ["MaxPool2d"]


class MaxPool2d(QuantizedState, nn.Module):
    """Quantized nn.MaxPool2d (the output keeps the input's scale and zero point)."""

    OBSERVES_OUTPUT = False

    def __init__(self, float_module):
        super().__init__()
        self.float_module = float_module

    @classmethod
    def from_float(cls, mod):
        new = cls(copy.deepcopy(mod))
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        return self.float_module(x)
