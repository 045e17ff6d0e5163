"""Shared argument handling of the workflow: torch dtypes / qschemes as lucidq's, and `with_args` factories."""

import torch

from .. import _lucidq
from .._qscheme import QScheme

# torch's quantized dtypes and qschemes, read as lucidq's (the user may pass either).
_TORCH_QDTYPES = {
    torch.qint8: _lucidq.qint8,
    torch.quint8: _lucidq.quint8,
    torch.qint32: _lucidq.qint32,
}
_TORCH_QSCHEMES = {
    torch.per_tensor_affine: QScheme.PER_TENSOR_AFFINE,
    torch.per_tensor_symmetric: QScheme.PER_TENSOR_SYMMETRIC,
    torch.per_channel_affine: QScheme.PER_CHANNEL_AFFINE,
    torch.per_channel_symmetric: QScheme.PER_CHANNEL_SYMMETRIC,
}


def as_lucidq_value(value, what):
    """torch.qint8 -> lucidq.qint8, torch.per_channel_affine -> lucidq's QScheme; others unchanged.

    torch dtypes lucidq has no grid for (quint4x2, float qparams schemes) raise
    ValueError naming `what`.
    """
    if isinstance(value, torch.dtype):
        if value in _TORCH_QDTYPES:
            return _TORCH_QDTYPES[value]
        raise ValueError(
            f"{what}: torch dtype {value} (expected torch.qint8 / torch.quint8 / torch.qint32 or a "
            "lucidq QDtype such as lucidq.qint4)"
        )
    if isinstance(value, torch.qscheme):
        if value in _TORCH_QSCHEMES:
            return _TORCH_QSCHEMES[value]
        raise ValueError(
            f"{what}: torch qscheme {value} (expected one of the per-tensor / per-channel "
            "affine / symmetric schemes)"
        )
    return value


def as_qdtype(value, what):
    """A lucidq QDtype from a QDtype, its name or a torch quantized dtype."""
    value = as_lucidq_value(value, what)
    if isinstance(value, str):
        return _lucidq.QDtype(value)
    if not isinstance(value, _lucidq.QDtype):
        raise ValueError(
            f"{what}: {value!r} (expected a lucidq QDtype, its name or a torch qdtype)"
        )
    return value


def as_qscheme(value, what):
    """A lucidq QScheme from a QScheme, its name or a torch qscheme."""
    value = as_lucidq_value(value, what)
    if isinstance(value, str):
        return QScheme.from_string(value)
    if not isinstance(value, QScheme):
        raise ValueError(f"{what}: {value!r} (expected a QScheme, its name or a torch qscheme)")
    return value


def _argument_text(value):
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, _lucidq.QDtype):
        return f"lucidq.{value.name}" if not value.has_custom_range else f"QDtype('{value.name}')"
    if isinstance(value, QScheme):
        return f"lucidq.{value}"
    return repr(value)


class Factory:
    """`cls` with some keyword arguments bound: what QConfig holds and `Class.with_args` returns.

    Calling it builds an instance (`factory()` or `factory(more=...)`);
    `factory.with_args(**kw)` binds more (later values win). The repr reads like
    the code that made it: `MinMaxObserver.with_args(dtype=lucidq.qint8)`.
    Two factories are equal when they build the same class with equal arguments.
    """

    def __init__(self, cls, keywords):
        self.cls = cls
        self.keywords = dict(keywords)

    def __call__(self, **keywords):
        return self.cls(**{**self.keywords, **keywords})

    def with_args(self, **keywords):
        return Factory(self.cls, {**self.keywords, **keywords})

    def __repr__(self):
        arguments = ", ".join(f"{k}={_argument_text(v)}" for k, v in self.keywords.items())
        return f"{self.cls.__name__}.with_args({arguments})"

    def __eq__(self, other):
        if not isinstance(other, Factory):
            return NotImplemented
        return self.cls is other.cls and self.keywords == other.keywords

    def __hash__(self):
        return hash((self.cls, repr(self)))


def with_args(cls, **keywords):
    """The classmethod `with_args` of every observer and fake quantizer: a Factory of cls."""
    return Factory(cls, keywords)
