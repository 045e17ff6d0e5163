"""summary: what a converted GraphModule computes on quantized codes, node by node.

Runs the model once on example inputs and records, for every node that computes
(call_module / call_function / call_method), its input and output grids (scale, zero
point, dtype of torch's quantized tensors; "float" otherwise) and what runs it (the
module's class or the function). Works on torch.ao's converted models too.
"""

import torch
from torch import fx

from .rewrite import Functional

__all__ = ["summary", "Summary"]


def _grid(value):
    if isinstance(value, torch.Tensor):
        if value.is_quantized:
            return f"{value.q_scale():.4g},{value.q_zero_point()},{str(value.dtype)[6:]}"
        return "float" if value.is_floating_point() else str(value.dtype)[6:]
    if isinstance(value, (tuple, list)) and value:
        return "(" + ", ".join(_grid(v) for v in value) + ")"
    return "-"


class Summary(list):
    """Rows (dicts: node, kernel, inputs, output, tensor, quantized) with a table as str()."""

    @property
    def quantized(self):
        """How many nodes give quantized tensors."""
        return sum(row["quantized"] for row in self)

    @property
    def tensors(self):
        """How many nodes give tensors (not sizes, shapes or numbers)."""
        return sum(row["tensor"] for row in self)

    def __str__(self):
        lines = [f"{'node':28} {'kernel':40} {'inputs':44} output"]
        for row in self:
            lines.append(f"{row['node']:28} {row['kernel']:40} {', '.join(row['inputs']):44} "
                         f"{row['output']}")
        lines.append(f"{self.quantized} of the {self.tensors} nodes giving tensors give quantized "
                     f"tensors ({len(self)} nodes)")
        return "\n".join(lines)


class _Recorder(fx.Interpreter):
    def __init__(self, module, prefix, rows):
        super().__init__(module)
        self.prefix = prefix
        self.rows = rows
        self.values = {}

    def run_node(self, n):
        result = super().run_node(n)
        self.values[n] = result
        nested = n.op == "call_module" and isinstance(self.module.get_submodule(n.target),
                                                      fx.GraphModule)
        if n.op in ("call_module", "call_function", "call_method") and not nested:
            if n.op == "call_module":
                module = self.module.get_submodule(n.target)
                functional = isinstance(module, Functional)
                kind = type(module.op if functional else module)
                kernel = f"{kind.__module__.split('.')[0]}:{kind.__name__}"
                if functional:
                    kernel += f".{module.method}"
            elif n.op == "call_method":
                kernel = f"Tensor.{n.target}"
            else:
                kernel = getattr(n.target, "__name__", str(n.target))
            inputs = [_grid(self.values[i]) for i in n.all_input_nodes]
            values = result if isinstance(result, (tuple, list)) and result else [result]
            tensor = all(isinstance(v, torch.Tensor) for v in values)
            quantized = tensor and all(v.is_quantized for v in values)
            self.rows.append({"node": self.prefix + n.name, "kernel": kernel, "inputs": inputs,
                              "output": _grid(result), "tensor": tensor,
                              "quantized": quantized})
        return result


def summary(model, example_inputs):
    """The Summary of `model` run on the tuple example_inputs (print it for the table;
    .quantized, .tensors and len() count the nodes). model: a converted GraphModule, or a
    model whose parts are GraphModules (prepare_fx's untraceable="split"): the nodes of every
    GraphModule in it are listed, named by its path."""
    rows = Summary()
    parts = [(name, m) for name, m in model.named_modules() if isinstance(m, fx.GraphModule)]
    for name, part in parts:
        recorder = _Recorder(part, f"{name}:" if name else "", rows)
        part.forward = recorder.run  # the instance attribute shadows the class's forward
    try:
        with torch.no_grad():
            model(*example_inputs)
    finally:
        for _, part in parts:
            del part.forward
    return rows
