"""GPTQ, AWQ, SmoothQuant and HQQ on a torch model's Linears (the C++ algorithms of lucidq, driven through calibration hooks)."""

import warnings

import numpy as np
import torch
from torch import nn

from .. import _lucidq
from .calibration import collect_calibration_statistics, linear_modules

__all__ = ["gptq", "awq", "smooth_quant", "hqq", "to_weight_only"]


def _weight_name(name):
    return f"{name}.weight" if name else "weight"


def _weight_array(mod):
    return mod.weight.detach().to(torch.float32).cpu().numpy()


def _set_weight(mod, values):
    with torch.no_grad():
        mod.weight.copy_(torch.from_numpy(np.ascontiguousarray(values)).to(mod.weight.dtype))


def _qdtype(dtype, symmetric):
    if dtype is None:
        return _lucidq.qint4 if symmetric else _lucidq.quint4
    return dtype


def gptq(model, calibration_batches, *, dtype=None, symmetric=False, group_size=128,
         percent_damp=0.01, block_size=128, act_order=False, static_groups=False, modules=None,
         sequential=True):
    """GPTQ on every nn.Linear of `model` (or the named `modules`), in place.

    calibration_batches: model inputs (tensor, tuple of args or dict of kwargs per batch).
    The grid: `dtype` (default quint4 affine / qint4 symmetric), `group_size` along the input
    (0: per output channel). With `sequential` (the reference's order) each Linear's statistics
    are collected with the Linears before it already quantized, so their error is compensated;
    otherwise all statistics come from the float model in one pass. Each Linear's weight is
    replaced by its dequantized GPTQ value. Returns {"<linear>.weight": result} where result has
    "quantized" (QuantizedTensor), "g_idx", "permutation", "permuted_columns", "loss",
    "dead_columns", "fell_back_to_rtn", "warning"; a Cholesky failure warns and uses RTN.
    """
    batches = list(calibration_batches)
    qdtype = _qdtype(dtype, symmetric)
    targets = linear_modules(model, modules)
    results = {}

    def quantize_one(name, mod, entry):
        r = _lucidq._gptq(_weight_array(mod), entry.hessian.sum(), qdtype, symmetric, group_size,
                          percent_damp, block_size, act_order, static_groups)
        if r["warning"]:
            warnings.warn(f"{name}: {r['warning']}", RuntimeWarning, stacklevel=3)
        _set_weight(mod, r.pop("dequantized"))
        results[_weight_name(name)] = r

    if sequential:
        for name, mod in targets:
            stats = collect_calibration_statistics(model, batches, [name])
            quantize_one(name, mod, stats[_weight_name(name)])
    else:
        stats = collect_calibration_statistics(model, batches, [name for name, _ in targets])
        for name, mod in targets:
            quantize_one(name, mod, stats[_weight_name(name)])
    return results


def _fold_into_previous(prev, scales, prev_name):
    """x -> x / s at the output of `prev` (LayerNorm-like: weight and bias; Linear: the last
    len(s) output rows and bias)."""
    s = torch.from_numpy(np.asarray(scales, dtype=np.float32))
    with torch.no_grad():
        if isinstance(prev, nn.Linear):
            if prev.out_features < s.numel():
                raise _lucidq.Error(f"{prev_name}: {prev.out_features} output rows, "
                                    f"{s.numel()} scales to fold")
            rows = slice(prev.out_features - s.numel(), prev.out_features)
            prev.weight[rows] /= s.to(prev.weight.dtype)[:, None]
            if prev.bias is not None:
                prev.bias[rows] /= s.to(prev.bias.dtype)
            return
        weight = getattr(prev, "weight", None)
        if not isinstance(weight, torch.Tensor) or weight.dim() != 1 or weight.numel() != s.numel():
            raise _lucidq.Error(
                f"{prev_name}: cannot fold {s.numel()} scales into a {type(prev).__name__} "
                "(expected a Linear, or a norm with a 1-D weight of that size)")
        weight /= s.to(weight.dtype)
        bias = getattr(prev, "bias", None)
        if isinstance(bias, torch.Tensor):
            bias /= s.to(bias.dtype)


def _scale_columns(mod, scales):
    with torch.no_grad():
        mod.weight *= torch.from_numpy(np.asarray(scales, dtype=np.float32)).to(mod.weight.dtype)


def _scaled_statistics(entry, scales):
    """H and mean |x| of the input x / s."""
    inv = 1.0 / np.asarray(scales, dtype=np.float64)
    return entry.hessian.sum() * inv[:, None] * inv[None, :], entry.channels.mean_abs() * inv


