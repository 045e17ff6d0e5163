"""quantize / dequantize / fake_quantize / calculate_qparams in both spellings: lucidq's QParams forms and Lucid's.

Lucid's lucid.quantization spells the arithmetic primitives with loose
parameters; lucidq's extension takes a QParams. Both are accepted:

    quantize(x, qparams)                         -> QuantizedTensor   (lucidq)
    quantize(x, qscheme, qdtype, ch_axis=0, group_size=0) -> QuantizedTensor (lucidq)
    quantize(x, scale, zero_point, qdtype, ch_axis=None) -> integer codes (Lucid)
    dequantize(q: QuantizedTensor)               -> float32           (lucidq)
    dequantize(q_codes, scale, zero_point, ch_axis=None) -> float32   (Lucid)
    fake_quantize(x, qparams, return_mask=False) -> float32 (, mask)  (lucidq)
    fake_quantize(x, scale, zero_point, quant_min, quant_max, ch_axis=None) (Lucid)
    calculate_qparams(min_val, max_val, qscheme, qdtype, eps) -> QParams, which
        unpacks as `scale, zero_point`; torch tensor bounds give torch tensors
        (scale float32, zero_point int64) instead.

Lucid's forms take NumPy arrays or torch tensors (and numbers / lists) and give
the input's type back: codes in the qdtype's storage integer type (int8 for
qint8 and the unpacked qint4 / qint2 codes, uint8 for quint8 / quint4 / quint2,
int16, int32), reconstructions in float32. A (C,) scale / zero_point is per
channel along ch_axis (negative counts from the end); a single value is per
tensor. fake_quantize on a torch tensor is differentiable with the
straight-through estimator (gradient 1 where the code fell inside the grid
before clamping). Every computation runs in the C++ core; this file only
converts arguments.

>>> import lucidq as Q, numpy as np
>>> Q.quantize(np.array([0.1, -0.5, 9.0], np.float32), 0.02, 3, Q.quint8).tolist()
[8, 0, 255]
>>> scale, zp = Q.calculate_qparams(-1.0, 3.0, Q.per_tensor_affine, Q.quint8)
>>> round(scale, 6), zp
(0.015686, 64)
"""

import inspect

import numpy as np

from . import _lucidq
from ._interop import (
    float_tensor_to_numpy,
    integer_tensor_to_numpy,
    is_torch_tensor,
    numpy_to_torch_like,
)
from ._qscheme import QScheme

_NATIVE_QUANTIZE = _lucidq.quantize
_NATIVE_DEQUANTIZE = _lucidq.dequantize
_NATIVE_FAKE_QUANTIZE = _lucidq.fake_quantize
_NATIVE_CALCULATE_QPARAMS = _lucidq.calculate_qparams

# Integer codes of each signedness and width, NumPy side (codes <= 8 bits stay unpacked).
_CODE_DTYPES = {
    (True, 8): np.int8,
    (False, 8): np.uint8,
    (True, 16): np.int16,
    (False, 16): np.uint16,
    (True, 32): np.int32,
}
# The QDtype that reads codes of each NumPy integer dtype.
_QDTYPE_OF_CODES = {
    np.dtype(np.int8): _lucidq.qint8,
    np.dtype(np.uint8): _lucidq.quint8,
    np.dtype(np.int16): _lucidq.qint16,
    np.dtype(np.uint16): _lucidq.QDtype.full_range(16, False),
    np.dtype(np.int32): _lucidq.qint32,
}


def _is_params_form(first, keywords, names):
    """True when the call uses lucidq's own form (QParams / QScheme / a scheme name)."""
    if any(name in keywords for name in names):
        return True
    return isinstance(first, (_lucidq.QParams, QScheme, str))


def _call_loose_form(name, function, native, x, args, kwargs):
    """function(x, *args, **kwargs) when they fit Lucid's form; else the extension's TypeError.

    Arguments that fit neither form keep pybind11's TypeError listing the
    extension's signatures, with Lucid's form added to the list.
    """
    try:
        inspect.signature(function).bind(x, *args, **kwargs)
    except TypeError:
        try:
            native(x, *args, **kwargs)
        except TypeError as error:
            lucid = f"{name}{inspect.signature(function)}"
            raise TypeError(f"{error}\n    or Lucid's lucid.quantization form: {lucid}") from None
        raise
    return function(x, *args, **kwargs)


def _float_input(x, what):
    """(array, input_dtype) for the extension; torch tensors are viewed, not copied."""
    if is_torch_tensor(x):
        return float_tensor_to_numpy(x, what)
    return x, None


