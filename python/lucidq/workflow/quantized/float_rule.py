"""LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, Softmax: dequantize, float32 op, requantize.

These ops reduce over many elements (a mean, a variance, a sum of exponentials), so no
per-element table or integer kernel gives them exactly; lucidq applies torch.ao's rule:
    v = float32(code − z_in) · float32(s_in)          (lucidq's DeQuantize, one rounding)
    y = the float op on v in float32 (torch.nn.functional with the float module's arguments
        and parameters; InstanceNorm always normalizes with the input's own statistics, as
        torch.ao's)
    out = clamp(round_half_even(y · (1 / s_out)) + z_out)   (lucidq.quantize)
The output grid is the calibrated observer's; Softmax's is fixed as torch.ao's default
mapping fixes it (quint8, scale 1/256, zero point 0: [0, 1) in steps of 1/256). Float input
(a part of the model left float, e.g. a Softmax after the DeQuantStub) runs the float op.
"""

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from ... import _lucidq
from .._observed import output_qparams
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from ._requant import code_dtype
from ._state import QuantizedState

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "Softmax"]


class _FloatRule(QuantizedState, nn.Module):
    """Dequantize, run _float (float32), quantize onto the output grid. args: the float
    module's arguments named in ARGS; weight / bias: None or its float32 parameters."""

    ARGS = ()
    FIXED = None  # (scale, zero_point) of a fixed quint8 output grid, or None: calibrated
    OBSERVES_OUTPUT = True

    def __init__(self, args, weight, bias, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__()
        self.args = dict(args)
        self.weight = None if weight is None else np.asarray(weight, np.float32)
        self.bias = None if bias is None else np.asarray(bias, np.float32)
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
            out = output_qparams(mod)
            grid = (out.scale[0], out.zero_point[0], out.qdtype)
        params = [getattr(mod, name, None) for name in ("weight", "bias")]
        params = [None if p is None else p.detach().to("cpu", torch.float32).numpy().copy()
                  for p in params]
        new = cls({name: getattr(mod, name) for name in cls.ARGS}, *params, *grid)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _params(self):
        return tuple(None if p is None else torch.from_numpy(p) for p in (self.weight, self.bias))

    def _float(self, v):
        raise NotImplementedError

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
        args = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return (f"{args}, scale={self.scale:.6g}, zero_point={self.zero_point}, "
                f"qdtype={self.qdtype.name}")


class LayerNorm(_FloatRule):
    """Quantized nn.LayerNorm (torch.ao.nn.quantized.LayerNorm)."""

    ARGS = ("normalized_shape", "eps")

    def _float(self, v):
        return F.layer_norm(v, tuple(self.args["normalized_shape"]), *self._params(),
                            self.args["eps"])


class GroupNorm(_FloatRule):
    """Quantized nn.GroupNorm (torch.ao.nn.quantized.GroupNorm)."""

    ARGS = ("num_groups", "eps")

    def _float(self, v):
        return F.group_norm(v, self.args["num_groups"], *self._params(), self.args["eps"])


class _InstanceNorm(_FloatRule):
    ARGS = ("eps",)
    SPATIAL_DIMS = 2

    def _float(self, v):
        if v.dim() != self.SPATIAL_DIMS + 2:
            raise _lucidq.Error(
                f"{label(self)}: input has shape {tuple(v.shape)} (expected "
                f"{self.SPATIAL_DIMS + 2}-D [B, C, ...])")
        weight, bias = self._params()
        return F.instance_norm(v, None, None, weight, bias, True, 0.0, self.args["eps"])


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

    ARGS = ("dim",)
    FIXED = (1.0 / 256.0, 0)
    OBSERVES_OUTPUT = False

    def _float(self, v):
        return F.softmax(v, self.args["dim"])
