"""Static W8A8 Conv3d / ConvReLU3d: lucidq.conv2d_int32 summed over depth taps, requantized once.

A 3-D convolution is, for each kernel depth tap kd, a 2-D convolution of the input's depth
slices d = d_out·stride_d − pad_front + kd·dilation_d with the weight's slice w[:, :, kd]:
    acc[b, o, d_out] = Σ_kd conv2d_int32(x[b, :, d], w[:, :, kd])
Each conv2d_int32 is exact in int32 (padding reads as z_in, i.e. float zero); a slice that
falls in the depth padding contributes zero and is skipped. The sum is exact in int32, then
requantized once onto the calibrated output grid (quantized/_requant.py), ReLU fused into
the clamp for ConvReLU3d. Weights: int8 per output channel (the qconfig's weight observer),
one PackedConvWeights per depth tap, packed once.
"""

import numpy as np
from torch import nn

from ... import _lucidq
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from ._io import float_bias
from .conv import observed_conv
from ._requant import requantize_channels
from ._state import QuantizedState

__all__ = ["Conv3d", "ConvReLU3d", "padding_amounts"]


def _triple(value):
    return (value,) * 3 if isinstance(value, int) else tuple(value)


def padding_amounts(padding, kernel, dilation):
    """(front, back) per spatial axis for nn.Conv*'s padding: amounts, "valid" or "same"
    (total dilation·(k − 1), the extra one at the back as torch)."""
    if padding == "valid":
        return tuple((0, 0) for _ in kernel)
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    return tuple((p, p) for p in padding)


class Conv3d(QuantizedState, nn.Module):
    """Quantized counterpart of nn.Conv3d (torch.ao.nn.quantized.Conv3d), NCDHW codes.

    taps: one lucidq.PackedConvWeights per kernel depth tap; weight_scales: float32, 1 or
    out_channels; bias: None or float32 [out_channels]; stride, padding ((front, back) per
    axis), dilation: 3 ints each; scale / zero_point / qdtype: the output grid.
    """

    RELU = False

    def __init__(self, taps, weight_scales, bias, stride, padding, dilation, scale, zero_point,
                 qdtype=_lucidq.quint8):
        super().__init__()
        self.taps = list(taps)
        self.weight_scales = np.asarray(weight_scales, np.float32)
        self.bias = bias
        self.stride = tuple(stride)
        self.padding = tuple(tuple(p) for p in padding)
        self.dilation = tuple(dilation)
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype

    @property
    def in_channels(self):
        return self.taps[0].in_channels

    @property
    def out_channels(self):
        return self.taps[0].out_channels

    @property
    def kernel_size(self):
        return (len(self.taps),) + tuple(self.taps[0].kernel_size)

    @classmethod
    def from_float(cls, mod):
        """From a prepared and calibrated float Conv3d (or fused ConvReLU3d, or a QAT conv
        with its BatchNorm folded in): output qparams from its activation_post_process,
        weights from its weight_fake_quant (QAT) or a fresh qconfig.weight() observer."""
        out, conv, codes, scales, bias = observed_conv(mod)
        taps = [
            _lucidq.PackedConvWeights.pack(np.ascontiguousarray(codes[:, :, kd]), scales,
                                           groups=conv.groups)
            for kd in range(codes.shape[2])
        ]
        kernel, dilation = _triple(conv.kernel_size), _triple(conv.dilation)
        padding = conv.padding if isinstance(conv.padding, str) else _triple(conv.padding)
        new = cls(taps, scales, float_bias(bias), _triple(conv.stride),
                  padding_amounts(padding, kernel, dilation), dilation, out.scale[0],
                  out.zero_point[0], out.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _out_sizes(self, spatial):
        """The output (D, H, W) of input (D, H, W), as torch's convolution arithmetic."""
        kernel = self.kernel_size
        return tuple(
            (n + front + back - d * (k - 1) - 1) // s + 1
            for n, (front, back), d, k, s in zip(spatial, self.padding, self.dilation, kernel,
                                                 self.stride))

    def forward(self, x):
        q = codes_of(x, self)
        codes = q.array
        if codes.ndim != 5 or codes.shape[1] != self.in_channels:
            raise _lucidq.Error(
                f"{label(self)}: input has shape {tuple(codes.shape)} (expected [B, C, D, H, W] "
                f"with C = in_channels = {self.in_channels})")
        batch, depth = codes.shape[0], codes.shape[2]
        out_size = self._out_sizes(codes.shape[2:])
        if min(out_size) < 1:
            raise _lucidq.Error(
                f"{label(self)}: input {tuple(codes.shape[2:])} is smaller than the kernel's "
                f"reach (kernel {self.kernel_size}, dilation {self.dilation}, padding "
                f"{self.padding}): empty output {out_size}")
        (top, bottom), (left, right) = self.padding[1], self.padding[2]
        acc = np.zeros((batch, out_size[0], self.out_channels) + out_size[1:], np.int32)
        outputs = np.arange(out_size[0])
        for kd, tap in enumerate(self.taps):
            source = outputs * self.stride[0] - self.padding[0][0] + kd * self.dilation[0]
            valid = (source >= 0) & (source < depth)  # depth padding contributes zero
            if not valid.any():
                continue
            count = int(valid.sum())
            slices = codes[:, :, source[valid]].transpose(0, 2, 1, 3, 4)
            slices = np.ascontiguousarray(slices).reshape((batch * count,) + codes.shape[1:2]
                                                          + codes.shape[3:])
            try:
                part = _lucidq.conv2d_int32(
                    slices, tap, q.zero_point, self.stride[1:], (top, bottom, left, right),
                    self.dilation[1:])
            except _lucidq.Error as error:
                raise _lucidq.Error(f"{label(self)}: {error}") from None
            acc[:, valid] += part.reshape((batch, count) + part.shape[1:])
        out = requantize_channels(acc.transpose(0, 2, 1, 3, 4), q.scale, self.weight_scales,
                                  self.bias, self.scale, self.zero_point, self.qdtype, self.RELU)
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    def weight_codes(self):
        """The int8 weight codes [C_out, C_in / groups, KD, KH, KW] (a NumPy array)."""
        return np.stack([tap.unpack() for tap in self.taps], axis=2)

    def extra_repr(self):
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
            f"groups={self.taps[0].groups}, scale={self.scale:.6g}, "
            f"zero_point={self.zero_point}, bias={self.bias is not None}"
        )


class ConvReLU3d(Conv3d):
    """Quantized fused Conv3d + ReLU (the ReLU is the requantization clamp from zero_point)."""

    RELU = True
