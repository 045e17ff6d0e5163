"""The hooks prepare registers (convert drops exactly these and keeps the user's)."""

import torch

from .. import _lucidq
from ._paths import label

__all__ = ["observe_output_hook", "check_linear_input_hook", "PREPARE_HOOKS"]


def observe_output_hook(module, inputs, output):
    """The forward hook prepare registers: the output goes through the module's observer."""
    return module.activation_post_process(output)


def check_linear_input_hook(module, inputs):
    """The forward pre-hook prepare registers on Linear modules: a clear shape error."""
    x = inputs[0] if inputs else None
    if isinstance(x, torch.Tensor) and (x.dim() < 1 or x.shape[-1] != module.in_features):
        raise _lucidq.Error(
            f"{label(module)}: input has shape {tuple(x.shape)} (expected [..., "
            f"{module.in_features}], in_features = {module.in_features})"
        )


PREPARE_HOOKS = (observe_output_hook, check_linear_input_hook)
