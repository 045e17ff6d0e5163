"""Dropout on quantized activations: the identity, as torch.ao's quantized Dropout."""

from torch import nn

from ._state import QuantizedState

__all__ = ["Dropout"]


class Dropout(QuantizedState, nn.Module):
    """Quantized nn.Dropout (torch.ao.nn.quantized.Dropout): returns its input unchanged,
    quantized or float (a converted model runs in inference mode)."""

    OBSERVES_OUTPUT = False

    def __init__(self, p=0.5):
        super().__init__()
        self.p = float(p)

    @classmethod
    def from_float(cls, mod):
        new = cls(mod.p)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"p={self.p}"
