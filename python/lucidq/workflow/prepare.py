"""prepare / prepare_qat: give modules their qconfig, observers on their outputs, QAT modules for training.

As torch.ao's eager mode (1.13): the observer is the module's activation_post_process child,
called by a forward hook registered first on the module's output (for QuantStub the output
is the network input); fused units and QAT modules are observed as one unit; Dropout is
skipped; DeQuantStub and modules that keep their input's grid (ReLU) or have a fixed one
(Sigmoid, Tanh) get none (mappings.observes_output). Weights are observed at convert.

Which modules are quantized: with a QConfigMapping (lucidq's or torch's) or a QConfig
(lucidq's or torch's), the mapping decides (module name > regex > type > global; None
leaves a module float; every name it mentions must exist). Without one, the `.qconfig`
attributes the user set decide, inherited by submodules and overridden by a submodule's own
attribute (torch's propagate_qconfig_). With neither, get_default_qconfig_mapping()
(get_default_qat_qconfig_mapping() for prepare_qat) applies to the whole model, as in
Lucid's `prepare(model)`, and one log line on the "lucidq" logger says so.

torch.ao's own modules are understood as written: its QuantStub / DeQuantStub /
QuantWrapper, FloatFunctional (observed through its activation_post_process child, which
its methods call), and the fused types of torch.ao.nn.intrinsic.
"""

import copy
import logging
import warnings

import torch
from torch import nn
import torch.ao.nn.intrinsic as _torch_fused
import torch.ao.quantization as _torch_ao

from .. import _lucidq
from . import fused, stubs
from ._hooks import check_linear_input_hook, observe_output_hook
from ._paths import record_paths
from .convert import remove_observers, swap_modules
from .dynamic import DynamicConfig, WeightOnlyConfig
from .mappings import observes_output, qat_mapping, static_mapping
from .qconfig import as_qconfig
from .qconfig_mapping import (
    QConfigMapping, get_default_qat_qconfig_mapping, get_default_qconfig_mapping,
)
from .quantized.functional import FLOAT_FUNCTIONAL_TYPES

_QUANT_STUBS = (stubs.QuantStub, _torch_ao.QuantStub)
_log = logging.getLogger("lucidq")

__all__ = ["prepare", "prepare_qat", "propagate_qconfig"]


def prepare(model, qconfig_mapping=None, inplace=False, example_inputs=None):
    """The model (a copy unless inplace) with observers, ready for calibration: run it on
    sample inputs, then convert. example_inputs (a tuple) is run once through a throw-away
    copy, so shape errors surface here, naming the module. Warns and returns the model
    unchanged when nothing in it would be quantized."""
    if not inplace:
        model = copy.deepcopy(model)
    record_paths(model)
    qconfig_mapping = _default_when_unset(model, qconfig_mapping, "prepare",
                                          get_default_qconfig_mapping)
    propagate_qconfig(model, qconfig_mapping, "prepare")
    return _add_observers_or_warn(model, static_mapping(), (), example_inputs, "prepare")


def prepare_qat(model, qconfig_mapping=None, inplace=False, example_inputs=None):
    """As prepare, for quantization-aware training: the model must be in train mode; Linear,
    fused LinearReLU and LinearBn1d become QAT modules (weights through qconfig.weight()'s fake
    quantizer), and outputs get qconfig.activation()'s fake quantizer."""
    if not model.training:
        raise _lucidq.Error(
            f"prepare_qat: the model ({type(model).__name__}) is in eval mode (expected train "
            "mode: call model.train() first)"
        )
    if not inplace:
        model = copy.deepcopy(model)
    record_paths(model)
    qconfig_mapping = _default_when_unset(model, qconfig_mapping, "prepare_qat",
                                          get_default_qat_qconfig_mapping)
    propagate_qconfig(model, qconfig_mapping, "prepare_qat")
    table = qat_mapping()
    swap_modules(model, table)
    return _add_observers_or_warn(
        model, static_mapping(), tuple(set(table.values())), example_inputs, "prepare_qat"
    )


def _default_when_unset(model, qconfig_mapping, fn, default_mapping):
    """qconfig_mapping, or the default mapping when neither it nor any qconfig attribute is set."""
    if qconfig_mapping is not None or any("qconfig" in m.__dict__ for m in model.modules()):
        return qconfig_mapping
    _log.info("%s: no qconfig given or set on %s: using %s()", fn, type(model).__name__,
              default_mapping.__name__)
    return default_mapping()


