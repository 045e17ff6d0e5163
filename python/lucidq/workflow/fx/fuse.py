"""Fusion by pattern on a traced graph: conv–bn(–relu), linear–bn, linear–relu, conv–relu, bn–relu.

For inference (model in eval mode) BatchNorm after Conv1d / Conv2d / Conv3d / Linear is
folded into the weight and bias (fuse.fold_batch_norm), then Conv1d / 2d / 3d, Linear or
BatchNorm2d / 3d followed by a ReLU (nn.ReLU, F.relu, torch.relu or .relu()) becomes
fused.ConvReLU1d / 2d / 3d, LinearReLU or BNReLU2d / 3d. For QAT (train mode) BatchNorm
stays a trained part of fused.ConvBn1d / 2d / 3d, ConvBnReLU1d / 2d / 3d or LinearBn1d.
A pattern fuses only when each intermediate result has one user, the first module is
called once in the graph, and the ReLU is quantized exactly when the first module is
(node.meta["lucidq_qconfig"] a static QConfig for both, or None for both). The fused
module takes the first module's name; the BatchNorm, no longer called, is removed.
"""

import torch
from torch import nn
import torch.nn.functional as F

from .. import fused
from ..fuse import fold_batch_norm
from ..qconfig import QConfig

__all__ = ["fuse_graph", "is_relu"]

_BATCH_NORM_OF = {nn.Conv1d: nn.BatchNorm1d, nn.Conv2d: nn.BatchNorm2d,
                  nn.Conv3d: nn.BatchNorm3d, nn.Linear: nn.BatchNorm1d}
_RELU_FUSED = {nn.Conv1d: fused.ConvReLU1d, nn.Conv2d: fused.ConvReLU2d,
               nn.Conv3d: fused.ConvReLU3d, nn.Linear: fused.LinearReLU,
               nn.BatchNorm2d: fused.BNReLU2d, nn.BatchNorm3d: fused.BNReLU3d}
_QAT_BN_FUSED = {nn.Conv1d: fused.ConvBn1d, nn.Conv2d: fused.ConvBn2d,
                 nn.Conv3d: fused.ConvBn3d, nn.Linear: fused.LinearBn1d}
_QAT_BN_RELU_FUSED = {nn.Conv1d: fused.ConvBnReLU1d, nn.Conv2d: fused.ConvBnReLU2d,
                      nn.Conv3d: fused.ConvBnReLU3d}


def is_relu(node, modules):
    """Whether node applies a ReLU (module, function or method form)."""
    if node.op == "call_module":
        return type(modules[node.target]) is nn.ReLU
    if node.op == "call_function":
        return node.target in (F.relu, torch.relu, torch.relu_)
    return node.op == "call_method" and node.target in ("relu", "relu_")


def _only_user(node):
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _module_of(node, modules, kinds):
    if node is not None and node.op == "call_module" and type(modules[node.target]) in kinds:
        return modules[node.target]
    return None


def _set_submodule(gm, name, module):
    parent, _, leaf = name.rpartition(".")
    setattr(gm.get_submodule(parent) if parent else gm, leaf, module)


def _replace_chain(gm, nodes, module, erased):
    """nodes[0]'s module becomes `module`; the later nodes' results are nodes[0]'s."""
    module.train(gm.get_submodule(nodes[0].target).training)
    _set_submodule(gm, nodes[0].target, module)
    nodes[-1].replace_all_uses_with(nodes[0])
    for node in reversed(nodes[1:]):
        gm.graph.erase_node(node)
        erased.add(node)


def _relu_after(node, modules):
    user = _only_user(node)
    if user is None or not is_relu(user, modules) or user.args[0] is not node:
        return None
    first, relu = node.meta.get("lucidq_qconfig"), user.meta.get("lucidq_qconfig")
    both_static = isinstance(first, QConfig) and isinstance(relu, QConfig)
    return user if both_static or (first is None and relu is None) else None


def fuse_graph(gm, qat=False):
    """Fuses the patterns of the module doc in gm (in place); returns the number fused."""
    calls = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            calls[node.target] = calls.get(node.target, 0) + 1
    count = 0
    erased = set()
    for node in list(gm.graph.nodes):
        if node in erased or node.op != "call_module" or calls.get(node.target) != 1:
            continue
        modules = dict(gm.named_modules(remove_duplicate=False))
        first = gm.get_submodule(node.target)
        kind = type(first)
        if kind not in _BATCH_NORM_OF and kind not in _RELU_FUSED:
            continue
        bn_node = _only_user(node)
        bn = _module_of(bn_node, modules, (_BATCH_NORM_OF.get(kind),))
        if bn is not None and calls.get(bn_node.target) != 1:
            bn = None
        if bn is not None and not qat and not bn.training:
            _replace_chain(gm, [node, bn_node], fold_batch_norm(first, bn), erased)
            count += 1
            bn_node = None
        if bn is not None and qat:  # BatchNorm kept in the fused unit
            if kind not in _QAT_BN_FUSED:
                continue
            relu = _relu_after(bn_node, modules) if kind in _QAT_BN_RELU_FUSED else None
            if relu is not None:
                _replace_chain(gm, [node, bn_node, relu],
                               _QAT_BN_RELU_FUSED[kind](first, bn, nn.ReLU()), erased)
            else:
                _replace_chain(gm, [node, bn_node], _QAT_BN_FUSED[kind](first, bn), erased)
            count += 1
            continue
        modules = dict(gm.named_modules(remove_duplicate=False))
        relu = _relu_after(node, modules) if kind in _RELU_FUSED else None
        if relu is not None:
            _replace_chain(gm, [node, relu],
                           _RELU_FUSED[kind](gm.get_submodule(node.target), nn.ReLU()), erased)
            count += 1
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return count
