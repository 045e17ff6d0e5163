"""The graph rewrite of prepare_fx: where activations are quantized, as stubs and FloatFunctional modules eager mode understands.

Each node's output is quantized ("q"), float ("f") or not a tensor ("o"), decided in graph
order from its qconfig (node.meta["lucidq_qconfig"]) and what it is:
- a module whose type convert quantizes (static or QAT table): float inputs get a QuantStub
  (one per producer, shared by its quantized users); output quantized;
- an op that runs on torch's quantized tensors and keeps the input's grid (shape ops,
  max / average pooling, ReLU, ReLU6, hardtanh, dropout, getitem, mean, torchvision's
  stochastic_depth in eval mode): quantized when all its tensor inputs are; no observer
  (the grid is the input's, as torch.ao shares it);
- x + y, x * y between tensors and torch.cat: a FloatFunctional (add, mul, cat; add followed
  by its only user ReLU: add_relu) wrapped in a module; inputs quantized, output observed;
- x + c, x * c with a number c on a quantized x: add_scalar / mul_scalar (grid from x's);
- anything else (modules giving tuples too), any node whose qconfig is None, and the graph
  output: float; quantized inputs pass through a DeQuantStub (one per producer), so
  dequantize / quantize pairs appear only at float boundaries and never back to back.
Modules with a dynamic qconfig (nn.Linear, nn.LSTM, ...) or a WeightOnlyConfig (nn.Linear)
stay float here and are listed in the returned plan for convert_fx's quantize_dynamic /
quantize_weight_only.
"""

import operator

import torch
from torch import nn
from torch.ao.nn.quantized import FloatFunctional
from torch.fx.node import map_arg
import torch.nn.functional as F

from ..dynamic import DynamicConfig, WeightOnlyConfig
from ..mappings import dynamic_mapping, qat_mapping, static_mapping, weight_only_mapping
from ..qconfig import QConfig
from ..stubs import DeQuantStub, QuantStub
from .fuse import is_relu

__all__ = ["Functional", "rewrite", "is_dynamic"]

_KEEP_GRID_FUNCTIONS = {
    torch.flatten, torch.reshape, torch.transpose, torch.permute, torch.squeeze,
    torch.unsqueeze, torch.chunk, torch.split, torch.mean, operator.getitem,
    F.adaptive_avg_pool2d, F.avg_pool2d, F.max_pool2d, F.relu, torch.relu, F.relu6,
    F.hardtanh, F.dropout,
}
_KEEP_GRID_METHODS = {
    "view", "reshape", "flatten", "permute", "transpose", "contiguous", "squeeze",
    "unsqueeze", "chunk", "split", "mean", "relu", "relu_",
}
_KEEP_GRID_MODULES = (
    nn.Identity, nn.Dropout, nn.Flatten, nn.AdaptiveAvgPool2d, nn.AvgPool2d, nn.MaxPool2d,
    nn.ReLU, nn.ReLU6, nn.Hardtanh,
)
_ADD = {("call_function", operator.add), ("call_function", torch.add),
        ("call_method", "add")}
_MUL = {("call_function", operator.mul), ("call_function", torch.mul),
        ("call_method", "mul")}


class Functional(nn.Module):
    """One FloatFunctional method as a module, so the graph calls it like any layer.
    `op` is the FloatFunctional (quantized.QFunctional after convert); forward(x, y) for add,
    add_relu, mul; forward(x, c) for add_scalar, mul_scalar; forward(tensors) for cat."""

    def __init__(self, method, dim=0):
        super().__init__()
        self.method = method
        self.dim = dim
        self.op = FloatFunctional()

    def forward(self, *args):
        if self.method == "cat":
            return self.op.cat(args[0], dim=self.dim)
        return getattr(self.op, self.method)(*args)

    def extra_repr(self):
        return f"{self.method}, dim={self.dim}" if self.method == "cat" else self.method


def is_dynamic(qconfig):
    """Whether qconfig asks for dynamic quantization: a DynamicConfig, or a QConfig whose
    activation is a placeholder observer with a quantized compute dtype (or torch's
    is_dynamic)."""
    if isinstance(qconfig, DynamicConfig):
        return True
    if not isinstance(qconfig, QConfig) or qconfig.activation is None:
        return False
    observer = qconfig.activation()
    return bool(getattr(observer, "is_dynamic", False)
                or getattr(observer, "compute_dtype", None) is not None)


