"""QConfig: which observer / fake quantizer each activation and weight gets, with Lucid's and torch's presets.

    QConfig(activation, weight)      a namedtuple of factories (classes or
                                     Class.with_args(...)); calling one builds a
                                     fresh observer. Passing an instance raises
                                     ValueError (torch's rule). The C++ observer
                                     classes (lucidq.HistogramObserver, ...) and
                                     their with_args stand for their torch-module
                                     twins in lucidq.workflow.
    get_default_qconfig(backend="lucidq")
        "lucidq" (default), Lucid's defaults: activations
        HistogramObserver(per_tensor_affine, quint8), weights
        PerChannelMinMaxObserver(ch_axis=0, per_channel_symmetric, qint8).
        "x86" / "fbgemm", "qnnpack", "onednn": torch 1.13's
        get_default_qconfig(backend) exactly (x86 / fbgemm: histogram with
        reduce_range=True and per-channel weights; qnnpack: reduce_range=False and
        per-tensor symmetric weights; onednn: reduce_range=False, per-channel).
    get_default_qat_qconfig(backend="lucidq")
        "lucidq": FakeQuantize over MovingAverageMinMaxObserver (quint8 affine) for
        activations and FakeQuantize over PerChannelMinMaxObserver
        (per_channel_symmetric qint8) for weights, as Lucid. The torch backends:
        torch 1.13's version-0 qconfigs (plain FakeQuantize; torch's default
        version 1 fuses the same observer and fake-quant math into one op).
    default_qconfig, default_qat_qconfig, default_per_channel_qconfig,
    default_dynamic_qconfig, per_channel_dynamic_qconfig: torch's named qconfigs.

An unknown backend raises ValueError listing the known ones (torch silently
falls back to default_qconfig).

>>> import lucidq.workflow as W
>>> W.get_default_qconfig().activation
HistogramObserver.with_args(qscheme=lucidq.per_tensor_affine, dtype=lucidq.quint8)
>>> W.get_default_qconfig("qnnpack").weight
MinMaxObserver.with_args(dtype=lucidq.qint8, qscheme=lucidq.per_tensor_symmetric)
"""

from collections import namedtuple

import torch

from .. import _lucidq
from .._qscheme import QScheme
from . import observer as observer_module
from .fake_quantize import (
    FakeQuantize,
    default_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
)
from .observer import (
    HistogramObserver,
    MovingAverageMinMaxObserver,
    PerChannelMinMaxObserver,
    default_dynamic_quant_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)

__all__ = [
    "QConfig",
    "get_default_qconfig",
    "get_default_qat_qconfig",
    "default_qconfig",
    "default_qat_qconfig",
    "default_dynamic_qconfig",
    "per_channel_dynamic_qconfig",
    "default_per_channel_qconfig",
]

BACKENDS = ("lucidq", "x86", "fbgemm", "qnnpack", "onednn")


def _module_twin(factory):
    """A C++ observer class (lucidq.MinMaxObserver) as its torch-module twin; others unchanged."""
    if isinstance(factory, type) and issubclass(factory, _lucidq.Observer):
        return getattr(observer_module, factory.__name__)
    return factory


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """(activation, weight) factories; see the module docstring."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        activation, weight = _module_twin(activation), _module_twin(weight)
        for role, factory in (("activation", activation), ("weight", weight)):
            if isinstance(factory, torch.nn.Module):
                raise ValueError(
                    f"QConfig: {role} is an observer instance ({type(factory).__name__}); pass "
                    f"its class or a factory instead, e.g. {type(factory).__name__}.with_args(...)"
                )
            if factory is not None and not callable(factory):
                raise ValueError(
                    f"QConfig: {role} = {factory!r} (expected an observer class or factory)"
                )
        return super().__new__(cls, activation, weight)


def as_qconfig(qconfig):
    """qconfig as a lucidq QConfig: None and lucidq QConfigs as they are, torch's QConfig and
    QConfigDynamic by their factories (torch's observers and fake quantizers work as they
    are). Anything else raises ValueError."""
    if qconfig is None or isinstance(qconfig, QConfig):
        return qconfig
    import torch.ao.quantization.qconfig as torch_qconfig

    torch_types = tuple(getattr(torch_qconfig, name) for name in ("QConfig", "QConfigDynamic")
                        if hasattr(torch_qconfig, name))
    if isinstance(qconfig, torch_types):
        return QConfig(qconfig.activation, qconfig.weight)
    raise ValueError(f"{qconfig!r} (expected a QConfig, torch's QConfig, or None)")


def _check_backend(backend, what):
    if backend not in BACKENDS:
        raise ValueError(f"{what}: backend {backend!r} (expected one of {', '.join(BACKENDS)})")


_lucid_activation = HistogramObserver.with_args(
    qscheme=QScheme.PER_TENSOR_AFFINE, dtype=_lucidq.quint8
)
_lucid_weight = PerChannelMinMaxObserver.with_args(
    ch_axis=0, qscheme=QScheme.PER_CHANNEL_SYMMETRIC, dtype=_lucidq.qint8
)

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(
    activation=default_observer, weight=default_per_channel_weight_observer
)
default_dynamic_qconfig = QConfig(
    activation=default_dynamic_quant_observer, weight=default_weight_observer
)
per_channel_dynamic_qconfig = QConfig(
    activation=default_dynamic_quant_observer, weight=default_per_channel_weight_observer
)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)


def get_default_qconfig(backend="lucidq"):
    """The post-training QConfig of `backend` (see the module docstring)."""
    _check_backend(backend, "get_default_qconfig")
    if backend == "lucidq":
        return QConfig(activation=_lucid_activation, weight=_lucid_weight)
    reduce_range = backend in ("x86", "fbgemm")
    weight = default_per_channel_weight_observer
    if backend == "qnnpack":
        weight = default_weight_observer
    return QConfig(activation=HistogramObserver.with_args(reduce_range=reduce_range), weight=weight)


def get_default_qat_qconfig(backend="lucidq"):
    """The quantization-aware-training QConfig of `backend` (see the module docstring)."""
    _check_backend(backend, "get_default_qat_qconfig")
    if backend == "lucidq":
        return QConfig(
            activation=FakeQuantize.with_args(
                observer=MovingAverageMinMaxObserver,
                qscheme=QScheme.PER_TENSOR_AFFINE,
                dtype=_lucidq.quint8,
            ),
            weight=FakeQuantize.with_args(
                observer=PerChannelMinMaxObserver,
                ch_axis=0,
                qscheme=QScheme.PER_CHANNEL_SYMMETRIC,
                dtype=_lucidq.qint8,
            ),
        )
    activation_args = dict(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    if backend != "onednn":
        activation_args["reduce_range"] = backend in ("x86", "fbgemm")
    weight = (
        default_weight_fake_quant if backend == "qnnpack" else default_per_channel_weight_fake_quant
    )
    return QConfig(activation=FakeQuantize.with_args(**activation_args), weight=weight)
