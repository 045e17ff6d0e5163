"""prepare_fx, prepare_qat_fx, convert_fx, fuse_fx: graph-mode quantization of unmodified float models (torch.ao 1.13's signatures).

prepare_fx traces a copy of the model (trace.py), gives every node its qconfig from the
mapping (module name > regex > object type, which may be a module class, a function such
as operator.add or a method name > global; None keeps the node float), fuses by pattern
(fuse.py), runs the model once on example_inputs to learn which nodes are tensors, rewrites
the graph into an eager-quantizable one (rewrite.py: QuantStub / DeQuantStub at float
boundaries, FloatFunctional modules for +, * and cat) and runs eager prepare (or
prepare_qat) on it. convert_fx is eager convert on a copy, plus quantize_dynamic /
quantize_weight_only for the modules the mapping gave a dynamic / weight-only config. The
result is a torch.fx GraphModule whose code reads as the quantized model. With
untraceable="split", a module torch.fx cannot trace keeps its forward (float) and its
children are prepared one by one (split.py); the result is then the model itself with
GraphModule parts.
"""

import copy
import logging

import torch
from torch import fx

from ... import _lucidq
from .._paths import record_paths
from ..convert import convert
from ..dynamic import quantize_dynamic, quantize_weight_only
from ..prepare import _as_mapping
from ..qconfig_mapping import get_default_qat_qconfig_mapping, get_default_qconfig_mapping
from .fuse import fuse_graph
from .prepare_graph import prepare_graph
from .split import capture_inputs, holder
from .trace import UntraceableError, custom_config_leaves, trace

__all__ = ["prepare_fx", "prepare_qat_fx", "convert_fx", "fuse_fx", "FxGraphModule"]

_log = logging.getLogger("lucidq")


class FxGraphModule(fx.GraphModule):
    """A GraphModule that keeps graph mode's plan (`lucidq_fx`: the dynamic modules and each
    node's state, "q" / "f" / "o") through copy.deepcopy, which a plain GraphModule drops."""

    def __init__(self, root, graph, class_name="GraphModule", lucidq_fx=None):
        super().__init__(root, graph, class_name)
        self.lucidq_fx = lucidq_fx

    def __deepcopy__(self, memo):
        fake = torch.nn.Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        return FxGraphModule(fake, fake.__dict__["_graph"], self.__class__.__name__,
                             fake.__dict__["lucidq_fx"])


def prepare_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None,
               _equalization_config=None, backend_config=None, *, untraceable="error"):
    """A traced copy of `model` with observers, ready for calibration: run it on sample
    inputs, then convert_fx. qconfig_mapping: lucidq's or torch's QConfigMapping, or a
    QConfig (its global entry); None: get_default_qconfig_mapping(). example_inputs: a tuple
    of inputs, run once. prepare_custom_config: {"non_traceable_module_name": [...],
    "non_traceable_module_class": [...]} or torch's PrepareCustomConfig (those modules are
    not traced into and stay float). untraceable: "error" (torch.ao's behaviour) or "split":
    a module whose forward cannot be traced runs that forward in float and each child it
    calls is traced and quantized on its own (one warning per such module)."""
    return _prepare(model, qconfig_mapping, example_inputs, prepare_custom_config,
                    _equalization_config, backend_config, False, "prepare_fx", untraceable)


def prepare_qat_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None,
                   backend_config=None, *, untraceable="error"):
    """As prepare_fx for quantization-aware training: the model must be in train mode;
    BatchNorm stays inside fused QAT units and Linear / Conv2d become QAT modules."""
    return _prepare(model, qconfig_mapping, example_inputs, prepare_custom_config, None,
                    backend_config, True, "prepare_qat_fx", untraceable)


def fuse_fx(model, fuse_custom_config=None, backend_config=None):
    """A traced copy of `model` (eval mode) with its patterns fused: BatchNorm folded into
    the Conv / Linear before it, Conv2d / Linear + ReLU as fused.ConvReLU2d / LinearReLU."""
    _check_unsupported("fuse_fx", fuse_custom_config=fuse_custom_config,
                       backend_config=backend_config)
    if model.training:
        raise _lucidq.Error(
            f"fuse_fx: the model ({type(model).__name__}) is in train mode (expected eval mode: "
            "BatchNorm is folded with its running statistics; call model.eval() first)")
    gm = trace(copy.deepcopy(model), (), (), "fuse_fx")
    fuse_graph(gm)
    return gm


