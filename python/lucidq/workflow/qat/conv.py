"""QAT Conv, ConvReLU, ConvBn, ConvBnReLU (1d, 2d, 3d): convolutions with fake-quantized weights.

The ConvBn units train their BatchNorm as torch 1.13's nniqat.ConvBn2d (its default,
approximate path): with k = gamma / sqrt(running_var + eps), the weight W · k is fake
quantized, the convolution runs without bias, its output is divided by k, the conv bias
added, then the BatchNorm runs (batch statistics while its statistics are live, running
statistics once freeze_bn_stats() froze them; a frozen BatchNorm stays in eval mode through
model.train()). convert folds the BatchNorm in with the running statistics
(weight_and_bias), as fuse_modules does for inference.
"""

import torch
import torch.nn.functional as F
from torch import nn

from ... import _lucidq
from .linear import _qconfig_of

__all__ = [
    "Conv1d", "Conv2d", "Conv3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "ConvBn1d",
    "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "freeze_bn_stats",
    "update_bn_stats",
]


def _channel_shape(ndim, axis):
    """(1, …, -1, …, 1) of ndim axes with -1 at axis: a per-channel vector's broadcast shape."""
    return tuple(-1 if i == axis else 1 for i in range(ndim))


class _FakeQuantConv:
    """Mixin before an nn.Conv{1,2,3}d: the conv with fake-quantized weights; qconfig is
    required."""

    def __init__(self, conv, qconfig):
        super().__init__(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                         conv.padding, conv.dilation, conv.groups, conv.bias is not None,
                         conv.padding_mode)
        if qconfig is None:
            raise _lucidq.Error(f"qat.{type(self).__name__}: qconfig is None (expected a QConfig)")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()
        self.weight = conv.weight
        self.bias = conv.bias

    def forward(self, x):
        return self._conv_forward(x, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod):
        """Shares the float module's Parameters (a conv, or the conv of a fused ConvReLU)."""
        qconfig = _qconfig_of(mod, cls)
        conv = mod[0] if isinstance(mod, nn.Sequential) else mod
        new = cls(conv, qconfig)
        new.train(mod.training)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new


class _ReLU:
    """Mixin before a QAT conv: ReLU after it (before the output fake quantizer)."""

    def forward(self, x):
        return F.relu(super().forward(x))


class Conv1d(_FakeQuantConv, nn.Conv1d):
    """nn.Conv1d with fake-quantized weights."""


class Conv2d(_FakeQuantConv, nn.Conv2d):
    """nn.Conv2d with fake-quantized weights."""


class Conv3d(_FakeQuantConv, nn.Conv3d):
    """nn.Conv3d with fake-quantized weights."""


class ConvReLU1d(_ReLU, Conv1d):
    """QAT Conv1d followed by ReLU."""


class ConvReLU2d(_ReLU, Conv2d):
    """QAT Conv2d followed by ReLU."""


class ConvReLU3d(_ReLU, Conv3d):
    """QAT Conv3d followed by ReLU."""


class _ConvBn(nn.Module):
    """Conv + BatchNorm trained with the BatchNorm-scaled, fake-quantized weight."""

    RELU = False

    def __init__(self, conv, bn, qconfig, freeze_bn=False):
        super().__init__()
        self.qconfig = qconfig
        self.conv = conv
        self.bn = bn
        self.weight_fake_quant = qconfig.weight()
        self.freeze_bn = False
        if freeze_bn:
            self.freeze_bn_stats()

    @property
    def weight(self):
        return self.conv.weight

    @classmethod
    def from_float(cls, mod):
        qconfig = _qconfig_of(mod, cls)
        new = cls(mod[0], mod[1], qconfig)
        new.train(mod.training)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def freeze_bn_stats(self):
        """Stop updating the BatchNorm statistics; normalize with the running ones."""
        self.freeze_bn = True
        self.bn.training = False
        return self

    def update_bn_stats(self):
        """Resume training the BatchNorm statistics (normalize with the batch's)."""
        self.freeze_bn = False
        self.bn.training = self.training
        return self

    def train(self, mode=True):
        self.training = mode
        for name, child in self.named_children():
            if not (self.freeze_bn and name == "bn"):
                child.train(mode)
        return self

    def _bn_scale(self):
        std = torch.sqrt(self.bn.running_var + self.bn.eps)
        gamma = self.bn.weight if self.bn.weight is not None else torch.ones_like(std)
        return gamma / std

    def forward(self, x):
        k = self._bn_scale()
        weight_shape = _channel_shape(self.conv.weight.dim(), 0)
        w = self.weight_fake_quant(self.conv.weight * k.reshape(weight_shape))
        y = self.conv._conv_forward(x, w, None)
        y = y / k.reshape(_channel_shape(y.dim(), 1))
        if self.conv.bias is not None:
            y = y + self.conv.bias.reshape(_channel_shape(y.dim(), 1))
        y = self.bn(y)
        return F.relu(y) if self.RELU else y

    def weight_and_bias(self):
        """The weight and bias with the BatchNorm folded in (running statistics)."""
        k = self._bn_scale()
        bias = self.conv.bias if self.conv.bias is not None else torch.zeros_like(k)
        beta = self.bn.bias if self.bn.bias is not None else torch.zeros_like(k)
        weight = self.conv.weight * k.reshape(_channel_shape(self.conv.weight.dim(), 0))
        return weight, (bias - self.bn.running_mean) * k + beta


class ConvBn1d(_ConvBn):
    """Conv1d + BatchNorm1d."""


class ConvBn2d(_ConvBn):
    """Conv2d + BatchNorm2d."""


class ConvBn3d(_ConvBn):
    """Conv3d + BatchNorm3d."""


class ConvBnReLU1d(ConvBn1d):
    """ConvBn1d followed by ReLU (before the output fake quantizer)."""

    RELU = True


class ConvBnReLU2d(ConvBn2d):
    """ConvBn2d followed by ReLU (before the output fake quantizer)."""

    RELU = True


class ConvBnReLU3d(ConvBn3d):
    """ConvBn3d followed by ReLU (before the output fake quantizer)."""

    RELU = True


def freeze_bn_stats(module):
    """For model.apply(freeze_bn_stats): freezes the BatchNorm statistics of ConvBn units."""
    if isinstance(module, _ConvBn):
        module.freeze_bn_stats()


def update_bn_stats(module):
    """For model.apply(update_bn_stats): resumes updating them."""
    if isinstance(module, _ConvBn):
        module.update_bn_stats()