def awq(model, calibration_batches, groups, *, dtype=None, symmetric=False, group_size=128,
        grid_points=20, clip=True, no_clip=("q_proj", "k_proj", "query", "key"), quantize=True):
    """AWQ on `model`, in place. `groups` lists (previous module name, [Linear names]) whose
    Linears share one input produced by the previous module: a LayerNorm / RMSNorm-like module
    (1-D weight, optional bias) or a Linear (its last K output rows), with only positively
    homogeneous ops (e.g. ReLU) in between. A previous name of None means no folding: only the
    clip search applies (alpha = 0). For each group the scales s = mean|x|^alpha are searched on
    the float model's statistics and folded (prev: / s, Linears: columns * s); then, with
    `quantize`, each Linear is clipped (unless its name contains one of `no_clip`) and quantized
    onto the grid, its weight replaced by the dequantized value. Returns {"<linear>.weight":
    result} with "quantized", "scales", "alpha", "loss_per_alpha", "loss".
    """
    batches = list(calibration_batches)
    qdtype = _qdtype(dtype, symmetric)
    names = [name for _, linears in groups for name in linears]
    stats = collect_calibration_statistics(model, batches, names)
    mods = dict(linear_modules(model, names))
    all_modules = dict(model.named_modules())
    scales = {}
    results = {}
    for prev_name, linears in groups:
        first = stats[_weight_name(linears[0])]
        k = first.features
        if prev_name is None:
            s = np.ones(k, dtype=np.float32)
            search = {"alpha": 0.0, "loss_per_alpha": np.array([])}
        else:
            if prev_name not in all_modules:
                raise _lucidq.Error(f"awq: no module named {prev_name!r} in the model")
            weight = np.concatenate([_weight_array(mods[name]) for name in linears], axis=0)
            search = _lucidq._awq(weight, first.hessian.sum(), first.rows, first.channels.mean_abs(),
                                  qdtype, symmetric, group_size, grid_points, False)
            s = search["scales"]
            _fold_into_previous(all_modules[prev_name], s, prev_name)
        for name in linears:
            if stats[_weight_name(name)].features != k:
                raise _lucidq.Error(f"awq: {name} has {stats[_weight_name(name)].features} inputs, "
                                    f"{linears[0]} {k}; a group's Linears share one input")
            _scale_columns(mods[name], s)
            scales[name] = (s, search)
    if not quantize:
        return {_weight_name(name): {"scales": s, "alpha": search["alpha"],
                                     "loss_per_alpha": search["loss_per_alpha"]}
                for name, (s, search) in scales.items()}
    for name, (s, search) in scales.items():
        entry = stats[_weight_name(name)]
        h, mean_abs = _scaled_statistics(entry, s)
        do_clip = clip and not any(part in name for part in no_clip)
        r = _lucidq._awq(_weight_array(mods[name]), h, entry.rows, mean_abs, qdtype, symmetric,
                         group_size, 1, do_clip)
        _set_weight(mods[name], _lucidq.dequantize(r["quantized"]))
        results[_weight_name(name)] = {"quantized": r["quantized"], "scales": s,
                                       "alpha": search["alpha"],
                                       "loss_per_alpha": search["loss_per_alpha"],
                                       "loss": r["loss"]}
    return results


def smooth_quant(model, calibration_batches, groups, alpha=0.5):
    """SmoothQuant on `model`, in place: for each (previous norm / Linear name, [Linear names])
    of `groups`, s_j = max|X_j|^alpha / max|W_j|^(1 - alpha) (X: the Linears' shared input over
    the calibration batches, W: all their weights), folded as x / s into the previous module and
    W * s into the Linears. The float model computes the same function afterwards (up to
    rounding); quantize it for W8A8 next (e.g. prepare / convert). Returns {previous name: s}."""
    batches = list(calibration_batches)
    names = [name for _, linears in groups for name in linears]
    stats = collect_calibration_statistics(model, batches, names, hessian=False)
    mods = dict(linear_modules(model, names))
    all_modules = dict(model.named_modules())
    out = {}
    for prev_name, linears in groups:
        if prev_name not in all_modules:
            raise _lucidq.Error(f"smooth_quant: no module named {prev_name!r} in the model")
        act = stats[_weight_name(linears[0])].channels.abs_max
        s = _lucidq.smooth_quant_scales(act, [_weight_array(mods[n]) for n in linears], alpha)
        _fold_into_previous(all_modules[prev_name], s, prev_name)
        for name in linears:
            _scale_columns(mods[name], s)
        out[prev_name] = s
    return out


def hqq(model, *, dtype=None, group_size=64, modules=None, lp_norm=0.7, beta=10.0, kappa=1.01,
        iterations=20, early_stop=True, scale_search_steps=0):
    """HQQ (calibration-free) on every nn.Linear of `model` (or `modules`), in place, on an affine
    grid (default quint4, groups of 64 along the input). Returns {"<linear>.weight": result} with
    "quantized", "start_abs_error" (min-max RTN's mean |W - W_hat|) and "final_abs_error"."""
    qdtype = _qdtype(dtype, False)
    results = {}
    for name, mod in linear_modules(model, modules):
        r = _lucidq._hqq(_weight_array(mod), qdtype, group_size, lp_norm, beta, kappa, iterations,
                         early_stop, scale_search_steps)
        _set_weight(mod, _lucidq.dequantize(r["quantized"]))
        results[_weight_name(name)] = r
    return results


def to_weight_only(model, results, activations="auto"):
    """Swaps each Linear named in `results` (from gptq / awq / hqq) for the workflow's
    weight-only Linear over its QuantizedTensor (lucidq.WeightOnlyLinear.from_quantized), in place.
    GPTQ results with permuted columns (act-order, dynamic groups) are refused."""
    from ..weight_only import WeightOnlyLinear
    from .quantized.weight_only import Linear as WeightOnlyModule

    for weight_name, r in results.items():
        if r.get("permuted_columns"):
            raise _lucidq.Error(f"to_weight_only: {weight_name} has act-order groups (permuted "
                                "columns); use static_groups=True")
        path = weight_name[: -len(".weight")] if weight_name.endswith(".weight") else ""
        parent_name, _, child = path.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        mod = getattr(parent, child)
        bias = None if mod.bias is None else mod.bias.detach().to(torch.float32).cpu().numpy()
        layer = WeightOnlyLinear.from_quantized(r["quantized"], bias, activations)
        setattr(parent, child, WeightOnlyModule(layer))
    return model