def _values(v, what):
    """A 1-D NumPy view of a number / sequence / array / torch tensor parameter."""
    if is_torch_tensor(v):
        v = v.detach().cpu().numpy()
    array = np.asarray(v)
    if array.ndim > 1:
        raise ValueError(f"{what}: shape {array.shape} (expected a number or a 1-D sequence)")
    return array.reshape(-1)


def _zero_points(zero_point, what):
    """int64 zero points; float values must be whole numbers (Lucid stores them as floats)."""
    z = _values(zero_point, what)
    if z.dtype.kind == "f":
        if not np.all(np.isfinite(z)) or not np.all(z == np.round(z)):
            raise ValueError(f"{what}: {z.tolist()} (expected whole numbers)")
    elif z.dtype.kind not in "iub":
        raise ValueError(f"{what}: dtype {z.dtype} (expected integers)")
    return z.astype(np.int64)


def _normalised_axis(ch_axis, ndim, what):
    if not -ndim <= ch_axis < max(ndim, 1):
        raise ValueError(f"{what}: ch_axis = {ch_axis} for an input of rank {ndim}")
    return ch_axis % max(ndim, 1)


def _qparams(scale, zero_point, qdtype, ch_axis, ndim, what):
    """QParams for Lucid's loose parameters: per tensor, or per channel when ch_axis is given."""
    s = _values(scale, f"{what}: scale").astype(np.float32)
    z = _zero_points(zero_point, f"{what}: zero_point")
    if ch_axis is None:
        if s.size != 1 or z.size != 1:
            raise ValueError(
                f"{what}: scale has {s.size} and zero_point {z.size} values without ch_axis "
                "(expected one each per tensor, or pass ch_axis for per-channel parameters)"
            )
        return _lucidq.QParams.per_tensor(float(s[0]), int(z[0]), qdtype)
    if z.size == 1 and s.size > 1:
        z = np.repeat(z, s.size)
    axis = _normalised_axis(ch_axis, ndim, what)
    return _lucidq.QParams.per_channel(s, z, axis, qdtype, QScheme.PER_CHANNEL_AFFINE)


def grid_for_range(quant_min, quant_max):
    """The QDtype whose codes are exactly [quant_min, quant_max] (smallest storage that fits)."""
    quant_min, quant_max = int(quant_min), int(quant_max)
    if quant_min >= quant_max:
        raise ValueError(
            f"quant_min = {quant_min}, quant_max = {quant_max} (expected quant_min < quant_max)"
        )
    for is_signed, bits in ((False, 8), (True, 8), (True, 16), (False, 16), (True, 32)):
        full = _lucidq.QDtype.full_range(bits, is_signed)
        if full.quant_min <= quant_min and quant_max <= full.quant_max:
            if (quant_min, quant_max) == (full.quant_min, full.quant_max):
                return full
            return full.with_range(quant_min, quant_max)
    raise ValueError(
        f"quant_min / quant_max = [{quant_min}, {quant_max}] (expected a range inside int32)"
    )


def code_dtype(qdtype):
    """The NumPy integer type of qdtype's unpacked codes (int8 for qint4, uint8 for quint8...)."""
    width = 8 if qdtype.bits <= 8 else qdtype.bits
    return _CODE_DTYPES[(qdtype.is_signed, width)]


def quantize(x, *args, **kwargs):
    """Integer codes of x; see the module docstring for the two forms."""
    first = args[0] if args else None
    if _is_params_form(first, kwargs, ("qparams", "qscheme")):
        array, input_dtype = _float_input(x, "quantize")
        if input_dtype is not None:
            kwargs = dict(kwargs, input_dtype=input_dtype)
        return _NATIVE_QUANTIZE(array, *args, **kwargs)
    return _call_loose_form("quantize", _quantize_codes, _NATIVE_QUANTIZE, x, args, kwargs)


def _quantize_codes(x, scale, zero_point, qdtype, ch_axis=None):
    array, input_dtype = _float_input(x, "quantize")
    qparams = _qparams(scale, zero_point, qdtype, ch_axis, np.ndim(array), "quantize")
    codes = _NATIVE_QUANTIZE(array, qparams, input_dtype=input_dtype).int_repr()
    codes = codes.astype(code_dtype(qparams.qdtype), copy=False)
    if is_torch_tensor(x):
        if codes.dtype == np.uint16:  # torch 1.13 has no uint16
            codes = codes.astype(np.int32)
        return numpy_to_torch_like(codes, x)
    return codes


def dequantize(q, *args, **kwargs):
    """float32 reconstruction; see the module docstring for the two forms."""
    if isinstance(q, _lucidq.QuantizedTensor):
        return _NATIVE_DEQUANTIZE(q, *args, **kwargs)
    return _call_loose_form("dequantize", _dequantize_codes, _NATIVE_DEQUANTIZE, q, args, kwargs)


