"""Weight-only Linear: float activations times int4 / int8 group-quantized weights (WeightOnlyLinear)."""

import torch
from torch import nn

from ... import _lucidq
from ...weight_only import WeightOnlyLinear
from .._paths import label
from ._io import float_array, float_bias, float_input
from ._state import QuantizedState

__all__ = ["Linear"]


class Linear(QuantizedState, nn.Module):
    """Float in, float out; the weight is stored group-wise in `bits` bits and decoded in the
    kernel (lucidq.weight_only_linear)."""

    OBSERVES_OUTPUT = False

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    @property
    def in_features(self):
        return self.layer.in_features

    @property
    def out_features(self):
        return self.layer.out_features

    @classmethod
    def from_float(cls, mod):
        """From a float Linear whose qconfig is a WeightOnlyConfig(bits, group_size, symmetric)."""
        config = mod.qconfig
        linear = mod[0] if isinstance(mod, nn.Sequential) else mod
        try:
            layer = WeightOnlyLinear.from_float(
                float_array(linear.weight),
                float_bias(linear.bias),
                bits=config.bits,
                group_size=config.group_size,
                symmetric=config.symmetric,
                activations=config.activations,
            )
        except _lucidq.Error as error:
            raise _lucidq.Error(f"{label(mod)}: {error}") from None
        new = cls(layer)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        values = float_input(x, self, self.in_features)
        return torch.from_numpy(self.layer(values))

    def extra_repr(self):
        return repr(self.layer)
