"""Static W8A8 Conv1d, Conv2d, ConvReLU1d, ConvReLU2d: 8-bit codes in and out, on lucidq.conv2d.

Each call is one integer pass of lucidq.conv2d_requantize on the input's NCHW codes:
acc = Σ (x − z_in) · w exact in int32 (padding reads as z_in, i.e. float zero), then
out = clamp(nearbyint(acc · s_in·s_w[o]/s_out + bias[o]/s_out) + z_out), ReLU fused into the
clamp for ConvReLU1d / ConvReLU2d. Conv1d is the same with H = 1. Weights: int8 per output
channel (the qconfig's weight observer), packed once (im2col GEMM, pointwise GEMM or
depthwise kernel).
"""

from torch import nn

from ... import _lucidq
from .._observed import output_qparams
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from ._io import float_bias
from ._state import QuantizedState
from ._weights import int8_codes

__all__ = ["Conv1d", "Conv2d", "ConvReLU1d", "ConvReLU2d", "observed_conv"]


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def _conv_of(mod):
    """The nn.Conv* of a float conv, a fused unit (its first part) or a QAT ConvBn unit."""
    if isinstance(mod, nn.Sequential):
        return mod[0]
    return mod.conv if isinstance(getattr(mod, "conv", None), nn.Module) else mod


def observed_conv(mod):
    """What convert takes from a prepared and calibrated conv (float, fused or QAT, with its
    BatchNorm folded in): (output QParams from its activation_post_process, the nn.Conv*,
    int8 weight codes, their per-channel scales, the float bias). Weights go through the
    weight_fake_quant (QAT) or a fresh qconfig.weight() observer; lucidq.Error names the
    module when it has no observer or a padding_mode other than zeros."""
    where = label(mod)
    out = output_qparams(mod)
    conv = _conv_of(mod)
    if getattr(conv, "padding_mode", "zeros") != "zeros":
        raise _lucidq.Error(
            f"{where}: padding_mode = {conv.padding_mode!r} (expected 'zeros')")
    if hasattr(mod, "weight_fake_quant"):
        weight_observer = mod.weight_fake_quant
        weight, bias = mod.weight_and_bias() if hasattr(mod, "weight_and_bias") else (
            mod.weight, mod.bias)
    else:
        weight_observer = mod.qconfig.weight()
        weight, bias = conv.weight, conv.bias
    codes, scales = int8_codes(weight, weight_observer, where)
    return out, conv, codes, scales, bias


class Conv2d(QuantizedState, nn.Module):
    """Quantized counterpart of nn.Conv2d (torch.ao.nn.quantized.Conv2d), NCHW codes.

    packed: a lucidq.PackedConvWeights; bias: None or float32 [out_channels]; stride,
    padding ("same", "valid" or amounts), dilation as nn.Conv2d; scale / zero_point / qdtype:
    the output grid.
    """

    RELU = False
    SPATIAL_DIMS = 2

    def __init__(self, packed, bias, stride, padding, dilation, scale, zero_point,
                 qdtype=_lucidq.quint8):
        super().__init__()
        self.packed_weight = packed
        self.bias = bias
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype

    @property
    def in_channels(self):
        return self.packed_weight.in_channels

    @property
    def out_channels(self):
        return self.packed_weight.out_channels

    @classmethod
    def from_float(cls, mod):
        """From a prepared and calibrated float conv (or fused ConvReLU2d, or a QAT conv,
        with its BatchNorm folded in): output qparams from its activation_post_process,
        weights from its weight_fake_quant (QAT) or a fresh qconfig.weight() observer."""
        out, conv, codes, scales, bias = observed_conv(mod)
        if cls.SPATIAL_DIMS == 1:
            codes = codes[:, :, None, :]
        packed = _lucidq.PackedConvWeights.pack(codes, scales, groups=conv.groups)
        stride, padding, dilation = conv.stride, conv.padding, conv.dilation
        if cls.SPATIAL_DIMS == 1:
            stride, dilation = (1, stride[0]), (1, dilation[0])
            padding = padding if isinstance(padding, str) else (0, padding[0])
        new = cls(packed, float_bias(bias), _pair(stride),
                  padding if isinstance(padding, str) else _pair(padding), _pair(dilation),
                  out.scale[0], out.zero_point[0], out.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _codes(self, x):
        q = codes_of(x, self)
        codes = q.array
        dims = self.SPATIAL_DIMS + 2
        if codes.ndim != dims or codes.shape[1] != self.in_channels:
            shape = "[B, C, L]" if dims == 3 else "[B, C, H, W]"
            raise _lucidq.Error(
                f"{label(self)}: input has shape {tuple(codes.shape)} (expected {shape} with "
                f"C = in_channels = {self.in_channels})"
            )
        return q, codes

    def forward(self, x):
        q, codes = self._codes(x)
        if self.SPATIAL_DIMS == 1:
            codes = codes[:, :, None, :]
        try:
            out = _lucidq.conv2d_requantize(
                codes, self.packed_weight, q.scale, q.zero_point, self.scale, self.zero_point,
                self.qdtype, self.bias, self.RELU, self.stride, self.padding, self.dilation)
        except _lucidq.Error as error:
            raise _lucidq.Error(f"{label(self)}: {error}") from None
        if self.SPATIAL_DIMS == 1:
            out = out[:, :, 0, :]
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    def weight_codes(self):
        """The int8 weight codes [C_out, C_in / groups, KH, KW] (a NumPy array)."""
        return self.packed_weight.unpack()

    def extra_repr(self):
        return (
            f"{self.in_channels}, {self.out_channels}, "
            f"kernel_size={self.packed_weight.kernel_size}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, "
            f"groups={self.packed_weight.groups}, scale={self.scale:.6g}, "
            f"zero_point={self.zero_point}, bias={self.bias is not None}"
        )


class ConvReLU2d(Conv2d):
    """Quantized fused Conv2d + ReLU (the ReLU is the requantization clamp from zero_point)."""

    RELU = True


class Conv1d(Conv2d):
    """Quantized nn.Conv1d: [B, C, L] codes, computed as conv2d with H = 1."""

    SPATIAL_DIMS = 1


class ConvReLU1d(Conv1d):
    """Quantized fused Conv1d + ReLU (the ReLU is the requantization clamp from zero_point)."""

    RELU = True
