"""Float torch weights -> lucidq packed weights, with the qparams a weight observer chose."""

import numpy as np
import torch

from ... import _lucidq
from .._observed import qparams_of
from ._io import float_array

__all__ = ["int8_weight", "int8_codes"]


def int8_weight(weight, observer, where):
    """int8_codes packed for the int8 GEMM (weight [N, K])."""
    codes, scales = int8_codes(weight, observer, where)
    return _lucidq.PackedWeightsInt8.pack(codes, scales)


def int8_codes(weight, observer, where):
    """Runs `observer` (an observer or fake quantizer, as qconfig.weight() gives) on the
    weight ([N, K], or [C_out, ...] for a convolution), quantizes it with the observer's qparams
    and returns (int8 codes of the weight's shape,
    float32 scales: one per output channel or one).

    The codes are lucidq.quantize's (round half to even of x * (1 / scale), clamped to the
    observer's [quant_min, quant_max]), which are torch's quantize_per_channel /
    quantize_per_tensor codes. The weight grid must be signed and symmetric (zero points 0):
    the GEMM folds only the activation zero point."""
    with torch.no_grad():
        observer(weight.detach())
    qparams = qparams_of(observer, f"{where} (weight)", activation=False)
    qdtype = qparams.qdtype
    if not qdtype.is_signed or qdtype.bits != 8:
        raise _lucidq.Error(
            f"{where}: the weight observer's dtype is {qdtype.name} (expected qint8 or a range of "
            "it, e.g. qint8[-8,7] for 4-bit codes)"
        )
    zero_points = np.asarray(qparams.zero_point)
    if np.any(zero_points != 0):
        raise _lucidq.Error(
            f"{where}: the weight observer gives zero points other than 0 ({qparams.qscheme}); "
            "the int8 GEMM needs symmetric weights (per_channel_symmetric or per_tensor_symmetric)"
        )
    if qparams.qscheme.is_per_channel and qparams.ch_axis != 0:
        raise _lucidq.Error(
            f"{where}: the weight observer has ch_axis {qparams.ch_axis} (expected 0, the output "
            "channels)"
        )
    codes = _lucidq.quantize(float_array(weight), qparams).int_repr().astype(np.int8)
    return codes, np.asarray(qparams.scale, np.float32)