def _as_mapping(qconfig_mapping, fn):
    """lucidq's QConfigMapping for a lucidq or torch QConfigMapping, or a bare QConfig
    (lucidq's or torch's: QConfigMapping().set_global(qconfig))."""
    if isinstance(qconfig_mapping, QConfigMapping):
        return qconfig_mapping
    if isinstance(qconfig_mapping, _torch_ao.QConfigMapping):
        entries = qconfig_mapping.to_dict()
        if entries.pop("module_name_object_type_order", None):
            raise _lucidq.Error(
                f"{fn}: torch QConfigMapping.set_module_name_object_type_order is not supported "
                "(FX mode only; use set_module_name)")
        convert = {"": as_qconfig(entries.pop("", None))}
        for key, pairs in entries.items():
            # torch's default mappings list method names torch.Tensor does not have
            # ("hardsigmoid"): no call can match them, so they are dropped
            convert[key] = [(k, as_qconfig(v)) for k, v in pairs
                            if not (key == "object_type" and isinstance(k, str)
                                    and not hasattr(torch.Tensor, k))]
        return QConfigMapping.from_dict(convert)
    try:
        return QConfigMapping().set_global(as_qconfig(qconfig_mapping))
    except ValueError as error:
        raise _lucidq.Error(f"{fn}: {error}") from None


def propagate_qconfig(model, qconfig_mapping=None, fn="prepare"):
    """Sets module.qconfig on every module (see the module doc for the rules). A bare QConfig
    stands for QConfigMapping().set_global(qconfig)."""
    if qconfig_mapping is None:
        _inherit(model, None)
        return
    qconfig_mapping = _as_mapping(qconfig_mapping, fn)
    try:
        qconfig_mapping.check_module_names(model)
    except ValueError as error:
        raise _lucidq.Error(f"{fn}: {error}") from None
    for name, module in model.named_modules():
        module.qconfig = qconfig_mapping.qconfig_for(name, module)
        if isinstance(module.qconfig, (DynamicConfig, WeightOnlyConfig)):
            raise _lucidq.Error(
                f"{fn}: the mapping gives module {name!r} ({type(module).__name__}) a "
                f"{type(module.qconfig).__name__} (expected a QConfig or None: use "
                "quantize_dynamic / quantize_weight_only, or prepare_fx, which applies them)")


def _inherit(module, parent_qconfig):
    qconfig = module.__dict__.get("qconfig", parent_qconfig)
    module.qconfig = qconfig
    for child in module.children():
        _inherit(child, qconfig)


def _add_observers_or_warn(model, mapping, units, example_inputs, fn):
    observed = _add_observers(model, mapping, units)
    if observed == 0:
        remove_observers(model)
        for module in model.modules():
            module.__dict__.pop("_lucidq_path", None)
        warnings.warn(
            f"{fn}: nothing to quantize in {type(model).__name__}: no module of a quantizable "
            "type (Linear, LinearReLU, QuantStub, ...) got a qconfig; the model is unchanged",
            stacklevel=3,
        )
        return model
    if not any(isinstance(m, _QUANT_STUBS) for m in model.modules()):
        warnings.warn(
            f"{fn}: {type(model).__name__} has no QuantStub, so its quantized modules will get "
            "float inputs; wrap the model in QuantWrapper or add QuantStub / DeQuantStub",
            stacklevel=3,
        )
    if example_inputs is not None:
        with torch.no_grad():
            copy.deepcopy(model)(*example_inputs)
    return model


def _is_unit(module, units):
    return isinstance(module, (fused.FusedModule, _torch_fused._FusedModule)) or isinstance(
        module, units
    )


def _add_observers(module, mapping, units):
    """Inserts the output observers below `module`; returns how many modules got one."""
    count = 0
    for child in module.children():
        if type(child) is nn.Dropout:
            continue
        if isinstance(child, FLOAT_FUNCTIONAL_TYPES):
            count += _observe_functional(child)
        elif _is_unit(child, units):
            count += _observe(child, mapping)
        else:
            count += _add_observers(child, mapping, units)
    if not any(True for _ in module.children()) and not isinstance(module, nn.Sequential):
        count += _observe(module, mapping)
    return count


def _observe_functional(module):
    """A FloatFunctional's observer is its activation_post_process child, which its methods
    call on their results (as torch.ao's prepare)."""
    qconfig = getattr(module, "qconfig", None)
    if qconfig is None:
        return 0
    module.activation_post_process = qconfig.activation()
    return 1


def _observe(module, mapping):
    qconfig = getattr(module, "qconfig", None)
    if qconfig is None:
        return 0
    if not observes_output(type(module), mapping):
        # Modules quantized from their weight alone (embeddings) need no observer but count.
        return int(getattr(mapping.get(type(module)), "WEIGHT_ONLY", False))
    module.add_module("activation_post_process", qconfig.activation())
    handle = module.register_forward_hook(observe_output_hook)
    module._forward_hooks.move_to_end(handle.id, last=False)
    linear = module[0] if isinstance(module, nn.Sequential) else module
    if isinstance(linear, nn.Linear):
        handle = linear.register_forward_pre_hook(check_linear_input_hook)
        linear._forward_pre_hooks.move_to_end(handle.id, last=False)
    return 1
