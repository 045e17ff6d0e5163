"""QConfigMapping: which QConfig each module of a model gets, with torch 1.13's precedence.

    QConfigMapping()
        .set_global(qconfig)                    every module not matched below
        .set_object_type(nn.Linear, qconfig)    modules of exactly that type (graph
                                                mode: also functions, operator.add, and
                                                torch.Tensor method names, "mean")
        .set_module_name_regex("enc.*", qc)     names matching (re.match; first
                                                registered pattern wins)
        .set_module_name("enc.fc1", qconfig)    that module and its submodules
    qconfig_for(module_name, module) -> QConfig or None
        precedence module name (the name itself, then its parents: "a.b.c",
        "a.b", "a") > regex > object type > global, as torch's
        maybe_adjust_qconfig_for_module_type_or_name. None (set anywhere)
        means "leave this module float". Values: QConfig (lucidq's or torch's), None,
        and for prepare_fx also DynamicConfig / WeightOnlyConfig (dynamic / weight-only
        Linear and recurrent modules; eager prepare refuses them).
    check_module_names(model)  ValueError naming every module_name key that is
        not a submodule of model (a typo would otherwise silently do nothing).
    to_dict() / from_dict(d)   torch's dict form: keys "", "object_type",
        "module_name_regex", "module_name".
    get_default_qconfig_mapping(backend="lucidq") / get_default_qat_qconfig_mapping(...)
        "lucidq": the global default qconfig only (Lucid's). torch backends:
        torch's default mapping's module entries (Conv, ConvTranspose with a
        per-tensor weight on x86 / fbgemm, Linear, ReLU, BatchNorm, LayerNorm
        with a placeholder weight, fixed qparams for Hardsigmoid / Sigmoid /
        Softmax (1/256, 0) and Tanh (2/256, 128)).

Setters return the mapping (fluent) and re-setting a key replaces its value
(a regex keeps its place in the order).

>>> import torch, lucidq.workflow as W
>>> qc = W.get_default_qconfig()
>>> m = W.QConfigMapping().set_global(qc).set_object_type(torch.nn.ReLU, None)
>>> m.qconfig_for("act", torch.nn.ReLU()) is None, m.qconfig_for("fc", torch.nn.Linear(2, 2)) == qc
(True, True)
"""

import re

import torch

from .fake_quantize import (
    FixedQParamsFakeQuantize,
    default_weight_fake_quant,
)
from .observer import (
    default_fixed_qparams_range_0to1_observer,
    default_fixed_qparams_range_neg1to1_observer,
    default_placeholder_observer,
    default_weight_observer,
)
from .qconfig import QConfig, as_qconfig, get_default_qat_qconfig, get_default_qconfig

__all__ = ["QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"]

_GLOBAL_KEY = ""
_OBJECT_TYPE_KEY = "object_type"
_REGEX_KEY = "module_name_regex"
_NAME_KEY = "module_name"


def _check_qconfig(qconfig, what):
    from .dynamic import DynamicConfig, WeightOnlyConfig  # dynamic imports the module swap

    if isinstance(qconfig, (DynamicConfig, WeightOnlyConfig)):
        return qconfig  # graph mode's dynamic / weight-only entries (prepare_fx)
    try:
        return as_qconfig(qconfig)
    except ValueError as error:
        raise ValueError(f"QConfigMapping.{what}: {error}") from None


