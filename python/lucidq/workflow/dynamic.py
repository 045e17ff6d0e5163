"""quantize_dynamic (int8 weights, activations quantized per row at run time) and quantize_weight_only.

No calibration: the modules named by qconfig_spec are swapped at once. qconfig_spec, as
torch's quantize_dynamic: None (quantize_dynamic: every nn.Linear, nn.LSTM, nn.GRU,
nn.LSTMCell, nn.GRUCell and nn.RNNCell, torch 1.13's default set; quantize_weight_only:
every nn.Linear), a set of module types and / or dotted module names, or a dict {type or
name: config}. Rules of the dict (torch's
propagate_qconfig_): a module takes its type's entry, else its parent's config; its name's
entry beats that; a `.qconfig` attribute already on the module beats both.
"""

import copy
import itertools
import warnings
from typing import NamedTuple, Optional

import torch
from torch import nn

from .. import _lucidq
from ._paths import record_paths
from .convert import remove_observers, swap_modules
from .mappings import dynamic_mapping, weight_only_mapping

__all__ = ["DynamicConfig", "WeightOnlyConfig", "quantize_dynamic", "quantize_weight_only"]

# qconfig_spec=None in quantize_dynamic: torch 1.13's default set for qint8
_DYNAMIC_DEFAULT_TYPES = (nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell, nn.RNNCell)


class DynamicConfig(NamedTuple):
    """Dynamic quantization settings: the activation grid (quint8 or qint8), one scale per row
    (per_row) or per call, and a weight observer factory (None: per-channel symmetric qint8)."""

    qdtype: object = _lucidq.quint8
    per_row: bool = True
    weight: Optional[object] = None


class WeightOnlyConfig(NamedTuple):
    """Weight-only settings (lucidq.WeightOnlyLinear.from_float): bits 4 or 8, group_size 32,
    64, 128, 256 or 0 (per channel), symmetric or affine, activations "auto" / "float32" /
    "int8"."""

    bits: int = 4
    group_size: int = 32
    symmetric: bool = True
    activations: str = "auto"


def quantize_dynamic(model, qconfig_spec=None, dtype=_lucidq.qint8, mapping=None, inplace=False):
    """The model with its Linear and recurrent modules (LSTM, GRU, LSTMCell, GRUCell, RNNCell),
    or those qconfig_spec names, swapped for dynamic quantized modules (quantized.dynamic.Linear,
    .LSTM, ...). dtype: the weight grid, qint8 (lucidq's or torch's); a dict qconfig_spec gives
    each module its own DynamicConfig (or QConfig)."""
    if dtype not in (_lucidq.qint8, torch.qint8):
        raise _lucidq.Error(f"quantize_dynamic: dtype = {dtype} (expected qint8)")
    return _swap_without_calibration(
        model, qconfig_spec, DynamicConfig(), mapping or dynamic_mapping(), inplace,
        "quantize_dynamic", _DYNAMIC_DEFAULT_TYPES,
    )


def quantize_weight_only(
    model, qconfig_spec=None, bits=4, group_size=32, symmetric=True, activations="auto",
    mapping=None, inplace=False,
):
    """The model with its Linear modules (or those qconfig_spec names) swapped for weight-only
    quantized Linear modules (quantized.weight_only.Linear over lucidq.WeightOnlyLinear)."""
    default = WeightOnlyConfig(bits, group_size, symmetric, activations)
    return _swap_without_calibration(
        model, qconfig_spec, default, mapping or weight_only_mapping(), inplace,
        "quantize_weight_only", (nn.Linear,),
    )


def _swap_without_calibration(model, qconfig_spec, default, mapping, inplace, fn, default_types):
    if qconfig_spec is None:
        qconfig_spec = dict.fromkeys(default_types, default)
    elif isinstance(qconfig_spec, (set, frozenset, list, tuple)):
        qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(default)))
    elif not isinstance(qconfig_spec, dict):
        raise _lucidq.Error(
            f"{fn}: qconfig_spec is a {type(qconfig_spec).__name__} (expected None, a set of "
            "module types / names, or a dict {type or name: config})"
        )
    if not inplace:
        model = copy.deepcopy(model)
    names = dict(model.named_modules())
    for key in qconfig_spec:
        if isinstance(key, str) and key not in names:
            known = ", ".join(n for n in names if n) or "none"
            raise _lucidq.Error(
                f"{fn}: qconfig_spec names module {key!r}, which the model "
                f"({type(model).__name__}) does not have (its modules: {known})"
            )
    model.eval()
    record_paths(model)
    _propagate(model, qconfig_spec, None, "")
    swapped = swap_modules(model, mapping)
    remove_observers(model)
    if swapped == 0:
        warnings.warn(
            f"{fn}: nothing to quantize in {type(model).__name__}: qconfig_spec matched no "
            f"module of a type it can swap ({', '.join(t.__name__ for t in mapping)}); the model "
            "is unchanged",
            stacklevel=3,
        )
    return model


def _propagate(module, spec, parent, prefix):
    config = spec.get(type(module), parent)
    config = spec.get(prefix, config)
    config = module.__dict__.get("qconfig", config)
    module.qconfig = config
    for name, child in module.named_children():
        _propagate(child, spec, config, f"{prefix}.{name}" if prefix else name)
