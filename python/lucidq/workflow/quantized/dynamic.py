"""Dynamic Linear: float in, float out; each row quantized on the fly (lucidq.linear_dynamic).

The dynamic recurrent modules (dynamic_rnn.py) are re-exported here, so the names match
torch.ao.nn.quantized.dynamic's: dynamic.Linear, dynamic.LSTM, dynamic.GRU, dynamic.LSTMCell,
dynamic.GRUCell, dynamic.RNNCell."""

import torch
from torch import nn

from ... import _lucidq
from ...nn import DynamicQuantizedLinear
from .._paths import label
from ._dynamic_config import dynamic_product
from ._io import float_input
from ._state import QuantizedState
from .dynamic_rnn import GRU, LSTM, GRUCell, LSTMCell, RNNCell

__all__ = ["Linear", "LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"]


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
        linear = mod[0] if isinstance(mod, nn.Sequential) else mod
        layer = dynamic_product(linear.weight, linear.bias, mod.qconfig, label(mod))
        new = cls(layer.packed_weight, layer.bias, per_row=layer.per_row, qdtype=layer.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        values = float_input(x, self, self.in_features)
        return torch.from_numpy(self.layer(values))

    def extra_repr(self):
        return repr(self.layer)