class QConfigMapping:
    """Module -> QConfig rules; see the module docstring."""

    def __init__(self):
        self.global_qconfig = None
        self.object_type_qconfigs = {}
        self.module_name_regex_qconfigs = {}
        self.module_name_qconfigs = {}

    def set_global(self, qconfig):
        self.global_qconfig = _check_qconfig(qconfig, "set_global")
        return self

    def set_object_type(self, object_type, qconfig):
        """object_type: a torch.nn.Module subclass; for graph mode (prepare_fx) also a function
        (operator.add, torch.cat, F.relu) or a torch.Tensor method name ("mean")."""
        is_module_type = isinstance(object_type, type) and issubclass(object_type, torch.nn.Module)
        is_function = callable(object_type) and not isinstance(object_type, type)
        is_method = isinstance(object_type, str) and hasattr(torch.Tensor, object_type)
        if not (is_module_type or is_function or is_method):
            raise ValueError(
                f"QConfigMapping.set_object_type: {object_type!r} (expected a torch.nn.Module "
                "subclass such as torch.nn.Linear, a function such as operator.add, or a "
                "torch.Tensor method name such as 'mean')"
            )
        self.object_type_qconfigs[object_type] = _check_qconfig(qconfig, "set_object_type")
        return self

    def set_module_name_regex(self, module_name_regex, qconfig):
        try:
            re.compile(module_name_regex)
        except (re.error, TypeError) as error:
            raise ValueError(
                f"QConfigMapping.set_module_name_regex: {module_name_regex!r} is not a regular "
                f"expression ({error})"
            ) from None
        self.module_name_regex_qconfigs[module_name_regex] = _check_qconfig(
            qconfig, "set_module_name_regex"
        )
        return self

    def set_module_name(self, module_name, qconfig):
        if not isinstance(module_name, str):
            raise ValueError(
                f"QConfigMapping.set_module_name: {module_name!r} (expected a dotted module name)"
            )
        self.module_name_qconfigs[module_name] = _check_qconfig(qconfig, "set_module_name")
        return self

    def _module_name_qconfig(self, module_name, fallback):
        while module_name:
            if module_name in self.module_name_qconfigs:
                return self.module_name_qconfigs[module_name]
            module_name = module_name.rpartition(".")[0]
        return fallback

    def qconfig_for(self, module_name, module):
        """The QConfig for `module` at dotted path `module_name` ("" = the root), or None."""
        return self.qconfig_for_object(module_name, type(module))

    def qconfig_for_object(self, module_name, object_type):
        """The QConfig for an object (module type, function or method name) inside the module
        at `module_name`, with the same precedence."""
        qconfig = self.object_type_qconfigs.get(object_type, self.global_qconfig)
        for pattern, regex_qconfig in self.module_name_regex_qconfigs.items():
            if re.match(pattern, module_name):
                qconfig = regex_qconfig
                break
        return self._module_name_qconfig(module_name, qconfig)

    def check_module_names(self, model):
        """Raises ValueError naming every module_name key that `model` does not have."""
        known = {name for name, _ in model.named_modules()}
        unknown = [name for name in self.module_name_qconfigs if name not in known]
        if unknown:
            shown = ", ".join(sorted(n for n in known if n)[:20]) or "(no submodules)"
            raise ValueError(
                f"QConfigMapping: module name(s) {', '.join(map(repr, unknown))} not found in "
                f"the model (its submodules: {shown})"
            )

    def to_dict(self):
        """torch's dict form of the mapping."""
        return {
            _GLOBAL_KEY: self.global_qconfig,
            _OBJECT_TYPE_KEY: list(self.object_type_qconfigs.items()),
            _REGEX_KEY: list(self.module_name_regex_qconfigs.items()),
            _NAME_KEY: list(self.module_name_qconfigs.items()),
        }

    @classmethod
    def from_dict(cls, qconfig_dict):
        """The mapping of torch's dict form; unknown keys raise ValueError."""
        known = {_GLOBAL_KEY, _OBJECT_TYPE_KEY, _REGEX_KEY, _NAME_KEY}
        unknown = set(qconfig_dict) - known
        if unknown:
            raise ValueError(
                f"QConfigMapping.from_dict: unknown key(s) {sorted(unknown)} (expected "
                f"{sorted(known)})"
            )
        mapping = cls()
        if _GLOBAL_KEY in qconfig_dict:
            mapping.set_global(qconfig_dict[_GLOBAL_KEY])
        for object_type, qconfig in qconfig_dict.get(_OBJECT_TYPE_KEY, []):
            mapping.set_object_type(object_type, qconfig)
        for pattern, qconfig in qconfig_dict.get(_REGEX_KEY, []):
            mapping.set_module_name_regex(pattern, qconfig)
        for name, qconfig in qconfig_dict.get(_NAME_KEY, []):
            mapping.set_module_name(name, qconfig)
        return mapping

    def __repr__(self):
        parts = [f"global={self.global_qconfig!r}"]
        for label, table in (
            ("object_type", self.object_type_qconfigs),
            ("module_name_regex", self.module_name_regex_qconfigs),
            ("module_name", self.module_name_qconfigs),
        ):
            if table:
                keys = ", ".join(getattr(k, "__name__", repr(k)) for k in table)
                parts.append(f"{label}=[{keys}]")
        return f"QConfigMapping({', '.join(parts)})"


def _default_mapping(qconfig, backend, is_qat):
    mapping = QConfigMapping().set_global(qconfig)
    if backend == "lucidq":
        return mapping
    nn = torch.nn
    default_weight = default_weight_fake_quant if is_qat else default_weight_observer
    transpose = (
        QConfig(qconfig.activation, default_weight) if backend in ("x86", "fbgemm") else qconfig
    )
    layer_norm = QConfig(qconfig.activation, default_placeholder_observer)
    for module_type in (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.ReLU):
        mapping.set_object_type(module_type, qconfig)
    for module_type in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d):
        mapping.set_object_type(module_type, qconfig)
    for module_type in (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d):
        mapping.set_object_type(module_type, transpose)
    mapping.set_object_type(nn.LayerNorm, layer_norm)
    for module_type, observer in (
        (nn.Hardsigmoid, default_fixed_qparams_range_0to1_observer),
        (nn.Sigmoid, default_fixed_qparams_range_0to1_observer),
        (nn.Softmax, default_fixed_qparams_range_0to1_observer),
        (nn.Tanh, default_fixed_qparams_range_neg1to1_observer),
    ):
        activation = FixedQParamsFakeQuantize.with_args(observer=observer) if is_qat else observer
        mapping.set_object_type(module_type, QConfig(activation, default_weight))
    return mapping


def get_default_qconfig_mapping(backend="lucidq"):
    """The post-training mapping of `backend` (see the module docstring)."""
    return _default_mapping(get_default_qconfig(backend), backend, is_qat=False)


def get_default_qat_qconfig_mapping(backend="lucidq"):
    """The quantization-aware-training mapping of `backend` (see the module docstring)."""
    return _default_mapping(get_default_qat_qconfig(backend), backend, is_qat=True)
