"""QTensor: the 8-bit activation codes one quantized module hands to the next (codes + scale + zp).

Why not torch's own quantized tensors: building one from codes
(torch._make_per_tensor_quantized_tensor) is a private API and copies, and reading the
codes back (int_repr) copies again. A QTensor holds a plain torch.uint8 / torch.int8
tensor, so the codes go to lucidq's kernels and back through NumPy without a copy
(torch.from_numpy / Tensor.numpy share memory). Its method names are torch's
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

    codes: a torch.uint8 (quint8) or torch.int8 (qint8) tensor; scale: float;
    zero_point: int; qdtype: the lucidq QDtype of the grid (quint8 or qint8 and their
    narrower ranges).
    """

    __slots__ = ("codes", "scale", "zero_point", "qdtype")

    def __init__(self, codes, scale, zero_point, qdtype):
        expected = torch.int8 if qdtype.is_signed else torch.uint8
        if codes.dtype != expected:
            raise _lucidq.Error(
                f"QTensor: codes have dtype {codes.dtype} (expected {expected} for {qdtype.name})"
            )
        self.codes = codes
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype

    @classmethod
    def from_numpy(cls, codes, scale, zero_point, qdtype):
        """Wraps NumPy codes without copying."""
        return cls(torch.from_numpy(codes), scale, zero_point, qdtype)

    def numpy_codes(self):
        """The codes as a C-contiguous NumPy array (shares memory when already contiguous)."""
        return np.ascontiguousarray(self.codes.numpy())

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
        two float32 numbers is rounded once), computed with two torch ops because building
        a lucidq QuantizedTensor per call costs more than the arithmetic on small batches."""
        return self.codes.to(torch.float32).sub_(self.zero_point).mul_(self.scale)

    @property
    def shape(self):
        return self.codes.shape

    def size(self, dim=None):
        return self.codes.size() if dim is None else self.codes.size(dim)

    def dim(self):
        return self.codes.dim()

    def _same_grid(self, codes):
        return QTensor(codes, self.scale, self.zero_point, self.qdtype)

    def reshape(self, *shape):
        return self._same_grid(self.codes.reshape(*shape))

    def view(self, *shape):
        return self._same_grid(self.codes.view(*shape))

    def flatten(self, start_dim=0, end_dim=-1):
        return self._same_grid(self.codes.flatten(start_dim, end_dim))

    def __repr__(self):
        return (
            f"QTensor(shape={tuple(self.codes.shape)}, scale={self.scale:.6g}, "
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
