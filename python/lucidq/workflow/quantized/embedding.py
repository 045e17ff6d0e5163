"""Quantized Embedding and EmbeddingBag: row-wise int8 or int4 tables, float outputs.

The weight is quantized per row as torch's prepack does (scale = (max − min) / (2^bits − 1),
bias = min, codes in torch's prepacked layout; 4-bit rows are torch's quint4x2), in
lucidq.QuantizedEmbeddingTable; a lookup decodes only the rows it reads (in C++). The
qconfig's weight observer chooses the width: dtype quint8 → 8 bits, quint4x2 → 4 bits
(torch's float_qparams_weight_only_qconfig and its 4-bit variant).
"""

import numpy as np
import torch
from torch import nn

from ... import _lucidq
from .._paths import label
from ._io import float_array
from ._state import QuantizedState

__all__ = ["Embedding", "EmbeddingBag"]


def _bits_of(mod, where):
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise _lucidq.Error(f"{where}: has no qconfig")
    dtype = getattr(qconfig.weight(), "dtype", None)
    name = str(dtype).replace("torch.", "")
    if name.startswith("quint8"):
        return 8
    if name.startswith("quint4x2"):
        return 4
    raise _lucidq.Error(
        f"{where}: the weight observer's dtype is {name} (expected quint8 or quint4x2 with "
        "per-row float qparams, e.g. torch.ao.quantization.float_qparams_weight_only_qconfig)"
    )


def _indices(x, where):
    if not isinstance(x, torch.Tensor) or x.is_floating_point():
        raise _lucidq.Error(f"{where}: indices must be an integer tensor")
    return x.detach().cpu().numpy().astype(np.int64, copy=False)


class Embedding(QuantizedState, nn.Module):
    """Quantized nn.Embedding (torch.ao.nn.quantized.Embedding): indices in, float rows out."""

    OBSERVES_OUTPUT = False  # float rows out
    WEIGHT_ONLY = True  # quantized from the weight alone (prepare counts it as quantizable)

    def __init__(self, table, padding_idx=None):
        super().__init__()
        self.table = table
        self.padding_idx = padding_idx

    @property
    def num_embeddings(self):
        return self.table.rows

    @property
    def embedding_dim(self):
        return self.table.dim

    @classmethod
    def _table(cls, mod):
        bits = _bits_of(mod, label(mod))
        return _lucidq.QuantizedEmbeddingTable.quantize(float_array(mod.weight), bits=bits)

    @classmethod
    def from_float(cls, mod):
        new = cls(cls._table(mod), mod.padding_idx)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, indices):
        try:
            return torch.from_numpy(self.table.lookup(_indices(indices, label(self))))
        except _lucidq.Error as error:
            raise _lucidq.Error(f"{label(self)}: {error}") from None

    def extra_repr(self):
        return (f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
                f"bits={self.table.bits}")


class EmbeddingBag(Embedding):
    """Quantized nn.EmbeddingBag: sum / mean / max bags, offsets, per_sample_weights,
    include_last_offset and padding_idx as torch.nn.EmbeddingBag."""

    def __init__(self, table, mode="sum", include_last_offset=False, padding_idx=None):
        super().__init__(table, padding_idx)
        self.mode = mode
        self.include_last_offset = include_last_offset

    @classmethod
    def from_float(cls, mod):
        new = cls(cls._table(mod), mod.mode, mod.include_last_offset, mod.padding_idx)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, indices, offsets=None, per_sample_weights=None):
        where = label(self)
        idx = _indices(indices, where)
        off = None if offsets is None else _indices(offsets, where)
        weights = None if per_sample_weights is None else float_array(per_sample_weights)
        try:
            out = self.table.bag(idx, off, self.mode, weights, self.include_last_offset,
                                 -1 if self.padding_idx is None else self.padding_idx)
        except _lucidq.Error as error:
            raise _lucidq.Error(f"{where}: {error}") from None
        return torch.from_numpy(out)

    def extra_repr(self):
        return super().extra_repr() + f", mode={self.mode!r}"