def _is_eval_stochastic_depth(node):
    """torchvision.ops.stochastic_depth(input, p, mode, training=False): the identity."""
    target = node.target
    if getattr(target, "__name__", "") != "stochastic_depth" or not getattr(
            target, "__module__", "").startswith("torchvision.ops"):
        return False
    training = node.args[3] if len(node.args) > 3 else node.kwargs.get("training", True)
    return training is False


class _Rewriter:
    def __init__(self, gm, qat):
        self.gm = gm
        self.graph = gm.graph
        self.modules = dict(gm.named_modules(remove_duplicate=False))
        self.quantizable = set(static_mapping()) | (set(qat_mapping()) if qat else set())
        self.dynamic_types = set(dynamic_mapping())
        self.weight_only_types = set(weight_only_mapping())
        self.state = {}
        self.qconfig_of = {}  # node -> the qconfig that made it quantized
        self.quant_stub_of = {}
        self.dequant_stub_of = {}
        self.module_qconfigs = {}
        self.dynamic = {}
        self.weight_only = {}
        self.erased = set()

    # --- new modules and nodes ---------------------------------------------------------------
    def _add_module(self, base, module, qconfig):
        name, index = base, 1
        while name in self.modules or hasattr(self.gm, name):
            name, index = f"{base}_{index}", index + 1
        self.gm.add_submodule(name, module)
        self.modules[name] = module
        for sub in module.modules():
            self.module_qconfigs[id(sub)] = (sub, qconfig)
        return name

    def _quantized_input(self, node, qconfig):
        if self.state.get(node) == "q":
            return node
        stub = self.quant_stub_of.get(node)
        if stub is None:
            name = self._add_module(f"{node.name}_quant", QuantStub(), qconfig)
            with self.graph.inserting_after(node):
                stub = self.graph.call_module(name, (node,))
            stub.meta = {"lucidq_kind": "float", "lucidq_module": name}
            self.state[stub] = "q"
            self.qconfig_of[stub] = qconfig
            self.quant_stub_of[node] = stub
        return stub

    def _float_input(self, node):
        if self.state.get(node) != "q" or node.meta.get("lucidq_kind") != "float":
            return node
        stub = self.dequant_stub_of.get(node)
        if stub is None:
            name = self._add_module(f"{node.name}_dequant", DeQuantStub(), self.qconfig_of[node])
            with self.graph.inserting_after(node):
                stub = self.graph.call_module(name, (node,))
            stub.meta = {"lucidq_kind": "float", "lucidq_module": name}
            self.state[stub] = "f"
            self.dequant_stub_of[node] = stub
        return stub

    def _replace_inputs(self, node, fn):
        node.args = map_arg(node.args, fn)
        node.kwargs = map_arg(node.kwargs, fn)

    def _tensor_inputs(self, node):
        inputs = []
        map_arg((node.args, node.kwargs), lambda n: inputs.append(n) if n.meta.get(
            "lucidq_kind") in ("float", "seq") else None)
        return inputs

    # --- the decision per node ---------------------------------------------------------------
    def _float(self, node):
        self._replace_inputs(node, self._float_input)
        return "f"

    def _quantized(self, node, qconfig, inputs):
        if any(n.meta.get("lucidq_kind") != "float" for n in inputs):
            return self._float(node)
        self._replace_inputs(node, lambda n: self._quantized_input(n, qconfig)
                             if n in inputs else n)
        self.qconfig_of[node] = qconfig
        return "q"

    def _as_functional(self, node, method, qconfig, args, dim=0):
        """node becomes, in place (same name), a call of a new Functional module."""
        node.op = "call_module"
        node.target = self._add_module(node.name, Functional(method, dim), qconfig)
        node.args = args
        node.kwargs = {}
        return node

    def _binary(self, node, qconfig, method):
        if len(node.args) != 2 or node.kwargs:
            return None
        x, y = node.args
        x_tensor = getattr(x, "meta", {}).get("lucidq_kind") == "float"
        y_tensor = getattr(y, "meta", {}).get("lucidq_kind") == "float"
        if x_tensor and y_tensor:
            relu = None
            users = list(node.users)
            if method == "add" and len(users) == 1 and is_relu(users[0], self.modules) \
                    and users[0].meta.get("lucidq_qconfig") is not None:
                relu, method = users[0], "add_relu"
            call = self._as_functional(node, method, qconfig, (x, y))
            if relu is not None:
                relu.replace_all_uses_with(call)
                self.graph.erase_node(relu)
                self.erased.add(relu)
            self.state[call] = self._quantized(call, qconfig, [x, y])
            return call
        if not (x_tensor or y_tensor):
            return None
        tensor, scalar = (x, y) if x_tensor else (y, x)
        if self.state.get(tensor) != "q" or not isinstance(scalar, (int, float)):
            return None
        call = self._as_functional(node, f"{method}_scalar", qconfig, (tensor, scalar))
        self.state[call] = "q"
        self.qconfig_of[call] = qconfig
        return call

    def _cat(self, node, qconfig):
        tensors = node.args[0] if node.args else node.kwargs.get("tensors")
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if not isinstance(tensors, (list, tuple)) or not isinstance(dim, int) or not all(
                getattr(t, "meta", {}).get("lucidq_kind") == "float" for t in tensors):
            return None
        call = self._as_functional(node, "cat", qconfig, (list(tensors),), dim)
        self.state[call] = self._quantized(call, qconfig, list(tensors))
        return call

    def _plan_without_calibration(self, node, qconfig):
        """Records a module with a dynamic or weight-only entry for convert_fx; whether it
        is one (it stays float in the graph)."""
        kind = type(self.modules[node.target])
        if kind in self.dynamic_types and is_dynamic(qconfig):
            self.dynamic[node.target] = qconfig
        elif kind in self.weight_only_types and isinstance(qconfig, WeightOnlyConfig):
            self.weight_only[node.target] = qconfig
        else:
            return False
        return True

    def _keeps_grid(self, node):
        if node.op == "call_function":
            return node.target in _KEEP_GRID_FUNCTIONS or _is_eval_stochastic_depth(node)
        if node.op == "call_method":
            return node.target in _KEEP_GRID_METHODS
        return node.op == "call_module" and type(self.modules[node.target]) in _KEEP_GRID_MODULES

    def visit(self, node):
        kind = node.meta.get("lucidq_kind")
        qconfig = node.meta.get("lucidq_qconfig")
        if node.op in ("placeholder", "get_attr"):
            self.state[node] = "f"
            return
        if node.op == "output":
            self._float(node)
            return
        if kind not in ("float", "seq"):
            # sizes, shapes, integer tensors: inputs as they are, except modules (LSTM's tuple)
            if node.op == "call_module":
                self._float(node)
            self.state[node] = "o"
            return
        if not isinstance(qconfig, QConfig):  # None, or a dynamic / weight-only entry
            if node.op == "call_module":
                self._plan_without_calibration(node, qconfig)
            self.state[node] = self._float(node)
            return
        key = (node.op, node.target)
        if key in _ADD or key in _MUL:
            if self._binary(node, qconfig, "add" if key in _ADD else "mul") is not None:
                return
        if key == ("call_function", torch.cat) and self._cat(node, qconfig) is not None:
            return
        inputs = self._tensor_inputs(node)
        if self._keeps_grid(node):
            states = {self.state.get(n) for n in inputs}
            if states == {"q"}:
                self.state[node] = "q"
                self.qconfig_of[node] = self.qconfig_of[inputs[0]]
            else:
                self.state[node] = self._float(node)
            return
        module = self.modules.get(node.target) if node.op == "call_module" else None
        if module is not None and not self._plan_without_calibration(node, qconfig):
            if type(module) in self.quantizable:
                target = static_mapping().get(type(module))
                if getattr(target, "WEIGHT_ONLY", False):  # embeddings: integer in, float out
                    self.state[node] = "f"
                else:
                    self.state[node] = self._quantized(node, qconfig, inputs)
                if self.state[node] == "q" or getattr(target, "WEIGHT_ONLY", False):
                    self.module_qconfigs[id(module)] = (module, qconfig)
                return
        self.state[node] = self._float(node)


def rewrite(gm, qat=False):
    """Rewrites gm in place (see the module doc) and sets every module's qconfig attribute
    for eager prepare (None where the graph keeps it float). Returns (dynamic, weight_only,
    states): {module name: dynamic config}, {module name: WeightOnlyConfig}, {node name:
    "q" / "f" / "o"}."""
    rewriter = _Rewriter(gm, qat)
    for node in list(gm.graph.nodes):
        if node not in rewriter.erased:
            rewriter.visit(node)
    for module in gm.modules():
        module.qconfig = None
    for module, qconfig in rewriter.module_qconfigs.values():
        module.qconfig = qconfig
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return (rewriter.dynamic, rewriter.weight_only,
            {n.name: s for n, s in rewriter.state.items()})