def convert_fx(graph_module, convert_custom_config=None, _remove_qconfig=True,
               qconfig_mapping=None, backend_config=None):
    """The quantized GraphModule of a calibrated prepare_fx / prepare_qat_fx result (a copy),
    in eval mode. Errors name the module (graph node target) whose observer saw no data."""
    _check_unsupported("convert_fx", convert_custom_config=convert_custom_config,
                       qconfig_mapping=qconfig_mapping, backend_config=backend_config)
    plan = getattr(graph_module, "lucidq_fx", None)
    if plan is None:
        raise _lucidq.Error(
            f"convert_fx: {type(graph_module).__name__} was not prepared by lucidq's prepare_fx "
            "or prepare_qat_fx (expected their result, calibrated)")
    model = copy.deepcopy(graph_module)
    try:
        convert(model, inplace=True, remove_qconfig=_remove_qconfig)
    except _lucidq.Error as error:
        raise _lucidq.Error(f"convert_fx: {error}") from None
    graphs = [m for m in model.modules() if isinstance(m, FxGraphModule)]
    for gm in graphs:
        if gm.lucidq_fx["dynamic"]:
            quantize_dynamic(gm, dict(gm.lucidq_fx["dynamic"]), inplace=True)
        if gm.lucidq_fx["weight_only"]:
            quantize_weight_only(gm, dict(gm.lucidq_fx["weight_only"]), inplace=True)
        gm.graph.lint()
        gm.recompile()
    record_paths(model)
    return model


def _check_unsupported(fn, **arguments):
    given = [name for name, value in arguments.items() if value]
    if given:
        raise _lucidq.Error(f"{fn}: {', '.join(given)} is not supported (pass None)")


def _prepare(model, qconfig_mapping, example_inputs, prepare_custom_config,
             equalization_config, backend_config, qat, fn, untraceable):
    _check_unsupported(fn, _equalization_config=equalization_config,
                       backend_config=backend_config)
    if untraceable not in ("error", "split"):
        raise _lucidq.Error(f'{fn}: untraceable = {untraceable!r} (expected "error" or "split")')
    if qat and not model.training:
        raise _lucidq.Error(
            f"{fn}: the model ({type(model).__name__}) is in eval mode (expected train mode: "
            "call model.train() first)")
    if not isinstance(example_inputs, tuple):
        raise _lucidq.Error(
            f"{fn}: example_inputs is a {type(example_inputs).__name__} (expected a tuple of "
            "the forward's arguments, e.g. (x,))")
    if qconfig_mapping is None:
        default = get_default_qat_qconfig_mapping if qat else get_default_qconfig_mapping
        _log.info("%s: no qconfig_mapping given: using %s()", fn, default.__name__)
        qconfig_mapping = default()
    mapping = _as_mapping(qconfig_mapping, fn)
    try:
        mapping.check_module_names(model)
    except ValueError as error:
        raise _lucidq.Error(f"{fn}: {error}") from None
    leaf_names, leaf_classes = custom_config_leaves(prepare_custom_config, fn)
    model = copy.deepcopy(model)
    tree = _Tree(mapping, leaf_names, leaf_classes, qat, fn,
                 capture_inputs(model, example_inputs) if untraceable == "split" else None)
    prepared = tree.prepare(model, "", example_inputs)
    if not isinstance(prepared, FxGraphModule):
        prepared.lucidq_fx = {"dynamic": {}, "weight_only": {}, "states": {}}
    record_paths(prepared)
    return prepared


class _Tree:
    """Prepares a module, and with untraceable="split" (captured inputs given) the parts
    of it that torch.fx cannot trace piecewise (split.py)."""

    def __init__(self, mapping, leaf_names, leaf_classes, qat, fn, captured):
        self.mapping = mapping
        self.leaf_names = leaf_names
        self.leaf_classes = leaf_classes
        self.qat = qat
        self.fn = fn
        self.captured = captured

    def prepare(self, module, prefix, example_inputs):
        """module prepared: a FxGraphModule, or (split) module itself with prepared parts."""
        leaves = [name[len(prefix):] for name in self.leaf_names if name.startswith(prefix)]
        split = []
        while True:
            try:
                gm = trace(module, leaves + split, self.leaf_classes, self.fn, FxGraphModule)
                break
            except UntraceableError as error:
                if self.captured is None:
                    raise
                _log.warning("%s", error)
                if not error.module_path:
                    self.split(module, prefix)
                    return module
                split.append(error.module_path)
        prepare_graph(gm, prefix, example_inputs, self.mapping, leaves + split,
                      self.leaf_classes, self.qat, self.fn)
        for path in split:
            self.split(gm.get_submodule(path), f"{prefix}{path}.")
        return gm

    def split(self, module, prefix):
        """Each child of `module` that ran on the example inputs, prepared on its own."""
        for name, child in list(module.named_children()):
            args = self.captured.get(id(child))
            if (f"{prefix}{name}" in self.leaf_names or isinstance(child, self.leaf_classes)
                    or not any(True for _ in child.parameters())):
                continue
            if args is None:
                self.split(child, f"{prefix}{name}.")
                continue
            try:
                prepared = self.prepare(holder(name, child, len(args)), prefix, args)
            except _lucidq.Error as error:  # that part stays float
                _log.warning("%s: %s stays float: %s", self.fn, f"{prefix}{name}", error)
                continue
            module._modules[name] = prepared
