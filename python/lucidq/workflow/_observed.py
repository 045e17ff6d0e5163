"""What convert reads from an observer or fake quantizer: its grid, scheme and calibrated QParams.

Accepts lucidq's observer modules (workflow.observer, workflow.fake_quantize) and torch's
own (torch.ao.quantization observers and FakeQuantize), which share the attribute names
dtype, qscheme, ch_axis, quant_min, quant_max and calculate_qparams().
"""

import numpy as np
import torch

from .. import _lucidq
from .._qscheme import QScheme
from ._paths import label as _label

__all__ = ["qdtype_of", "qscheme_of", "qparams_of", "check_observed", "output_qparams"]

_TORCH_DTYPES = {torch.qint8: "qint8", torch.quint8: "quint8", torch.qint32: "qint32"}


def qdtype_of(observer):
    """The lucidq QDtype of the observer's grid, narrowed to its quant_min / quant_max."""
    dtype = observer.dtype
    if isinstance(dtype, _lucidq.QDtype):
        qdtype = dtype
    elif dtype in _TORCH_DTYPES:
        qdtype = _lucidq.QDtype(_TORCH_DTYPES[dtype])
    else:
        raise _lucidq.Error(
            f"{type(observer).__name__}: dtype {dtype} (expected an integer grid: qint8, quint8, ...)"
        )
    lo, hi = getattr(observer, "quant_min", None), getattr(observer, "quant_max", None)
    if lo is not None and hi is not None and (int(lo), int(hi)) != (qdtype.quant_min, qdtype.quant_max):
        qdtype = qdtype.with_range(int(lo), int(hi))
    return qdtype


def qscheme_of(observer):
    """The lucidq QScheme of a lucidq or torch qscheme attribute."""
    scheme = observer.qscheme
    if isinstance(scheme, QScheme):
        return scheme
    name = str(scheme).rsplit(".", 1)[-1]  # torch.per_channel_symmetric -> per_channel_symmetric
    try:
        return QScheme.from_string(name)
    except ValueError:
        raise _lucidq.Error(
            f"{type(observer).__name__}: qscheme {scheme} (expected per_tensor_affine, "
            "per_tensor_symmetric, per_channel_affine or per_channel_symmetric)"
        ) from None


def _inner(observer):
    """A fake quantizer's observer, or the observer itself."""
    inner = getattr(observer, "activation_post_process", None)
    return inner if isinstance(inner, torch.nn.Module) else observer


def check_observed(observer, where):
    """Raises lucidq.Error naming `where` when the observer has seen no data yet."""
    inner = _inner(observer)
    min_val = getattr(inner, "min_val", None)
    if isinstance(min_val, torch.Tensor):
        empty = min_val.numel() == 0 or bool(torch.isinf(min_val).all())
    else:  # lucidq observer modules may count what they saw instead
        seen = getattr(inner, "observed", None)
        empty = seen is not None and not seen
    if empty:
        raise _lucidq.Error(
            f"{where}: its observer {type(inner).__name__} saw no data (calibrate: run the "
            "prepared model on sample inputs before convert)"
        )


def qparams_of(observer, where, activation=True):
    """check_observed, then the observer's calculate_qparams() as a lucidq QParams.

    For activations (activation=True) the grid is the dtype's full range whatever the
    observer's quant_min / quant_max (e.g. reduce_range's 0..127): as in torch, those only
    shape the scale, and quantized activations use every code of quint8 / qint8. Weights
    keep the observer's range (torch clamps weight codes to it)."""
    check_observed(observer, where)
    scale, zero_point = observer.calculate_qparams()
    scheme = qscheme_of(observer)
    qdtype = qdtype_of(observer)
    if activation:
        qdtype = _lucidq.QDtype.full_range(qdtype.bits, qdtype.is_signed)
    scale = np.asarray(torch.as_tensor(scale).detach().cpu(), dtype=np.float32).reshape(-1)
    zero_point = np.asarray(torch.as_tensor(zero_point).detach().cpu()).reshape(-1)
    zero_point = np.rint(zero_point).astype(np.int32)
    if scheme.is_per_channel:
        axis = int(getattr(observer, "ch_axis", 0))
        return _lucidq.QParams.per_channel(scale, zero_point, axis, qdtype, scheme)
    if scale.size != 1:
        raise _lucidq.Error(f"{where}: a per-tensor observer gave {scale.size} scales")
    return _lucidq.QParams.per_tensor(float(scale[0]), int(zero_point[0]), qdtype, scheme)


def output_qparams(module):
    """The calibrated output grid of a prepared module (its activation_post_process) as a
    lucidq QParams; lucidq.Error naming the module when it has no observer or it saw no data."""
    where = _label(module)
    observer = getattr(module, "activation_post_process", None)
    if observer is None:
        raise _lucidq.Error(f"{where}: has no output observer (run prepare before convert)")
    return qparams_of(observer, where)