def _dequantize_codes(q, scale, zero_point, ch_axis=None):
    codes = integer_tensor_to_numpy(q, "dequantize: q") if is_torch_tensor(q) else np.asarray(q)
    if codes.dtype.kind not in "iu":
        raise ValueError(
            f"dequantize: q has dtype {codes.dtype} (expected integer codes, e.g. the int8 / "
            "uint8 array quantize returned)"
        )
    qdtype = _QDTYPE_OF_CODES.get(codes.dtype)
    if qdtype is None:  # int64 / uint32 / ...: read as int32 when the values fit
        if codes.size and (codes.min() < -(2**31) or codes.max() > 2**31 - 1):
            raise ValueError(f"dequantize: q has dtype {codes.dtype} with values outside int32")
        codes, qdtype = codes.astype(np.int32), _lucidq.qint32
    qparams = _qparams(scale, zero_point, qdtype, ch_axis, codes.ndim, "dequantize")
    tensor = _lucidq.QuantizedTensor(
        codes.shape, qparams, _lucidq.pack_codes(codes.astype(np.int32, copy=False), qdtype)
    )
    out = _NATIVE_DEQUANTIZE(tensor)
    return numpy_to_torch_like(out, q) if is_torch_tensor(q) else out


def fake_quantize(x, *args, **kwargs):
    """dequantize(quantize(x)) in one pass; see the module docstring for the two forms."""
    first = args[0] if args else None
    if _is_params_form(first, kwargs, ("qparams",)):
        if not is_torch_tensor(x):
            return _NATIVE_FAKE_QUANTIZE(x, *args, **kwargs)
        return_mask = kwargs.get("return_mask", args[1] if len(args) > 1 else False)
        if return_mask:  # (output, mask) as torch tensors
            array, input_dtype = float_tensor_to_numpy(x, "fake_quantize")
            result = _NATIVE_FAKE_QUANTIZE(array, *args, input_dtype=input_dtype, **kwargs)
            return tuple(numpy_to_torch_like(part, x) for part in result)
        qparams = kwargs["qparams"] if "qparams" in kwargs else args[0]
        return _torch_fake_quantize(x, qparams)  # differentiable (straight-through)
    return _call_loose_form(
        "fake_quantize", _fake_quantize_range, _NATIVE_FAKE_QUANTIZE, x, args, kwargs
    )


def _fake_quantize_range(x, scale, zero_point, quant_min, quant_max, ch_axis=None):
    grid = grid_for_range(quant_min, quant_max)
    ndim = x.dim() if is_torch_tensor(x) else np.ndim(x)
    qparams = _qparams(scale, zero_point, grid, ch_axis, ndim, "fake_quantize")
    if is_torch_tensor(x):
        return _torch_fake_quantize(x, qparams)
    return _NATIVE_FAKE_QUANTIZE(x, qparams)


def _torch_fake_quantize(x, qparams):
    from .workflow._autograd import fake_quantize_ste

    return fake_quantize_ste(x, qparams)


def calculate_qparams(min_val, max_val, qscheme, qdtype, eps=None, **kwargs):
    """QParams from an observed range (unpacks as scale, zero_point); torch bounds give tensors.

    eps=None is the extension's default, float32's machine epsilon (PyTorch's).
    """
    if eps is not None:
        kwargs["eps"] = eps
    if not (is_torch_tensor(min_val) or is_torch_tensor(max_val)):
        return _NATIVE_CALCULATE_QPARAMS(min_val, max_val, qscheme, qdtype, **kwargs)
    import torch

    lo = min_val.detach().cpu().numpy() if is_torch_tensor(min_val) else np.asarray(min_val)
    hi = max_val.detach().cpu().numpy() if is_torch_tensor(max_val) else np.asarray(max_val)
    qparams = _NATIVE_CALCULATE_QPARAMS(lo, hi, qscheme, qdtype, **kwargs)
    like = min_val if is_torch_tensor(min_val) else max_val
    shape = tuple(np.shape(lo))
    scale = torch.from_numpy(qparams.scale.astype(np.float32)).reshape(shape)
    zero_point = torch.from_numpy(qparams.zero_point.astype(np.int64)).reshape(shape)
    return scale.to(like.device), zero_point.to(like.device)


def _append_native_doc(function, native):
    """function's docstring followed by the extension's (its signatures and examples)."""
    function.__doc__ = f"{function.__doc__}\n\nlucidq's forms (the extension):\n\n{native.__doc__}"


_append_native_doc(quantize, _NATIVE_QUANTIZE)
_append_native_doc(dequantize, _NATIVE_DEQUANTIZE)
_append_native_doc(fake_quantize, _NATIVE_FAKE_QUANTIZE)
_append_native_doc(calculate_qparams, _NATIVE_CALCULATE_QPARAMS)
