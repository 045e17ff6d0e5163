"""The weight methods the harness compares, each quantizing every nn.Linear of a copy of a float model with lucidq."""

import copy

import lucidq as Q
import numpy as np
import torch
from lucidq.workflow.calibration import collect_calibration_statistics, linear_modules

# name -> (qdtype name, group size); int3 is quint4 restricted to codes 0..7 (8 levels, a
# 3-bit grid kept in 4-bit storage: the algorithms and the weight-only GEMM take it as is).
SETTINGS = {"int4 g128": ("quint4", 128), "int4 per-channel": ("quint4", 0),
            "int3 g128": ("quint4[0,7]", 128)}
METHODS = ("rtn", "gptq", "awq", "hqq", "hqq-scale", "weighted-rtn")


def _set_weight(mod, values):
    with torch.no_grad():
        mod.weight.copy_(torch.from_numpy(np.ascontiguousarray(values)))


def _weight(mod):
    return mod.weight.detach().to(torch.float32).numpy()


def _per_linear(model, quantize_one):
    """Applies quantize_one(name, weight array) -> QuantizedTensor to every Linear, in place."""
    results = {}
    for name, mod in linear_modules(model):
        q = quantize_one(name, _weight(mod))
        _set_weight(mod, Q.dequantize(q))
        results[f"{name}.weight"] = {"quantized": q}
    return results


def quantize_model(float_model, method, setting, calibration, float_stats, options=None):
    """A quantized deep copy of `float_model` and lucidq's results {"<linear>.weight": {
    "quantized": QuantizedTensor, ...}}: every Linear's weight holds its dequantized value.
    `calibration`: input batches; `float_stats`: collect_calibration_statistics of the float
    model on them (weighted RTN's importance, the per-column mean square input). `options`:
    extra keywords for lucidq.gptq / lucidq.awq / lucidq.hqq."""
    qdtype_name, group = SETTINGS[setting]
    qdtype = Q.QDtype(qdtype_name)
    options = dict(options or {})
    model = copy.deepcopy(float_model)
    if method == "rtn":
        results = _per_linear(model, lambda _, w: Q.quantize_rtn(w, qdtype, False, group))
    elif method == "weighted-rtn":
        def weighted(name, w):
            channels = float_stats[f"{name}.weight"].channels
            importance = channels.square_sum / channels.rows
            return Q.quantize_weighted_rtn(w, importance, qdtype, False, group)
        results = _per_linear(model, weighted)
    elif method == "gptq":
        results = Q.gptq(model, calibration, dtype=qdtype, group_size=group, **options)
    elif method == "awq":
        results = Q.awq(model, calibration, model.awq_groups(), dtype=qdtype, group_size=group,
                        **options)
    elif method in ("hqq", "hqq-scale"):
        # hqq: the published defaults (zero point only); hqq-scale adds lucidq's scale search
        steps = 5 if method == "hqq-scale" else 0
        results = Q.hqq(model, dtype=qdtype, group_size=group, scale_search_steps=steps,
                        **options)
    else:
        raise ValueError(f"method {method!r} (expected one of {', '.join(METHODS)})")
    missing = {f"{n}.weight" for n, _ in linear_modules(model)} - set(results)
    if missing:
        raise RuntimeError(f"{method}: Linears left in float: {sorted(missing)}")
    return model, results


def float_statistics(model, calibration):
    """collect_calibration_statistics of every Linear of the float model (channel statistics
    only: weighted RTN needs no H)."""
    return collect_calibration_statistics(model, calibration, hessian=False)


def to_weight_only_modules(model, results):
    """Swaps every quantized Linear for lucidq's weight-only module (the packed int4 GEMM with
    float32 activations, so only the weight error counts), in place."""
    return Q.to_weight_only(model, results, activations="float32")
