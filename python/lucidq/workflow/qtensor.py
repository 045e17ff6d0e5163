"""QTensor: the 8-bit activation codes one quantized module hands to the next (codes + scale + zp).

Why not torch's own quantized tensors: building one from codes
(torch._make_per_tensor_quantized_tensor) is a private API and copies, and reading the
codes back (int_repr) copies again. A QTensor holds the codes as a plain uint8 / int8
NumPy array, which lucidq's kernels read and write directly; int_repr() is a torch tensor
over the same memory (torch.from_numpy), so nothing is copied between modules. Its method names are torch's
(int_repr, q_scale, q_zero_point, dequantize), so code written against torch's
quantized tensors reads the same; torch quantized tensors are accepted as inputs too.
"""

import numpy as np
import torch

from .. import _lucidq
from ._paths import label

__all__ = ["QTensor", "as_qtensor"]


class QTensor:
    """Per-tensor quantized activations: value = scale * (codes - zero_point).

    codes: a torch.uint8 (quint8) or torch.int8 (qint8) CPU tensor, or a NumPy array of that
    dtype; scale: float; zero_point: int; qdtype: the lucidq QDtype of the grid (quint8 or
    qint8). The codes are kept as a C-contiguous NumPy array (what lucidq's kernels read);
    `codes` / int_repr() is a torch tensor sharing its memory.
    """

    __slots__ = ("_array", "scale", "zero_point", "qdtype")

    def __init__(self, codes, scale, zero_point, qdtype):
        array = codes.detach().cpu().numpy() if isinstance(codes, torch.Tensor) else codes
        array = np.ascontiguousarray(array)
        expected = np.dtype(np.int8 if qdtype.is_signed else np.uint8)
        if array.dtype != expected:
            raise _lucidq.Error(
                f"QTensor: codes have dtype {array.dtype} (expected {expected} for {qdtype.name})"
            )
        self._array = array
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype

    @classmethod
    def from_numpy(cls, codes, scale, zero_point, qdtype):
        """Wraps the C-contiguous codes a lucidq kernel returned (of qdtype's code dtype: not
        checked) without copying."""
        q = cls.__new__(cls)
        q._array, q.scale, q.zero_point, q.qdtype = codes, scale, zero_point, qdtype
        return q

    def numpy_codes(self):
        """The codes as a C-contiguous NumPy array (no copy)."""
        return self._array

    @property
    def codes(self):
        """The codes as a torch tensor sharing the array's memory (a copy when the array is
        read-only, e.g. the storage of a lucidq QuantizedTensor: torch tensors are writable)."""
        array = self._array
        return torch.from_numpy(array if array.flags.writeable else array.copy())

    # torch's quantized-tensor vocabulary
    def int_repr(self):
        return self.codes

    def q_scale(self):
        return self.scale

    def q_zero_point(self):
        return self.zero_point

    def dequantize(self):
        """float32 tensor scale * (codes - zero_point), rounded once: bit for bit
        lucidq.dequantize (code - zero_point is exact in float32 and the float32 product of
        two float32 numbers is rounded once), computed with NumPy because building a lucidq
        QuantizedTensor per call costs more than the arithmetic on small batches."""
        out = self._array.astype(np.float32)
        out -= np.float32(self.zero_point)
        out *= np.float32(self.scale)
        return torch.from_numpy(out)

    @property
    def shape(self):
        return torch.Size(self._array.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return self._array.ndim

    def _same_grid(self, array):
        return QTensor(array, self.scale, self.zero_point, self.qdtype)

    def reshape(self, *shape):
        return self._same_grid(self._array.reshape(*shape))

    def view(self, *shape):
        return self._same_grid(self.codes.view(*shape).numpy())

    def flatten(self, start_dim=0, end_dim=-1):
        return self._same_grid(self.codes.flatten(start_dim, end_dim).numpy())

    def __repr__(self):
        return (
            f"QTensor(shape={tuple(self._array.shape)}, scale={self.scale:.6g}, "
            f"zero_point={self.zero_point}, qdtype={self.qdtype.name})"
        )


_TORCH_QDTYPES = {torch.quint8: "quint8", torch.qint8: "qint8"}


def as_qtensor(x, module):
    """x as a QTensor: a QTensor as it is, a per-tensor torch quantized tensor by its codes.
    Anything else raises lucidq.Error naming the module (its path)."""
    if isinstance(x, QTensor):
        return x
    where = label(module)
    if isinstance(x, torch.Tensor) and x.is_quantized and x.dtype in _TORCH_QDTYPES:
        if x.qscheme() != torch.per_tensor_affine:
            raise _lucidq.Error(f"{where}: input is quantized {x.qscheme()} (expected per-tensor)")
        qdtype = _lucidq.QDtype(_TORCH_QDTYPES[x.dtype])
        return QTensor(x.int_repr(), x.q_scale(), x.q_zero_point(), qdtype)
    kind = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else f"a {type(x).__name__}"
    raise _lucidq.Error(
        f"{where}: input is {kind} (expected quantized activations, a QTensor: put a QuantStub "
        "before this module, or leave it float with qconfig None)"
    )
