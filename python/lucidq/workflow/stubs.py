"""QuantStub, DeQuantStub, QuantWrapper: where a model's float part ends and its quantized part starts.

Before convert they are identities (prepare observes the QuantStub's output, which is the
network input; under QAT its fake quantizer runs there). convert swaps them for
quantized.Quantize (float -> quantized tensor) and quantized.DeQuantize (quantized -> float).
"""

import torch
from torch import nn

from .. import _lucidq
from ._paths import label

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(nn.Module):
    """Marks where activations become quantized; identity until convert.

    qconfig: optional, as torch's QuantStub(qconfig). Input must be a floating-point tensor.
    """

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            kind = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else type(x).__name__
            raise _lucidq.Error(
                f"{label(self)}: input is {kind} (expected a floating-point tensor)"
            )
        return x


class DeQuantStub(nn.Module):
    """Marks where activations go back to float; identity until convert."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(nn.Module):
    """quant -> module -> dequant around a float module, whose qconfig it takes over."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, x):
        return self.dequant(self.module(self.quant(x)))

