"""BatchNorm2d/3d, BNReLU2d/3d and PReLU on 8-bit codes: a 256-entry code table per channel.

Each is an elementwise map that depends on the channel only, and an 8-bit code has 256
values, so per channel c (axis 1) the module is exactly a table, built once per input grid
(s_in, z_in) in float64, with QFunctional's requantization rule:
    v = s_in · (code − z_in)
    BatchNorm:  y = gamma_c / sqrt(running_var_c + eps) · (v − running_mean_c) + beta_c
    PReLU:      y = v if v ≥ 0 else a_c · v
    out = clamp(round_half_even(y / s_out) + z_out)  (from z_out up for BNReLU)
onto the calibrated output grid. The forward pass is one table lookup per element.
"""

import numpy as np
import torch
from torch import nn

from ... import _lucidq
from .._observed import output_qparams
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from .functional import _dequantized, _requantize
from ._state import QuantizedState

__all__ = ["BatchNorm2d", "BatchNorm3d", "BNReLU2d", "BNReLU3d", "PReLU"]


def _float32(tensor):
    return tensor.detach().to("cpu", torch.float32).numpy().copy()


class _ChannelTable(QuantizedState, nn.Module):
    """A per-channel elementwise map as tables [channels, 256] from the input grid's codes
    (indexed by the code's byte) to the output grid's."""

    RELU = False
    SPATIAL_DIMS = None  # None: any rank with channels on axis 1 (or one table for all)

    def __init__(self, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__()
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype
        self._tables = {}

    @property
    def channels(self):
        raise NotImplementedError

    def _values(self, v):
        """float64 [channels, 256] outputs for the float64 inputs v [256]."""
        raise NotImplementedError

    def _table(self, q):
        key = (q.scale, q.zero_point, q.qdtype.name)
        table = self._tables.get(key)
        if table is None:
            y = self._values(_dequantized(q))
            table = _requantize(y, self.scale, self.zero_point, self.qdtype, self.RELU)
            self._tables[key] = table
        return table

    def _check(self, codes):
        dims = self.SPATIAL_DIMS
        if dims is not None and codes.ndim != dims + 2:
            raise _lucidq.Error(
                f"{label(self)}: input has shape {tuple(codes.shape)} (expected {dims + 2}-D "
                f"[B, C, ...] with C = {self.channels})")
        if self.channels > 1 and (codes.ndim < 2 or codes.shape[1] != self.channels):
            raise _lucidq.Error(
                f"{label(self)}: input has shape {tuple(codes.shape)} (expected [B, C, ...] "
                f"with C = {self.channels} channels)")

    def forward(self, x):
        q = codes_of(x, self)
        codes = q.array
        self._check(codes)
        table = self._table(q)
        if self.channels == 1:
            out = table[0][codes.view(np.uint8)]
        else:
            offsets = (np.arange(self.channels, dtype=np.int32) * 256).reshape(
                (1, self.channels) + (1,) * (codes.ndim - 2))
            index = codes.view(np.uint8).astype(np.int32)
            index += offsets
            out = np.take(table.reshape(-1), index)
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    def extra_repr(self):
        return (f"{self.channels}, scale={self.scale:.6g}, zero_point={self.zero_point}, "
                f"qdtype={self.qdtype.name}")


class BatchNorm2d(_ChannelTable):
    """Quantized nn.BatchNorm2d (torch.ao.nn.quantized.BatchNorm2d) with its running
    statistics; gamma, beta, mean, var: float32 [C]."""

    SPATIAL_DIMS = 2

    def __init__(self, gamma, beta, mean, var, eps, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__(scale, zero_point, qdtype)
        self.gamma, self.beta = np.asarray(gamma, np.float32), np.asarray(beta, np.float32)
        self.mean, self.var = np.asarray(mean, np.float32), np.asarray(var, np.float32)
        self.eps = float(eps)

    @property
    def channels(self):
        return self.gamma.size

    @classmethod
    def from_float(cls, mod):
        """From a prepared and calibrated float BatchNorm (or a fused BNReLU unit)."""
        where = label(mod)
        out = output_qparams(mod)
        bn = mod[0] if isinstance(mod, nn.Sequential) else mod
        if bn.running_mean is None or bn.running_var is None:
            raise _lucidq.Error(
                f"{where}: {type(bn).__name__} has no running statistics "
                "(track_running_stats=False; expected running_mean and running_var)")
        ones = torch.ones(bn.num_features)
        gamma = bn.weight if bn.weight is not None else ones
        beta = bn.bias if bn.bias is not None else torch.zeros(bn.num_features)
        stats = (_float32(t) for t in (gamma, beta, bn.running_mean, bn.running_var))
        new = cls(*stats, bn.eps, out.scale[0], out.zero_point[0], out.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _values(self, v):
        k = self.gamma.astype(np.float64) / np.sqrt(self.var.astype(np.float64) + self.eps)
        centred = v[None, :] - self.mean.astype(np.float64)[:, None]
        return k[:, None] * centred + self.beta.astype(np.float64)[:, None]


class BatchNorm3d(BatchNorm2d):
    """Quantized nn.BatchNorm3d (torch.ao.nn.quantized.BatchNorm3d), NCDHW codes."""

    SPATIAL_DIMS = 3


class BNReLU2d(BatchNorm2d):
    """Quantized fused BatchNorm2d + ReLU (torch.ao.nn.intrinsic.quantized.BNReLU2d): the
    ReLU is the clamp from z_out."""

    RELU = True


class BNReLU3d(BatchNorm3d):
    """Quantized fused BatchNorm3d + ReLU (torch.ao.nn.intrinsic.quantized.BNReLU3d)."""

    RELU = True


class PReLU(_ChannelTable):
    """Quantized nn.PReLU (torch.ao.nn.quantized.PReLU); weight: float32 [num_parameters]
    (one slope for every channel, or one per channel on axis 1)."""

    def __init__(self, weight, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__(scale, zero_point, qdtype)
        self.weight = np.asarray(weight, np.float32).reshape(-1)

    @property
    def channels(self):
        return self.weight.size

    @classmethod
    def from_float(cls, mod):
        """From a prepared and calibrated float PReLU."""
        out = output_qparams(mod)
        new = cls(_float32(mod.weight), out.scale[0], out.zero_point[0],
                  out.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _values(self, v):
        slopes = self.weight.astype(np.float64)[:, None]
        return np.where(v[None, :] >= 0, v[None, :], slopes * v[None, :])
