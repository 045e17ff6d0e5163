"""QFunctional: the converted FloatFunctional (add, add_relu, mul, add_scalar, mul_scalar, cat) on 8-bit codes.

Arithmetic (torch.ao's rule, docs/numerics.md): each input is dequantized, the float result
is requantized onto the output grid. lucidq computes it exactly as written, in float64:
    out = clamp(round_half_even(f(s_a·(a − z_a), s_b·(b − z_b)) / s_out) + z_out)
An 8-bit code has 256 values, so a binary op on two grids is one lookup in a 256 × 256
table of output codes (built once per pair of input grids and cached), a scalar op or a
requantization one lookup in a 256-entry table: integer work per element, and bit for bit
the formula above. add / add_relu / mul / cat requantize onto the calibrated output grid
(the FloatFunctional's observer); add_scalar and mul_scalar choose their output grid from
the input's as torch does (they are not observed).
"""

import numpy as np
import torch.ao.nn.quantized as _torch_quantized
from torch import nn

from ... import _lucidq
from .._observed import check_observed, qparams_of
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from ._state import QuantizedState

__all__ = ["QFunctional", "FLOAT_FUNCTIONAL_TYPES"]

_BYTES = np.arange(256, dtype=np.uint8)


def _code_values(qdtype):
    """The 256 codes indexed by their byte (int8 codes for a signed grid)."""
    return _BYTES.view(np.int8) if qdtype.is_signed else _BYTES


def _requantize(values, scale, zero_point, qdtype, relu=False):
    """float64 values onto the grid (scale, zero_point, qdtype) as the module doc says."""
    codes = np.rint(values / scale) + zero_point
    low = zero_point if relu else qdtype.quant_min
    codes = np.clip(codes, max(low, qdtype.quant_min), qdtype.quant_max)
    return codes.astype(np.int8 if qdtype.is_signed else np.uint8)


def _dequantized(q):
    """The float64 values of every code of q's grid, indexed by the code's byte."""
    return float(q.scale) * (_code_values(q.qdtype).astype(np.float64) - q.zero_point)


