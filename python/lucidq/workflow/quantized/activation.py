"""Activations on quantized codes: ReLU / ReLU6 clamp the codes; the others map each code onto their output grid.

An elementwise f on 8-bit codes has only 256 inputs, so Sigmoid, Tanh, Hardswish, ... are one
table lookup per element: table[c] = quantize_out(f(dequantize_in(c))), built with lucidq's
quantize / dequantize once per input grid. Output grids: torch's fixed ones for the
bounded functions (Sigmoid and Hardsigmoid: scale 1/256, zero point 0; Tanh: 2/256, 128,
quint8), the calibrated observer's for the others. Float input (a part of the model left
float) runs the float function.
"""

import copy

import numpy as np
import torch
from torch import nn

from ... import _lucidq
from .._observed import output_qparams
from ..qtensor import codes_of, wrap_codes
from ._io import float_array
from ._state import QuantizedState

__all__ = [
    "ReLU", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "Hardswish", "ELU", "LeakyReLU", "GELU",
    "SiLU",
]


class ReLU(QuantizedState, nn.Module):
    """max(code, zero_point): the output keeps the input's grid (as torch's ReLU on quint8)."""

    OBSERVES_OUTPUT = False

    def __init__(self, float_module=None):
        super().__init__()
        self.float_module = float_module if float_module is not None else nn.ReLU()

    @classmethod
    def from_float(cls, mod):
        new = cls(copy.deepcopy(mod))
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _bounds(self, q):
        return q.zero_point, q.qdtype.quant_max

    def forward(self, x):
        if isinstance(x, torch.Tensor) and not x.is_quantized:
            return self.float_module(x)
        q = codes_of(x, self)
        lo, hi = self._bounds(q)
        codes = q.array
        out = np.clip(codes, codes.dtype.type(lo), codes.dtype.type(hi))
        return wrap_codes(out, q.scale, q.zero_point, q.qdtype)


class ReLU6(ReLU):
    """Codes clamped to [zero_point, code of 6.0] on the input's grid."""

    def _bounds(self, q):
        six = q.zero_point + int(np.rint(np.float32(6.0) * (np.float32(1.0) / np.float32(q.scale))))
        return q.zero_point, min(q.qdtype.quant_max, six)


class _Lookup(QuantizedState, nn.Module):
    """f applied through a 256-entry table from the input grid to the output grid."""

    FIXED = None  # (scale, zero_point) of a fixed quint8 output grid, or None: calibrated
    OBSERVES_OUTPUT = True

    def __init__(self, float_module, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__()
        self.float_module = float_module
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype
        self._out = _lucidq.QParams.per_tensor(self.scale, self.zero_point, qdtype)
        self._tables = {}

    @classmethod
    def from_float(cls, mod):
        if cls.FIXED is not None:
            new = cls(copy.deepcopy(mod), *cls.FIXED)
        else:
            out = output_qparams(mod)
            new = cls(copy.deepcopy(mod), out.scale[0], out.zero_point[0], out.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _table(self, q):
        key = (q.scale, q.zero_point, q.qdtype.name)
        table = self._tables.get(key)
        if table is None:
            byte = np.arange(256, dtype=np.uint8)  # indexed by the code's byte
            codes = byte.view(np.int8) if q.qdtype.is_signed else byte
            codes = np.clip(codes, q.qdtype.quant_min, q.qdtype.quant_max).astype(codes.dtype)
            grid = _lucidq.QParams.per_tensor(q.scale, q.zero_point, q.qdtype)
            values = _lucidq.dequantize(_lucidq.QuantizedTensor((256,), grid, codes.view(np.uint8)))
            with torch.no_grad():
                y = float_array(self.float_module(torch.from_numpy(values)))
            out = np.asarray(_lucidq.quantize(y, self._out).storage)
            table = out.view(np.int8 if self.qdtype.is_signed else np.uint8).copy()
            self._tables[key] = table
        return table

    def forward(self, x):
        if isinstance(x, torch.Tensor) and not x.is_quantized:
            return self.float_module(x)
        q = codes_of(x, self)
        out = self._table(q)[q.array.view(np.uint8)]
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    def extra_repr(self):
        return f"scale={self.scale:.6g}, zero_point={self.zero_point}, qdtype={self.qdtype.name}"


class Sigmoid(_Lookup):
    OBSERVES_OUTPUT = False
    FIXED = (1.0 / 256.0, 0)


class Hardsigmoid(_Lookup):
    OBSERVES_OUTPUT = False
    FIXED = (1.0 / 256.0, 0)


class Tanh(_Lookup):
    OBSERVES_OUTPUT = False
    FIXED = (2.0 / 256.0, 128)


class Hardswish(_Lookup):
    pass


class ELU(_Lookup):
    pass


class LeakyReLU(_Lookup):
    pass


class GELU(_Lookup):
    pass


class SiLU(_Lookup):
    pass

