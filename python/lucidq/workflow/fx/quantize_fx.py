"""prepare_fx, prepare_qat_fx, convert_fx, fuse_fx: graph-mode quantization of unmodified float models (torch.ao 1.13's signatures).

prepare_fx traces a copy of the model (trace.py), gives every node its qconfig from the
mapping (module name > regex > object type, which may be a module class, a function such
as operator.add or a method name > global; None keeps the node float), fuses by pattern
(fuse.py), runs the model once on example_inputs to learn which nodes are tensors, rewrites
the graph into an eager-quantizable one (rewrite.py: QuantStub / DeQuantStub at float
boundaries, FloatFunctional modules for +, * and cat) and runs eager prepare (or
prepare_qat) on it. convert_fx is eager convert on a copy, plus quantize_dynamic for the
modules the mapping gave a dynamic qconfig. The result is a torch.fx GraphModule whose
code reads as the quantized model.
"""

import copy
import logging

import torch
from torch import fx

from ... import _lucidq
from ..convert import convert
from ..dynamic import quantize_dynamic
from ..prepare import _as_mapping, prepare, prepare_qat
from ..qconfig_mapping import get_default_qat_qconfig_mapping, get_default_qconfig_mapping
from ..mappings import dynamic_mapping
from .fuse import fuse_graph
from .rewrite import is_dynamic, rewrite
from .trace import custom_config_leaves, trace

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
               _equalization_config=None, backend_config=None):
    """A traced copy of `model` with observers, ready for calibration: run it on sample
    inputs, then convert_fx. qconfig_mapping: lucidq's or torch's QConfigMapping, or a
    QConfig (its global entry); None: get_default_qconfig_mapping(). example_inputs: a tuple
    of inputs, run once. prepare_custom_config: {"non_traceable_module_name": [...],
    "non_traceable_module_class": [...]} or torch's PrepareCustomConfig (those modules are
    not traced into and stay float)."""
    return _prepare(model, qconfig_mapping, example_inputs, prepare_custom_config,
                    _equalization_config, backend_config, qat=False, fn="prepare_fx")


def prepare_qat_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None,
                   backend_config=None):
    """As prepare_fx for quantization-aware training: the model must be in train mode;
    BatchNorm stays inside fused QAT units and Linear / Conv2d become QAT modules."""
    return _prepare(model, qconfig_mapping, example_inputs, prepare_custom_config, None,
                    backend_config, qat=True, fn="prepare_qat_fx")


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
    if plan["dynamic"]:
        quantize_dynamic(model, dict(plan["dynamic"]), inplace=True)
    model.graph.lint()
    model.recompile()
    return model


def _check_unsupported(fn, **arguments):
    given = [name for name, value in arguments.items() if value]
    if given:
        raise _lucidq.Error(f"{fn}: {', '.join(given)} is not supported (pass None)")


def _prepare(model, qconfig_mapping, example_inputs, prepare_custom_config,
             equalization_config, backend_config, qat, fn):
    _check_unsupported(fn, _equalization_config=equalization_config,
                       backend_config=backend_config)
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
    gm = trace(copy.deepcopy(model), leaf_names, leaf_classes, fn, FxGraphModule)
    _set_node_qconfigs(gm, mapping, leaf_names, leaf_classes)
    fuse_graph(gm, qat=qat)
    _record_kinds(gm, example_inputs, fn)
    dynamic, states = rewrite(gm, qat=qat)
    dynamic.update(_dynamic_inside_leaves(gm, mapping, dynamic))
    gm.lucidq_fx = {"dynamic": dynamic, "states": states}
    if dynamic and all(m.qconfig is None for m in gm.modules()):
        return gm  # dynamic entries only: nothing to observe
    (prepare_qat if qat else prepare)(gm, None, inplace=True)
    return gm


def _dynamic_inside_leaves(gm, mapping, dynamic):
    """{name: qconfig} of modules the graph does not call (inside leaf modules such as
    nn.TransformerEncoderLayer) whose mapping entry is dynamic: quantize_dynamic needs no
    graph, so they are quantized too."""
    types = set(dynamic_mapping())
    found = {}
    for name, module in gm.named_modules():
        if type(module) in types and name not in dynamic:
            qconfig = mapping.qconfig_for(name, module)
            if is_dynamic(qconfig):
                found[name] = qconfig
    return found


def _set_node_qconfigs(gm, mapping, leaf_names, leaf_classes):
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        path = node.meta.get("lucidq_module", "")
        if node.op == "call_module":
            module = modules[node.target]
            user_leaf = node.target in leaf_names or isinstance(module, tuple(leaf_classes))
            qconfig = None if user_leaf else mapping.qconfig_for(node.target, module)
        elif node.op in ("call_function", "call_method"):
            qconfig = mapping.qconfig_for_object(path, node.target)
        else:
            qconfig = mapping.global_qconfig
        node.meta["lucidq_qconfig"] = qconfig


def _kind(value):
    if isinstance(value, torch.Tensor):
        return "float" if value.is_floating_point() else "tensor"
    if isinstance(value, (tuple, list)) and value and all(
            isinstance(v, torch.Tensor) and v.is_floating_point() for v in value):
        return "seq"
    return "other"


class _KindRecorder(fx.Interpreter):
    def run_node(self, n):
        result = super().run_node(n)
        n.meta["lucidq_kind"] = _kind(result)
        return result


def _record_kinds(gm, example_inputs, fn):
    """Runs a copy of gm on example_inputs, recording which nodes give tensors."""
    runner = copy.deepcopy(gm)
    try:
        with torch.no_grad():
            _KindRecorder(runner).run(*example_inputs)
    except Exception as error:  # noqa: BLE001 (the user's model on the user's inputs)
        raise _lucidq.Error(
            f"{fn}: running the traced model on example_inputs failed: "
            f"{type(error).__name__}: {error}") from error
    for node, copied in zip(gm.graph.nodes, runner.graph.nodes):
        node.meta["lucidq_kind"] = copied.meta.get("lucidq_kind", "other")
