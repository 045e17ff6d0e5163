"""Dynamic Linear: float in, float out; each row quantized on the fly (lucidq.linear_dynamic)."""

import torch
from torch import nn

from ... import _lucidq
from ...nn import DynamicQuantizedLinear
from .._observed import qdtype_of
from .._paths import label
from ._io import float_array, float_bias, float_input
from ._state import QuantizedState
from ._weights import int8_weight

__all__ = ["Linear"]


class Linear(QuantizedState, nn.Module):
    """Counterpart of torch.ao.nn.quantized.dynamic.Linear over lucidq's DynamicQuantizedLinear.

    Activations: quantized per row (per token) by default, which is finer than torch's one
    scale per call; per_row=False is torch's choice. Weights: int8, symmetric."""

    OBSERVES_OUTPUT = False

    def __init__(self, packed, bias, per_row=True, qdtype=_lucidq.quint8):
        super().__init__()
        self.layer = DynamicQuantizedLinear(packed, bias, per_row=per_row, qdtype=qdtype)

    @property
    def in_features(self):
        return self.layer.in_features

    @property
    def out_features(self):
        return self.layer.out_features

    @classmethod
    def from_float(cls, mod):
        """From a float Linear whose qconfig is a DynamicConfig (or any QConfig: its weight
        observer quantizes the weight, its activation observer's dtype is the activation grid)."""
        where = label(mod)
        qconfig = mod.qconfig
        linear = mod[0] if isinstance(mod, nn.Sequential) else mod
        weight_factory = getattr(qconfig, "weight", None)
        if weight_factory is None:
            packed = _lucidq.PackedWeightsInt8.quantize(float_array(linear.weight))
        else:
            packed = int8_weight(linear.weight, weight_factory(), where)
        per_row = getattr(qconfig, "per_row", True)
        qdtype = getattr(qconfig, "qdtype", None)
        if qdtype is None:
            qdtype = qdtype_of(qconfig.activation())
        new = cls(packed, float_bias(linear.bias), per_row=per_row, qdtype=qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        values = float_input(x, self, self.in_features)
        return torch.from_numpy(self.layer(values))

    def extra_repr(self):
        return repr(self.layer)
