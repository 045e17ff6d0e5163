"""MaxPool2d on QTensor codes: the max of codes is the code of the max, so the grid is kept.

Padding reads as −∞, as float max pooling. The codes are pooled as float32 (exact for 8-bit
integers) with torch's max_pool2d, so every option of nn.MaxPool2d behaves as in float.
"""

import copy

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..qtensor import QTensor, as_qtensor

__all__ = ["MaxPool2d"]


class MaxPool2d(nn.Module):
    """Quantized nn.MaxPool2d (the output keeps the input's scale and zero point)."""

    OBSERVES_OUTPUT = False

    def __init__(self, float_module):
        super().__init__()
        self.float_module = float_module

    @classmethod
    def from_float(cls, mod):
        new = cls(copy.deepcopy(mod))
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, x):
        if isinstance(x, torch.Tensor) and not x.is_quantized:
            return self.float_module(x)
        q = as_qtensor(x, self)
        codes = torch.from_numpy(q.numpy_codes().astype(np.float32))
        m = self.float_module
        pooled = F.max_pool2d(codes, m.kernel_size, m.stride, m.padding, m.dilation,
                              m.ceil_mode)
        out = np.ascontiguousarray(pooled.numpy().astype(q.numpy_codes().dtype))
        return QTensor.from_numpy(out, q.scale, q.zero_point, q.qdtype)
