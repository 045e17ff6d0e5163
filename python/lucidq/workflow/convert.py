"""convert: swap each prepared (observed or QAT) module for its quantized counterpart, as torch.ao's convert.

Rules (torch 1.13 eager mode): children are converted first, depth first, except fused
units and modules the table swaps whole; a module is swapped when it has a qconfig that is
not None and its exact type is in the table; the new module keeps the old one's forward
pre-hooks and forward hooks (not the observer hook); then qconfig, observers and observer
hooks are removed everywhere, and the model is put in eval mode.
"""

import copy

import torch.ao.nn.intrinsic as _torch_fused

from . import fused
from ._hooks import PREPARE_HOOKS
from .mappings import static_mapping

__all__ = ["convert", "swap_modules", "remove_observers"]


def convert(model, mapping=None, inplace=False, remove_qconfig=True):
    """The quantized model (a copy unless inplace), in eval mode. mapping: {type: quantized
    type} (default: mappings.static_mapping()). Raises lucidq.Error naming the module when an
    observer saw no data or a module cannot be quantized as configured."""
    if not inplace:
        model = copy.deepcopy(model)
    swap_modules(model, static_mapping() if mapping is None else mapping)
    if remove_qconfig:
        remove_observers(model)
    model.eval()
    return model


def _is_unit(module, mapping):
    return (
        isinstance(module, (fused.FusedModule, _torch_fused._FusedModule))
        or type(module) in mapping
    )


def swap_modules(module, mapping):
    """Swaps, in place, every descendant with a qconfig whose type is in mapping; returns the
    number of modules swapped."""
    swapped = 0
    for name, child in list(module.named_children()):
        if not _is_unit(child, mapping):
            swapped += swap_modules(child, mapping)
        target = mapping.get(type(child))
        if target is None or getattr(child, "qconfig", None) is None:
            continue
        new = target.from_float(child)
        for hook in child._forward_pre_hooks.values():
            if hook not in PREPARE_HOOKS:
                new.register_forward_pre_hook(hook)
        for hook in child._forward_hooks.values():
            if hook not in PREPARE_HOOKS:
                new.register_forward_hook(hook)
        module._modules[name] = new
        swapped += 1
    return swapped


def remove_observers(model):
    """Deletes qconfig, the activation_post_process observers and prepare's hooks everywhere."""
    for module in model.modules():
        if "qconfig" in module.__dict__:
            del module.qconfig
        observer = module._modules.get("activation_post_process")
        if observer is not None and hasattr(observer, "calculate_qparams"):
            del module._modules["activation_post_process"]
        for hooks in (module._forward_pre_hooks, module._forward_hooks):
            for key in [k for k, hook in hooks.items() if hook in PREPARE_HOOKS]:
                del hooks[key]
