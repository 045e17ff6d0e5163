"""Static W8A8 ConvTranspose1d/2d/3d: lucidq's int8 GEMM (exact int32) + col2im, requantized once.

A transposed convolution scatters every input position through the kernel: per group,
    cols[b, s, (o, k)] = Σ_i (x[b, i, s] − z_in) · w[i, o, k]      (lucidq.gemm_int32, exact)
    acc[b, o, s·stride − pad + k·dilation] += cols[b, s, (o, k)]     (col2im, int64, exact)
then acc is requantized once onto the calibrated output grid (quantized/_requant.py), with
output_padding extending the far end as in torch. Weights: int8, one scale per tensor (the
qconfig's per-tensor weight observer, as torch's default mapping gives transposed
convolutions) or one per output channel: a per-channel observer is run along the output
channels (torch's weight layout [C_in, C_out / groups, ...] is observed as
[C_out, C_in / groups, ...]), the only axis one requantization per output can fold; torch.ao
refuses per-channel weights for these modules.
"""

import numpy as np
from torch import nn

from ... import _lucidq
from .._observed import output_qparams
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from ._io import float_bias
from ._requant import requantize_channels
from ._state import QuantizedState
from ._weights import int8_codes

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "pack_groups"]


def _output_major(weight, groups):
    """torch's transposed weight [C_in, C_out / g, *k] as [C_out, C_in / g, *k]."""
    c_in, c_out_g = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    w = weight.reshape((groups, c_in // groups, c_out_g) + kernel)
    return w.transpose(1, 2).reshape((groups * c_out_g, c_in // groups) + kernel)


def pack_groups(codes, groups):
    """One lucidq.PackedWeightsInt8 per group, rows (o, k) [C_out/g · K, C_in/g], from int8
    codes [C_out, C_in / groups, *k] (the GEMM sums exactly; scales are kept apart)."""
    c_out_g, c_in_g = codes.shape[0] // groups, codes.shape[1]
    gemms = []
    for g in range(groups):
        block = codes[g * c_out_g:(g + 1) * c_out_g]  # [C_out/g, C_in/g, *k]
        rows = np.moveaxis(block, 1, -1).reshape(-1, c_in_g)  # [(o, k), C_in/g]
        gemms.append(_lucidq.PackedWeightsInt8.pack(np.ascontiguousarray(rows),
                                                    np.ones(1, np.float32)))
    return gemms


class _ConvTransposeNd(QuantizedState, nn.Module):
    """Quantized nn.ConvTranspose{1,2,3}d; codes [B, C, *spatial].

    gemms: one lucidq.PackedWeightsInt8 per group, rows (o, k) [C_out/g · K, C_in/g];
    weight_scales: float32, 1 or out_channels; bias: None or float32 [out_channels];
    kernel_size, stride, padding, output_padding, dilation: one int per spatial axis;
    scale / zero_point / qdtype: the output grid.
    """

    DIMS = 2

    def __init__(self, gemms, weight_scales, bias, kernel_size, stride, padding, output_padding,
                 dilation, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__()
        self.gemms = list(gemms)
        self.weight_scales = np.asarray(weight_scales, np.float32)
        self.bias = bias
        self.kernel_size = tuple(kernel_size)
        self.stride = tuple(stride)
        self.padding = tuple(padding)
        self.output_padding = tuple(output_padding)
        self.dilation = tuple(dilation)
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype

    @property
    def groups(self):
        return len(self.gemms)

    @property
    def in_channels(self):
        return self.gemms[0].columns * self.groups

    @property
    def out_channels(self):
        return self.gemms[0].rows // int(np.prod(self.kernel_size)) * self.groups

    @classmethod
    def from_float(cls, mod):
        """From a prepared and calibrated float ConvTranspose: output qparams from its
        activation_post_process, weights through a fresh qconfig.weight() observer."""
        where = label(mod)
        out = output_qparams(mod)
        if mod.padding_mode != "zeros":
            raise _lucidq.Error(f"{where}: padding_mode = {mod.padding_mode!r} (expected 'zeros')")
        weight = _output_major(mod.weight.detach(), mod.groups)
        codes, scales = int8_codes(weight, mod.qconfig.weight(), where)
        new = cls(pack_groups(codes, mod.groups), scales, float_bias(mod.bias), mod.kernel_size,
                  mod.stride, mod.padding, mod.output_padding, mod.dilation, out.scale[0],
                  out.zero_point[0], out.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _check(self, codes):
        dims = self.DIMS + 2
        if codes.ndim != dims or codes.shape[1] != self.in_channels:
            raise _lucidq.Error(
                f"{label(self)}: input has shape {tuple(codes.shape)} (expected {dims}-D "
                f"[B, C, ...] with C = in_channels = {self.in_channels})")

    def forward(self, x):
        q = codes_of(x, self)
        codes = q.array
        self._check(codes)
        batch, spatial = codes.shape[0], codes.shape[2:]
        full = tuple((n - 1) * s + d * (k - 1) + 1 + op for n, s, d, k, op in zip(
            spatial, self.stride, self.dilation, self.kernel_size, self.output_padding))
        out_size = tuple(f - 2 * p for f, p in zip(full, self.padding))
        if min(out_size) < 1:
            raise _lucidq.Error(
                f"{label(self)}: input {tuple(spatial)} gives an empty output {out_size} "
                f"(padding {self.padding})")
        c_in_g = self.in_channels // self.groups
        c_out_g = self.out_channels // self.groups
        taps = int(np.prod(self.kernel_size))
        rows = np.ascontiguousarray(np.moveaxis(codes, 1, -1)).reshape(-1, self.in_channels)
        acc = np.zeros((batch, self.out_channels) + full, np.int64)
        for g, gemm in enumerate(self.gemms):
            try:
                cols = _lucidq.gemm_int32(rows[:, g * c_in_g:(g + 1) * c_in_g], gemm,
                                          q.zero_point)
            except _lucidq.Error as error:
                raise _lucidq.Error(f"{label(self)}: {error}") from None
            cols = cols.reshape((batch,) + tuple(spatial) + (c_out_g, taps))
            cols = np.moveaxis(cols, -2, 1)  # [B, C_out/g, *spatial, taps]
            group_acc = acc[:, g * c_out_g:(g + 1) * c_out_g]
            for t, tap in enumerate(np.ndindex(*self.kernel_size)):
                window = tuple(
                    slice(k * d, k * d + (n - 1) * s + 1, s)
                    for k, d, n, s in zip(tap, self.dilation, spatial, self.stride))
                group_acc[(slice(None), slice(None)) + window] += cols[..., t]
        crop = tuple(slice(p, p + n) for p, n in zip(self.padding, out_size))
        out = requantize_channels(acc[(slice(None), slice(None)) + crop], q.scale,
                                  self.weight_scales, self.bias, self.scale, self.zero_point,
                                  self.qdtype, relu=False)
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    def weight_codes(self):
        """The int8 weight codes [C_out, C_in / groups, *kernel_size] (a NumPy array)."""
        blocks = []
        for gemm in self.gemms:
            rows = gemm.unpack()  # [(o, k), C_in/g]
            rows = rows.reshape((-1,) + self.kernel_size + (rows.shape[1],))
            blocks.append(np.moveaxis(rows, -1, 1))
        return np.ascontiguousarray(np.concatenate(blocks))

    def extra_repr(self):
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}, "
            f"output_padding={self.output_padding}, dilation={self.dilation}, "
            f"groups={self.groups}, scale={self.scale:.6g}, zero_point={self.zero_point}, "
            f"bias={self.bias is not None}"
        )


class ConvTranspose1d(_ConvTransposeNd):
    """Quantized nn.ConvTranspose1d (torch.ao.nn.quantized.ConvTranspose1d), [B, C, L] codes."""

    DIMS = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Quantized nn.ConvTranspose2d (torch.ao.nn.quantized.ConvTranspose2d), NCHW codes."""

    DIMS = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Quantized nn.ConvTranspose3d (torch.ao.nn.quantized.ConvTranspose3d), NCDHW codes."""

    DIMS = 3
