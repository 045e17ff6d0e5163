"""LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, Softmax: dequantize, float32 op, requantize.

These ops reduce over many elements (a mean, a variance, a sum of exponentials), so no
per-element table or integer kernel gives them exactly; lucidq applies torch.ao's rule:
    v = float32(code − z_in) · float32(s_in)          (lucidq's DeQuantize, one rounding)
    y = the float op on v in float32 (torch.nn.functional, the float module's parameters;
        InstanceNorm always normalizes with the input's own statistics, as torch.ao's)
    out = clamp(round_half_even(y · (1 / s_out)) + z_out)   (lucidq.quantize)
The output grid is the calibrated observer's; Softmax's is fixed as torch.ao's default
mapping fixes it (quint8, scale 1/256, zero point 0: [0, 1) in steps of 1/256). Float input
(a part of the model left float, e.g. a Softmax after the DeQuantStub) runs the float op.
"""

import copy

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from ... import _lucidq
from .._observed import qparams_of
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from ._requant import code_dtype

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "Softmax"]


class _FloatRule(nn.Module):
    """Dequantize, run _float (float32), quantize onto the output grid."""

    FIXED = None  # (scale, zero_point) of a fixed quint8 output grid, or None: calibrated
    OBSERVES_OUTPUT = True

    def __init__(self, float_module, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__()
        self.float_module = float_module
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype
        self._out = _lucidq.QParams.per_tensor(self.scale, self.zero_point, qdtype)

    @classmethod
    def from_float(cls, mod):
        """From a prepared (and, unless the grid is fixed, calibrated) float module."""
        if cls.FIXED is not None:
            grid = cls.FIXED + (_lucidq.quint8,)
        else:
            where = label(mod)
            observer = getattr(mod, "activation_post_process", None)
            if observer is None:
                raise _lucidq.Error(f"{where}: has no output observer (run prepare before convert)")
            out = qparams_of(observer, where)
            grid = (out.scale[0], out.zero_point[0], out.qdtype)
        float_module = copy.deepcopy(mod)
        float_module._modules.pop("activation_post_process", None)
        float_module._forward_hooks.clear()
        float_module._forward_pre_hooks.clear()
        new = cls(float_module, *grid)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _float(self, v):
        return self.float_module(v)

    def forward(self, x):
        if isinstance(x, torch.Tensor) and not x.is_quantized:
            return self._float(x)
        q = codes_of(x, self)
        v = q.array.astype(np.float32)
        v -= np.float32(q.zero_point)
        v *= np.float32(q.scale)
        try:
            with torch.no_grad():
                y = self._float(torch.from_numpy(v))
        except RuntimeError as error:
            raise _lucidq.Error(f"{label(self)}: {error}") from None
        y = np.ascontiguousarray(y.numpy(), dtype=np.float32)
        storage = np.asarray(_lucidq.quantize(y, self._out).storage)
        out = storage.view(code_dtype(self.qdtype)).reshape(y.shape)
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    def extra_repr(self):
        return f"scale={self.scale:.6g}, zero_point={self.zero_point}, qdtype={self.qdtype.name}"


class LayerNorm(_FloatRule):
    """Quantized nn.LayerNorm (torch.ao.nn.quantized.LayerNorm)."""


class GroupNorm(_FloatRule):
    """Quantized nn.GroupNorm (torch.ao.nn.quantized.GroupNorm)."""


class _InstanceNorm(_FloatRule):
    SPATIAL_DIMS = 2

    def _float(self, v):
        if v.dim() != self.SPATIAL_DIMS + 2:
            raise _lucidq.Error(
                f"{label(self)}: input has shape {tuple(v.shape)} (expected "
                f"{self.SPATIAL_DIMS + 2}-D [B, C, ...])")
        m = self.float_module
        return F.instance_norm(v, None, None, m.weight, m.bias, True, 0.0, m.eps)


class InstanceNorm1d(_InstanceNorm):
    """Quantized nn.InstanceNorm1d (torch.ao.nn.quantized.InstanceNorm1d), [B, C, L] codes."""

    SPATIAL_DIMS = 1


class InstanceNorm2d(_InstanceNorm):
    """Quantized nn.InstanceNorm2d (torch.ao.nn.quantized.InstanceNorm2d), NCHW codes."""

    SPATIAL_DIMS = 2


class InstanceNorm3d(_InstanceNorm):
    """Quantized nn.InstanceNorm3d (torch.ao.nn.quantized.InstanceNorm3d), NCDHW codes."""

    SPATIAL_DIMS = 3


class Softmax(_FloatRule):
    """Quantized nn.Softmax (torch.ao.nn.quantized.Softmax) onto the fixed grid 1/256, 0."""

    FIXED = (1.0 / 256.0, 0)
    OBSERVES_OUTPUT = False
