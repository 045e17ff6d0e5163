"""QAT Linear, LinearReLU, LinearBn1d: float modules whose weight goes through its fake quantizer.

The weight fake quantizer is qconfig.weight() (a FakeQuantize); the output's is added by
prepare_qat as the activation_post_process hook, as for any observed module. LinearBn1d
trains its BatchNorm as torch's nniqat.LinearBn1d does: the weight is scaled by
gamma / sqrt(running_var + eps) before fake quantization, the product is scaled back, and
the BatchNorm runs on it (batch statistics in train mode); convert folds the BatchNorm in
with the running statistics (weight_and_bias).
"""

import torch
import torch.nn.functional as F
from torch import nn

from ... import _lucidq

__all__ = ["Linear", "LinearReLU", "LinearBn1d"]


def _qconfig_of(mod, cls):
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise _lucidq.Error(f"qat.{cls.__name__}.from_float: the module has no qconfig")
    return qconfig


class Linear(nn.Linear):
    """nn.Linear with fake-quantized weights; qconfig is required."""

    def __init__(self, in_features, out_features, bias=True, qconfig=None):
        super().__init__(in_features, out_features, bias)
        if qconfig is None:
            raise _lucidq.Error(f"qat.{type(self).__name__}: qconfig is None (expected a QConfig)")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, x):
        return F.linear(x, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod):
        """Shares the float module's Parameters (a Linear, or the Linear of a fused LinearReLU)."""
        qconfig = _qconfig_of(mod, cls)
        linear = mod[0] if isinstance(mod, nn.Sequential) else mod
        new = cls(linear.in_features, linear.out_features, linear.bias is not None, qconfig)
        new.weight = linear.weight
        new.bias = linear.bias
        new.train(mod.training)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new


class LinearReLU(Linear):
    """QAT Linear followed by ReLU (before the output fake quantizer)."""

    def forward(self, x):
        return F.relu(super().forward(x))


class LinearBn1d(nn.Module):
    """Linear + BatchNorm1d trained with the folded, fake-quantized weight."""

    def __init__(self, linear, bn, qconfig):
        super().__init__()
        self.qconfig = qconfig
        self.linear = linear
        self.bn = bn
        self.weight_fake_quant = qconfig.weight()

    @property
    def weight(self):
        return self.linear.weight

    @property
    def in_features(self):
        return self.linear.in_features

    @property
    def out_features(self):
        return self.linear.out_features

    @classmethod
    def from_float(cls, mod):
        qconfig = _qconfig_of(mod, cls)
        new = cls(mod[0], mod[1], qconfig)
        new.train(mod.training)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _bn_scale(self):
        std = torch.sqrt(self.bn.running_var + self.bn.eps)
        gamma = self.bn.weight if self.bn.weight is not None else torch.ones_like(std)
        return gamma / std

    def forward(self, x):
        scale = self._bn_scale()
        w = self.weight_fake_quant(self.linear.weight * scale.reshape(-1, 1))
        y = F.linear(x, w) / scale
        if self.linear.bias is not None:
            y = y + self.linear.bias
        return self.bn(y)

    def weight_and_bias(self):
        """The weight and bias with the BatchNorm folded in (running statistics)."""
        scale = self._bn_scale()
        bias = self.linear.bias if self.linear.bias is not None else torch.zeros_like(scale)
        beta = self.bn.bias if self.bn.bias is not None else torch.zeros_like(scale)
        weight = self.linear.weight * scale.reshape(-1, 1)
        return weight, (bias - self.bn.running_mean) * scale + beta
