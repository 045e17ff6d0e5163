"""Quantize (float -> quantized tensor, the converted QuantStub) and DeQuantize (quantized -> float)."""

import numpy as np
import torch
from torch import nn

from ... import _lucidq
from .._observed import output_qparams
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from ._io import float_array
from ._state import QuantizedState

__all__ = ["Quantize", "DeQuantize"]


class Quantize(QuantizedState, nn.Module):
    """Quantizes float input onto a fixed per-tensor grid with lucidq.quantize
    (round half to even of x * (1 / scale), as torch.quantize_per_tensor)."""

    OBSERVES_OUTPUT = True

    def __init__(self, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__()
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype
        self._qparams = _lucidq.QParams.per_tensor(self.scale, self.zero_point, qdtype)
        self._code_dtype = np.dtype(np.int8 if qdtype.is_signed else np.uint8)

    @classmethod
    def from_float(cls, mod):
        qparams = output_qparams(mod)
        new = cls(qparams.scale[0], qparams.zero_point[0], qparams.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            kind = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else type(x).__name__
            raise _lucidq.Error(
                f"{label(self)}: input is {kind} (expected a floating-point tensor)"
            )
        values = float_array(x)
        storage = np.asarray(_lucidq.quantize(values, self._qparams).storage)  # read-only view
        codes = storage.view(self._code_dtype).reshape(values.shape)
        return wrap_codes(codes, self.scale, self.zero_point, self.qdtype)

    def extra_repr(self):
        return f"scale={self.scale:.6g}, zero_point={self.zero_point}, qdtype={self.qdtype.name}"


class DeQuantize(QuantizedState, nn.Module):
    """Quantized tensor -> float32 scale * (code - zero_point), rounded once (bit for bit
    lucidq.dequantize: code - zero_point is exact in float32); float input passes through."""

    OBSERVES_OUTPUT = False

    @classmethod
    def from_float(cls, mod):
        new = cls()
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        if isinstance(x, torch.Tensor) and not x.is_quantized:
            return x
        q = codes_of(x, self)
        out = q.array.astype(np.float32)
        out -= np.float32(q.zero_point)
        out *= np.float32(q.scale)
        return torch.from_numpy(out)