class QFunctional(QuantizedState, nn.Module):
    """Quantized counterpart of torch.ao.nn.quantized.FloatFunctional: call its methods
    (add, add_relu, mul, add_scalar, mul_scalar, cat), not forward. scale / zero_point /
    qdtype: the calibrated output grid of add, add_relu, mul and cat; None when the
    FloatFunctional was never called during calibration (models that keep one per block and
    use it in some blocks only): then those methods raise lucidq.Error."""

    OBSERVES_OUTPUT = True

    def __init__(self, scale=1.0, zero_point=0, qdtype=_lucidq.quint8):
        super().__init__()
        self.scale = None if scale is None else float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype
        self._tables = {}

    @classmethod
    def from_float(cls, mod):
        where = label(mod)
        observer = getattr(mod, "activation_post_process", None)
        if observer is None or not hasattr(observer, "calculate_qparams"):
            raise _lucidq.Error(f"{where}: has no output observer (run prepare before convert)")
        try:
            check_observed(observer, where)
        except _lucidq.Error:
            new = cls(None)
        else:
            out = qparams_of(observer, where)
            new = cls(out.scale[0], out.zero_point[0], out.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        raise RuntimeError(
            f"{label(self)}: QFunctional is not called directly (use its methods: add, add_relu, "
            "mul, add_scalar, mul_scalar, cat)")

    # --- tables -----------------------------------------------------------------------------
    def _binary_table(self, op, a, b):
        key = (op, a.scale, a.zero_point, a.qdtype.name, b.scale, b.zero_point, b.qdtype.name)
        table = self._tables.get(key)
        if table is None:
            x, y = _dequantized(a)[:, None], _dequantized(b)[None, :]
            values = x * y if op == "mul" else x + y
            table = _requantize(values, self.scale, self.zero_point, self.qdtype,
                                relu=op == "add_relu").reshape(-1)
            self._tables[key] = table
        return table

    def _check_calibrated(self, op):
        if self.scale is None:
            raise _lucidq.Error(
                f"{label(self)}: {op} has no output grid: this FloatFunctional was never "
                "called during calibration (calibrate on inputs that reach it)")

    def _binary(self, op, x, y):
        self._check_calibrated(op)
        a, b = codes_of(x, self), codes_of(y, self)
        try:
            index = np.bitwise_or(np.left_shift(a.array.view(np.uint8), 8, dtype=np.uint16),
                                  b.array.view(np.uint8))
        except ValueError:
            raise _lucidq.Error(
                f"{label(self)}: {op} of shapes {tuple(x.shape)} and {tuple(y.shape)} (expected "
                "broadcastable shapes)") from None
        out = self._binary_table(op, a, b)[index]
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    @staticmethod
    def _requantized_codes(q, values, scale, zero_point, qdtype):
        """q's codes mapped through the table values[code] -> grid (scale, zero_point, qdtype)."""
        table = _requantize(values, scale, zero_point, qdtype)
        return table[q.array.view(np.uint8)]

    # --- torch's FloatFunctional methods -------------------------------------------------------
    def add(self, x, y):
        """x + y on the output grid."""
        return self._binary("add", x, y)

    def add_relu(self, x, y):
        """relu(x + y) on the output grid (the ReLU is the clamp from zero_point)."""
        return self._binary("add_relu", x, y)

    def mul(self, x, y):
        """x * y on the output grid."""
        return self._binary("mul", x, y)

    def add_scalar(self, x, c):
        """x + c. Output grid as torch's: with c_q = round(c / s), the same scale and zero
        point z − c_q (codes unchanged) when z − c_q is a code; otherwise the codes are
        requantized onto the grid that puts z − c_q at the nearer end of the range."""
        q = codes_of(x, self)
        lo, hi = q.qdtype.quant_min, q.qdtype.quant_max
        shifted = q.zero_point - int(np.rint(float(c) / q.scale))
        if lo <= shifted <= hi:
            return wrap_codes(q.array.copy(), q.scale, shifted, q.qdtype)
        if shifted < lo:
            scale, zero_point = (hi - shifted) / (hi - lo) * q.scale, lo
        else:
            scale, zero_point = (shifted - lo) / (hi - lo) * q.scale, hi
        out = self._requantized_codes(q, _dequantized(q) + float(c), scale, zero_point, q.qdtype)
        return wrap_codes(out, scale, zero_point, q.qdtype)

    def mul_scalar(self, x, c):
        """x * c. Output grid as torch's: scale |c|·s with the codes unchanged (c > 0) or
        mirrored, code' = qmax − (code − qmin) and zero point qmax − (z − qmin) (c < 0);
        c = 0 gives codes 0 on scale 1, zero point 0."""
        q = codes_of(x, self)
        lo, hi = q.qdtype.quant_min, q.qdtype.quant_max
        c = float(c)
        if c == 0.0:
            return wrap_codes(np.zeros_like(q.array), 1.0, 0, q.qdtype)
        if c > 0.0:
            return wrap_codes(q.array.copy(), c * q.scale, q.zero_point, q.qdtype)
        mirrored = (hi + lo - q.array.astype(np.int16)).astype(q.array.dtype)
        return wrap_codes(mirrored, -c * q.scale, hi - (q.zero_point - lo), q.qdtype)

    def cat(self, tensors, dim=0):
        """torch.cat of the inputs, each requantized onto the output grid (a copy when its
        grid is the output grid)."""
        self._check_calibrated("cat")
        parts = []
        for tensor in tensors:
            q = codes_of(tensor, self)
            if (q.scale, q.zero_point, q.qdtype.name) == (
                    self.scale, self.zero_point, self.qdtype.name):
                parts.append(q.array)
            else:
                parts.append(self._requantized_codes(q, _dequantized(q), self.scale,
                                                     self.zero_point, self.qdtype))
        try:
            out = np.concatenate(parts, axis=dim)
        except (ValueError, np.AxisError) as error:
            raise _lucidq.Error(f"{label(self)}: cat: {error}") from None
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    def extra_repr(self):
        if self.scale is None:
            return "not calibrated"
        return f"scale={self.scale:.6g}, zero_point={self.zero_point}, qdtype={self.qdtype.name}"


# torch's FloatFunctional classes (and FXFloatFunctional) that convert to QFunctional.
FLOAT_FUNCTIONAL_TYPES = tuple(getattr(_torch_quantized, name)
                               for name in ("FloatFunctional", "FXFloatFunctional")
                               if hasattr(_torch_quantized, name))
