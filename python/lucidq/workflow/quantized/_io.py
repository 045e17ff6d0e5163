"""Torch tensors <-> the NumPy arrays lucidq's kernels read (zero-copy for contiguous float32)."""

import numpy as np
import torch

from ... import _lucidq
from .._paths import label

__all__ = ["float_array", "float_bias", "float_input"]


def float_array(tensor):
    """A float32 NumPy view (or copy) of a torch tensor, detached, on the CPU."""
    if tensor.dtype != torch.float32 or not tensor.is_cpu:
        tensor = tensor.to("cpu", torch.float32)
    if tensor.requires_grad:
        tensor = tensor.detach()
    return np.ascontiguousarray(tensor.numpy())


def float_bias(bias):
    return None if bias is None else float_array(bias)


def float_input(x, module, in_features):
    """x [..., in_features] as float32 NumPy; lucidq.Error naming the module otherwise."""
    if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
        kind = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else f"a {type(x).__name__}"
        raise _lucidq.Error(f"{label(module)}: input is {kind} (expected a float tensor)")
    if x.dim() < 1 or x.shape[-1] != in_features:
        raise _lucidq.Error(
            f"{label(module)}: input has shape {tuple(x.shape)} (expected [..., {in_features}], "
            f"in_features = {in_features})"
        )
    return float_array(x)
