"""fuse_modules / fuse_modules_qat: Linear+ReLU, Linear+BN1d, Conv+BN(+ReLU) in 1d/2d/3d, BN+ReLU.

For inference (fuse_modules, model in eval mode) BatchNorm is folded into the preceding
weight and bias with its running statistics:
    k = gamma / sqrt(running_var + eps),  W' = W * k (per output channel),
    b' = (b - running_mean) * k + beta.
For QAT (fuse_modules_qat, train mode) the BatchNorm stays a separate, trained part of a
fused unit (fused.LinearBn1d, ConvBn1d/2d/3d, ConvBnReLU1d/2d/3d); prepare_qat swaps the
unit for a QAT module that folds it on the fly. As torch: the first module of each group becomes the
fused module, the others become nn.Identity; the first's forward pre-hooks and the last's
forward hooks move to the fused module.
"""

import copy

import torch
from torch import nn

from . import fused

__all__ = ["fuse_modules", "fuse_modules_qat", "fold_batch_norm"]


def fold_batch_norm(module, bn):
    """A copy of Linear / Conv1d / Conv2d / Conv3d `module` with the eval-mode BatchNorm `bn`
    folded in."""
    if bn.num_features != module.weight.shape[0]:
        raise ValueError(
            f"fuse: {type(bn).__name__} has {bn.num_features} features but the "
            f"{type(module).__name__} before it has {module.weight.shape[0]} outputs"
        )
    folded = copy.deepcopy(module)
    with torch.no_grad():
        inv_std = torch.rsqrt(bn.running_var + bn.eps)
        k = inv_std if bn.weight is None else bn.weight * inv_std
        beta = torch.zeros_like(k) if bn.bias is None else bn.bias
        bias = torch.zeros_like(k) if module.bias is None else module.bias
        shape = (-1,) + (1,) * (module.weight.dim() - 1)
        folded.weight = nn.Parameter(module.weight * k.reshape(shape))
        folded.bias = nn.Parameter((bias - bn.running_mean) * k + beta)
    return folded


def _eval_only(kinds):
    def check(modules):
        if any(m.training for m in modules):
            raise ValueError(
                f"fuse_modules: {'+'.join(kinds)} folds BatchNorm with its running statistics, "
                "so the model must be in eval mode (call model.eval(), or use fuse_modules_qat "
                "for training)"
            )

    return check


def _fold(module, bn):
    _eval_only((type(module).__name__, type(bn).__name__))((module, bn))
    return fold_batch_norm(module, bn)


def _fold_relu(fused_type):
    """The builder of fused_type (a fused ConvReLU) from Conv, BatchNorm and ReLU."""

    def build(conv, bn, relu):
        _eval_only((type(conv).__name__, type(bn).__name__, "ReLU"))((conv, bn))
        return fused_type(fold_batch_norm(conv, bn), relu)

    return build


# (types in order) -> builder of the fused module, for inference and for QAT
_EVAL = {
    (nn.Linear, nn.ReLU): fused.LinearReLU,
    (nn.Linear, nn.BatchNorm1d): _fold,
    (nn.Conv1d, nn.ReLU): fused.ConvReLU1d,
    (nn.Conv1d, nn.BatchNorm1d): _fold,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): _fold_relu(fused.ConvReLU1d),
    (nn.Conv2d, nn.ReLU): fused.ConvReLU2d,
    (nn.Conv2d, nn.BatchNorm2d): _fold,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): _fold_relu(fused.ConvReLU2d),
    (nn.Conv3d, nn.ReLU): fused.ConvReLU3d,
    (nn.Conv3d, nn.BatchNorm3d): _fold,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): _fold_relu(fused.ConvReLU3d),
    (nn.BatchNorm2d, nn.ReLU): fused.BNReLU2d,
    (nn.BatchNorm3d, nn.ReLU): fused.BNReLU3d,
}
_QAT = {
    (nn.Linear, nn.ReLU): fused.LinearReLU,
    (nn.Linear, nn.BatchNorm1d): fused.LinearBn1d,
    (nn.Conv1d, nn.ReLU): fused.ConvReLU1d,
    (nn.Conv1d, nn.BatchNorm1d): fused.ConvBn1d,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): fused.ConvBnReLU1d,
    (nn.Conv2d, nn.ReLU): fused.ConvReLU2d,
    (nn.Conv2d, nn.BatchNorm2d): fused.ConvBn2d,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fused.ConvBnReLU2d,
    (nn.Conv3d, nn.ReLU): fused.ConvReLU3d,
    (nn.Conv3d, nn.BatchNorm3d): fused.ConvBn3d,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): fused.ConvBnReLU3d,
    (nn.BatchNorm2d, nn.ReLU): fused.BNReLU2d,
    (nn.BatchNorm3d, nn.ReLU): fused.BNReLU3d,
}


def fuse_modules(model, modules_to_fuse, inplace=False):
    """Fuses each group of submodules named in modules_to_fuse (a list of dotted names, or a
    list of such lists), for inference: the model must be in eval mode when a group has a
    BatchNorm. Returns the fused model (a copy unless inplace)."""
    return _fuse(model, modules_to_fuse, inplace, _EVAL, "fuse_modules")


def fuse_modules_qat(model, modules_to_fuse, inplace=False):
    """As fuse_modules, for quantization-aware training: BatchNorm is kept (trained) inside
    the fused unit, and prepare_qat turns the unit into a QAT module."""
    return _fuse(model, modules_to_fuse, inplace, _QAT, "fuse_modules_qat")


def _fuse(model, modules_to_fuse, inplace, table, fn):
    if not inplace:
        model = copy.deepcopy(model)
    groups = list(modules_to_fuse)
    if groups and all(isinstance(name, str) for name in groups):
        groups = [groups]
    for group in groups:
        names = list(group)
        if len(names) < 2 or not all(isinstance(n, str) for n in names):
            raise ValueError(f"{fn}: group {group!r} (expected two or more dotted module names)")
        modules = [_get(model, name, fn) for name in names]
        kinds = tuple(type(m) for m in modules)
        build = table.get(kinds)
        if build is None:
            supported = ", ".join("+".join(k.__name__ for k in key) for key in table)
            raise ValueError(
                f"{fn}: cannot fuse {names} of types "
                f"{'+'.join(k.__name__ for k in kinds)} (supported: {supported})"
            )
        fused_module = build(*modules)
        fused_module.train(modules[0].training)
        _move_hooks(modules, fused_module)
        _set(model, names[0], fused_module)
        for name in names[1:]:
            identity = nn.Identity()
            identity.train(modules[0].training)
            _set(model, name, identity)
    return model


def _move_hooks(modules, fused_module):
    for hook in modules[0]._forward_pre_hooks.values():
        fused_module.register_forward_pre_hook(hook)
    modules[0]._forward_pre_hooks.clear()
    for hook in modules[-1]._forward_hooks.values():
        fused_module.register_forward_hook(hook)
    modules[-1]._forward_hooks.clear()


def _get(model, name, fn):
    module = model
    for part in name.split("."):
        children = dict(module.named_children())
        if part not in children:
            raise ValueError(f"{fn}: the model has no submodule {name!r} (no {part!r} there)")
        module = children[part]
    return module


def _set(model, name, value):
    parent, _, leaf = name.rpartition(".")
    owner = _get(model, parent, "fuse") if parent else model
    setattr(owner, leaf, value)
