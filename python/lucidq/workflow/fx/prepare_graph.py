"""One traced GraphModule made ready for calibration: qconfig per node, fusion, tensor kinds, rewrite, eager prepare.

`prefix` is the dotted path of the traced module inside the user's model ("" for the
model itself), so the mapping's module names keep referring to the model's own names when
graph mode prepares a model piecewise (untraceable="split").
"""

import copy

import torch
from torch import fx

from ... import _lucidq
from ..dynamic import WeightOnlyConfig
from ..mappings import dynamic_mapping, weight_only_mapping
from ..prepare import prepare, prepare_qat
from .fuse import fuse_graph
from .rewrite import is_dynamic, rewrite

__all__ = ["prepare_graph"]


def prepare_graph(gm, prefix, example_inputs, mapping, leaf_names, leaf_classes, qat, fn):
    """Prepares the traced FxGraphModule gm in place (its lucidq_fx plan set); leaf_names are
    relative to gm."""
    _set_node_qconfigs(gm, prefix, mapping, leaf_names, leaf_classes)
    fuse_graph(gm, qat=qat)
    _record_kinds(gm, example_inputs, fn)
    dynamic, weight_only, states = rewrite(gm, qat=qat)
    inside_dynamic, inside_weight_only = _inside_leaves(gm, prefix, mapping, leaf_names,
                                                        leaf_classes)
    for plan, found in ((dynamic, inside_dynamic), (weight_only, inside_weight_only)):
        plan.update({name: config for name, config in found.items() if name not in plan})
    gm.lucidq_fx = {"dynamic": dynamic, "weight_only": weight_only, "states": states}
    if (dynamic or weight_only) and all(m.qconfig is None for m in gm.modules()):
        return  # dynamic / weight-only entries only: nothing to observe
    (prepare_qat if qat else prepare)(gm, None, inplace=True)


def _inside_leaves(gm, prefix, mapping, leaf_names, leaf_classes):
    """({name: dynamic config}, {name: WeightOnlyConfig}) of the modules the graph does not
    call (inside leaf modules such as nn.TransformerEncoderLayer) whose mapping entry is
    dynamic or weight-only: those swaps need no graph, so they happen too; not inside
    prepare_custom_config's modules (float)."""
    dynamic_types, weight_only_types = set(dynamic_mapping()), set(weight_only_mapping())
    kept = list(leaf_names)
    kept += [name for name, m in gm.named_modules() if isinstance(m, tuple(leaf_classes))]
    dynamic, weight_only = {}, {}
    for name, module in gm.named_modules():
        if any(name == k or name.startswith(k + ".") for k in kept):
            continue
        config = mapping.qconfig_for(prefix + name, module)
        if type(module) in dynamic_types and is_dynamic(config):
            dynamic[name] = config
        elif type(module) in weight_only_types and isinstance(config, WeightOnlyConfig):
            weight_only[name] = config
    return dynamic, weight_only


def _set_node_qconfigs(gm, prefix, mapping, leaf_names, leaf_classes):
    for node in gm.graph.nodes:
        path = node.meta.get("lucidq_module", "")
        if node.op == "call_module":
            module = gm.get_submodule(node.target)
            user_leaf = node.target in leaf_names or isinstance(module, tuple(leaf_classes))
            qconfig = None if user_leaf else mapping.qconfig_for(prefix + node.target, module)
        elif node.op in ("call_function", "call_method"):
            qconfig = mapping.qconfig_for_object((prefix + path).rstrip("."), node.target)
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
