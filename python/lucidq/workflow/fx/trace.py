"""Tracing for graph mode: torch.fx.symbolic_trace with leaves from prepare_custom_config and one clear error.

Every node records the dotted path of the module whose forward created it
(node.meta["lucidq_module"]: "" for the model's own forward), so QConfigMapping's module
name and regex entries apply to functions and methods too. A model that cannot be traced
raises lucidq.Error naming the module being traced, the source line of the failing call and
the prepare_custom_config entries that keep that module out of the trace.
"""

import dis
import inspect
import traceback

from torch import fx

from ... import _lucidq

__all__ = ["trace", "custom_config_leaves", "UntraceableError"]


class UntraceableError(_lucidq.Error):
    """torch.fx could not trace the model; module_path: the dotted path (relative to the
    traced module) of the module whose forward failed, "" for the traced module's own."""

    def __init__(self, message, module_path):
        super().__init__(message)
        self.module_path = module_path

_SUPPORTED_KEYS = ("non_traceable_module_name", "non_traceable_module_class")


def custom_config_leaves(prepare_custom_config, fn):
    """(names, classes) of the modules not to trace into, from torch 1.13's dict form or a
    torch.ao PrepareCustomConfig. Entries lucidq does not implement raise lucidq.Error."""
    if prepare_custom_config is None:
        return (), ()
    if hasattr(prepare_custom_config, "to_dict"):
        prepare_custom_config = prepare_custom_config.to_dict()
    if not isinstance(prepare_custom_config, dict):
        raise _lucidq.Error(
            f"{fn}: prepare_custom_config is a {type(prepare_custom_config).__name__} (expected "
            "a dict or a torch.ao.quantization.fx.custom_config.PrepareCustomConfig)")
    unsupported = [key for key, value in prepare_custom_config.items()
                   if key not in _SUPPORTED_KEYS and value]
    if unsupported:
        raise _lucidq.Error(
            f"{fn}: prepare_custom_config entries {unsupported} are not supported (supported: "
            f"{', '.join(_SUPPORTED_KEYS)})")
    names = tuple(prepare_custom_config.get("non_traceable_module_name", ()) or ())
    classes = tuple(prepare_custom_config.get("non_traceable_module_class", ()) or ())
    return names, classes


class _Proxy(fx.Proxy):
    """fx.Proxy whose tuple unpacking (`n, c, h, w = x.shape`, `x, _ = attention(...)`) works
    on Python 3.11: torch 1.13 finds the unpacking instruction at index f_lasti // 2, which
    3.11's inline caches shift, so it reports "Proxy object cannot be iterated" (or an
    IndexError); the instruction is looked up by its byte offset instead."""

    def __iter__(self):
        frame = inspect.currentframe().f_back
        for instruction in dis.get_instructions(frame.f_code):
            if instruction.offset == frame.f_lasti:
                if instruction.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(instruction.argval))
                break
        return self.tracer.iter(self)

    def __getattr__(self, name):
        return _Attribute(self, name)


class _Attribute(fx.proxy.Attribute):
    """fx's attribute proxy (`x.shape`) with _Proxy's unpacking."""

    __iter__ = _Proxy.__iter__

    def __getattr__(self, name):
        return _Attribute(self, name)


class _Tracer(fx.Tracer):
    """symbolic_trace's tracer, plus user leaves, each node's module path and _Proxy."""

    def __init__(self, leaf_names, leaf_classes):
        super().__init__()
        self.leaf_names = set(leaf_names)
        self.leaf_classes = tuple(leaf_classes)
        self.module_stack = [""]
        self.failed_in = None

    def proxy(self, node):
        return _Proxy(node, self)

    def is_leaf_module(self, m, module_qualified_name):
        return (module_qualified_name in self.leaf_names or isinstance(m, self.leaf_classes)
                or super().is_leaf_module(m, module_qualified_name))

    def call_module(self, m, forward, args, kwargs):
        name = self.path_of_module(m)
        self.module_stack.append(name)
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception:
            if self.failed_in is None:
                self.failed_in = (name, type(m))
            raise
        finally:
            self.module_stack.pop()

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["lucidq_module"] = target if kind == "call_module" else self.module_stack[-1]
        return node


def trace(model, leaf_names, leaf_classes, fn, graph_module_class=fx.GraphModule):
    """model as a torch.fx GraphModule (same submodule names); see the module doc."""
    known = {name for name, _ in model.named_modules()}
    missing = [name for name in leaf_names if name not in known]
    if missing:
        raise _lucidq.Error(
            f"{fn}: prepare_custom_config's non_traceable_module_name {missing} not found in "
            f"{type(model).__name__}")
    tracer = _Tracer(leaf_names, leaf_classes)
    try:
        graph = tracer.trace(model)
    except Exception as error:  # noqa: BLE001 (any failure inside the user's forward)
        path = tracer.failed_in[0] if tracer.failed_in is not None else ""
        raise UntraceableError(_trace_error(model, tracer, error, fn), path) from error
    return graph_module_class(tracer.root, graph, type(model).__name__)


def _trace_error(model, tracer, error, fn):
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if "/torch/fx/" not in f.filename.replace("\\", "/")]
    where = ""
    if frames:
        frame = frames[-1]
        where = f" at {frame.filename}:{frame.lineno} in {frame.name}(): `{frame.line}`"
    if tracer.failed_in is not None:
        name, kind = tracer.failed_in
        inside = f'module "{name}" ({kind.__name__})'
        way_out = (f'prepare_custom_config={{"non_traceable_module_name": ["{name}"]}} (or '
                   f'{{"non_traceable_module_class": [{kind.__name__}]}}) keeps it float and '
                   "traces the rest")
    else:
        inside = f"{type(model).__name__}.forward"
        way_out = ("the failing call is in the model's own forward: move it into a submodule "
                   'and name that submodule in prepare_custom_config={"non_traceable_module_'
                   'name": [...]} to keep it float')
    return (f"{fn}: cannot trace {type(model).__name__} with torch.fx: {inside}{where} raised "
            f"{type(error).__name__}: {error}. {way_out}; or pass untraceable=\"split\" to run "
            "the forward of each module that cannot be traced as written, in float, and trace "
            "and quantize its submodules separately")
