"""untraceable="split": what a module torch.fx cannot trace needs to be quantized piecewise.

A module whose forward cannot be traced keeps that forward (it runs in float, as written);
each child it calls is wrapped in a holder module, a one-call forward with the child's
arity, and traced and quantized on its own, with the inputs the child received when the
model ran on example_inputs (capture_inputs). Children never called on those inputs stay
float; containers that are not called themselves (nn.ModuleList) are searched for called
descendants.
"""

import copy

import torch
from torch import nn

__all__ = ["capture_inputs", "holder"]


def capture_inputs(model, example_inputs):
    """{id(module of model): the positional arguments of its first call} over one run of a
    copy of model on example_inputs (model itself, its statistics included, is untouched)."""
    runner = copy.deepcopy(model)
    seen = {}

    def record(module, args):
        seen.setdefault(id(module), args)

    handles = [m.register_forward_pre_hook(record) for m in runner.modules()]
    try:
        with torch.no_grad():
            runner(*example_inputs)
    finally:
        for handle in handles:
            handle.remove()
    return {id(original): seen[id(twin)]
            for original, twin in zip(model.modules(), runner.modules()) if id(twin) in seen}


def holder(name, child, arity):
    """A module whose only child is `child`, registered as `name` (so traced names match the
    model's), and whose forward(x0, ..., x{arity-1}) calls it with those arguments."""
    params = ", ".join(f"x{i}" for i in range(arity))
    namespace = {}
    exec(f"def forward(self, {params}):\n"  # noqa: S102 (a fixed template: the arity varies)
         f"    return getattr(self, self.child_name)({params})\n", namespace)
    cls = type(type(child).__name__, (nn.Module,), {"forward": namespace["forward"]})
    held = cls()
    held.child_name = name
    held.add_module(name, child)
    held.train(child.training)
    return held
