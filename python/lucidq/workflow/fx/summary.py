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
    """Rows (dicts: node, kernel, inputs, output, quantized) with a table as str()."""

    @property
    def quantized(self):
        """How many nodes give a quantized tensor."""
        return sum(row["quantized"] for row in self)

    def __str__(self):
        lines = [f"{'node':28} {'kernel':40} {'inputs':44} output"]
        for row in self:
            lines.append(f"{row['node']:28} {row['kernel']:40} {', '.join(row['inputs']):44} "
                         f"{row['output']}")
        lines.append(f"{self.quantized} of {len(self)} nodes give quantized tensors")
        return "\n".join(lines)


class _Recorder(fx.Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.rows = Summary()
        self.values = {}

    def run_node(self, n):
        result = super().run_node(n)
        self.values[n] = result
        if n.op in ("call_module", "call_function", "call_method"):
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
            quantized = isinstance(result, torch.Tensor) and result.is_quantized or (
                isinstance(result, (tuple, list)) and bool(result) and all(
                    isinstance(v, torch.Tensor) and v.is_quantized for v in result))
            self.rows.append({"node": n.name, "kernel": kernel, "inputs": inputs,
                              "output": _grid(result), "quantized": quantized})
        return result


def summary(model, example_inputs):
    """The Summary of GraphModule `model` run on the tuple example_inputs (print it for the
    table; .quantized and len() count the nodes)."""
    recorder = _Recorder(model)
    with torch.no_grad():
        recorder.run(*example_inputs)
    return recorder.rows
