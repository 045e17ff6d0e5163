"""Quantized activations are torch's own per-tensor quantized tensors (torch.quint8 / torch.qint8).

Why torch's tensors: every torch op a model applies between two quantized modules (view,
reshape, flatten, permute, indexing, cat, max / average / adaptive pooling, ReLU, interpolate,
mean, ...) already has a quantized implementation in torch, with torch.ao's arithmetic, so
models written for torch.ao run unchanged, and torch.ao and lucidq modules can be mixed.
lucidq's kernels still read and write the codes in place: codes_of views a tensor's memory as
a NumPy array, and wrap_codes builds a quantized tensor over the NumPy array a kernel
returned (torch's quantized tensors keep the same byte layout as uint8 / int8 ones), so
nothing is copied between two lucidq modules.
"""

import collections

import numpy as np
import torch

from .. import _lucidq
from ._paths import label

__all__ = ["QuantizedCodes", "codes_of", "wrap_codes", "is_quantized"]

_TORCH_QDTYPES = {torch.quint8: "quint8", torch.qint8: "qint8"}
_LUCIDQ_TO_TORCH = {name: dtype for dtype, name in _TORCH_QDTYPES.items()}
_TYPESTR = {torch.quint8: "|u1", torch.qint8: "|i1"}  # NumPy's uint8 / int8
_QDTYPES = {dtype: _lucidq.QDtype(name) for dtype, name in _TORCH_QDTYPES.items()}

QuantizedCodes = collections.namedtuple("QuantizedCodes", "array scale zero_point qdtype")
QuantizedCodes.__doc__ = """A quantized activation's codes (a C-contiguous NumPy array sharing
the tensor's memory) and its grid: value = scale * (code - zero_point)."""


class _Memory:
    """Exposes C-contiguous memory to NumPy as a writable array (__array_interface__) and
    keeps its owner alive."""

    __slots__ = ("owner", "__array_interface__")

    def __init__(self, owner, address, shape, typestr):
        self.owner = owner
        self.__array_interface__ = {
            "data": (address, False), "shape": tuple(shape), "typestr": typestr, "version": 3}


def _torch_dtype(qdtype):
    dtype = _LUCIDQ_TO_TORCH.get(qdtype.name)
    if dtype is None:
        raise _lucidq.Error(
            f"quantized activations: grid {qdtype.name} (expected quint8 or qint8, the grids of "
            "torch's quantized tensors)")
    return dtype


def is_quantized(x):
    """Whether x is a quantized activation lucidq's modules take (a quantized torch tensor)."""
    return isinstance(x, torch.Tensor) and x.is_quantized


def codes_of(x, module):
    """The codes and grid of activation x, a per-tensor quint8 / qint8 torch tensor, as
    QuantizedCodes; the array views x's memory (x is made contiguous first when it is not).
    Anything else raises lucidq.Error naming the module (its path)."""
    qdtype = _QDTYPES.get(x.dtype) if isinstance(x, torch.Tensor) else None
    if qdtype is None or x.qscheme() is not torch.per_tensor_affine or x.device.type != "cpu":
        _refuse(x, module)
    scale, zero_point = x.q_scale(), x.q_zero_point()
    kept = getattr(x, "_lucidq_codes", None)  # the array wrap_codes built x over
    if kept is not None and kept[1] == x.data_ptr() and kept[0].shape == x.shape and (
            x.is_contiguous()):
        return QuantizedCodes(kept[0], scale, zero_point, qdtype)
    x = x.contiguous()
    array = np.asarray(_Memory(x, x.data_ptr(), x.shape, _TYPESTR[x.dtype]))
    return QuantizedCodes(array, scale, zero_point, qdtype)


def _refuse(x, module):
    where = label(module)
    if not is_quantized(x):
        kind = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else f"a {type(x).__name__}"
        raise _lucidq.Error(
            f"{where}: input is {kind} (expected quantized activations, a quantized torch "
            "tensor: put a QuantStub before this module, or leave it float with qconfig None)"
        )
    if x.dtype not in _QDTYPES:
        raise _lucidq.Error(f"{where}: input is a {x.dtype} tensor (expected quint8 or qint8)")
    if x.device.type != "cpu":
        raise _lucidq.Error(f"{where}: input is on {x.device} (expected the CPU)")
    raise _lucidq.Error(f"{where}: input is quantized {x.qscheme()} (expected per-tensor affine)")


def wrap_codes(codes, scale, zero_point, qdtype):
    """A per-tensor quantized torch tensor over the C-contiguous NumPy array `codes` (uint8
    for quint8, int8 for qint8; not checked): value = scale * (code - zero_point). Shares the
    array's memory and keeps it alive; codes_of(result) returns the same array."""
    dtype = _torch_dtype(qdtype)
    if not codes.flags.writeable:  # a kernel's result nothing else writes; torch wants writable
        codes = np.asarray(_Memory(codes, codes.ctypes.data, codes.shape, codes.dtype.str))
    carrier = torch.from_numpy(codes)
    out = torch._empty_affine_quantized([0], scale=float(scale), zero_point=int(zero_point),
                                        dtype=dtype)
    out.set_(carrier.storage().untyped(), 0, carrier.shape, carrier.stride())
    out._lucidq_codes = (codes, out.data_ptr())
    return out
