"""Crossing between torch tensors and the NumPy arrays the extension reads (torch never imported here).

torch is only touched when the caller already handed us a torch tensor, so
`import lucidq` keeps working on machines without torch.
"""

import sys

import numpy as np


def is_torch_tensor(x) -> bool:
    """True for a torch.Tensor (without importing torch when it is not loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def float_tensor_to_numpy(x, what: str):
    """(array, input_dtype) for the extension from a floating-point torch tensor.

    float32 / float16 / float64 CPU tensors are viewed without a copy (detached);
    bfloat16 travels as its bit patterns (input_dtype="bfloat16"). Other dtypes
    raise ValueError naming `what` and the dtype.
    """
    import torch

    if not x.is_floating_point():
        raise ValueError(
            f"{what}: a torch tensor of dtype {x.dtype} (expected a floating-point tensor: "
            "float32, float16, bfloat16 or float64)"
        )
    x = x.detach()
    if x.device.type != "cpu":
        x = x.cpu()
    if x.dtype == torch.bfloat16:
        return x.contiguous().view(torch.int16).numpy().view(np.uint16), "bfloat16"
    return x.numpy(), None


def integer_tensor_to_numpy(x, what: str):
    """A NumPy view of an integer torch tensor (CPU, detached); ValueError for floats."""
    if x.is_floating_point() or x.is_complex():
        raise ValueError(
            f"{what}: a torch tensor of dtype {x.dtype} (expected integer codes, e.g. int8 / uint8 "
            "/ int32)"
        )
    x = x.detach()
    return (x if x.device.type == "cpu" else x.cpu()).numpy()


def numpy_to_torch_like(array, like):
    """`array` as a torch tensor on `like`'s device (zero-copy on the CPU)."""
    import torch

    out = torch.from_numpy(np.ascontiguousarray(array))
    return out if like.device.type == "cpu" else out.to(like.device)
