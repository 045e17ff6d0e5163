"""Calibration statistics of a torch model's Linears (H = sum x x^T, per-channel max |x|, sum |x|, sum x^2) and their safetensors file."""

import os

import numpy as np
import torch
from torch import nn

from .. import _lucidq
from ..checkpoint import load_safetensors, save_safetensors

__all__ = [
    "LinearStatistics",
    "collect_calibration_statistics",
    "save_calibration_statistics",
    "load_calibration_statistics",
]

FORMAT = "lucidq.calibration"
FORMAT_VERSION = "1"
_FIELDS = ("hessian", "abs_max", "abs_sum", "square_sum", "rows")


class LinearStatistics:
    """The statistics of one Linear's input: `hessian` (lucidq.HessianAccumulator, or None when
    not collected) and `channels` (lucidq.ChannelStats)."""

    def __init__(self, features, hessian=True, *, hessian_stats=None, channel_stats=None):
        self.hessian = hessian_stats if hessian_stats is not None else (
            _lucidq.HessianAccumulator(features) if hessian else None)
        self.channels = channel_stats if channel_stats is not None else _lucidq.ChannelStats(features)

    @property
    def features(self):
        return self.channels.features

    @property
    def rows(self):
        return self.channels.rows

    def add(self, x):
        """Adds a batch of inputs [..., K] (a torch tensor or an array)."""
        if isinstance(x, torch.Tensor):
            x = x.detach().to(torch.float32).reshape(-1, x.shape[-1]).cpu().numpy()
        if self.hessian is not None:
            self.hessian.add_rows(x)
        self.channels.add_rows(x)


def linear_modules(model, modules=None):
    """(name, nn.Linear) pairs of `model` in module order; `modules` (names) picks some."""
    found = [(name, mod) for name, mod in model.named_modules() if isinstance(mod, nn.Linear)]
    if modules is None:
        return found
    wanted = list(modules)
    by_name = dict(found)
    missing = [name for name in wanted if name not in by_name]
    if missing:
        raise _lucidq.Error(
            f"modules {missing} are not nn.Linear modules of the model "
            f"(Linears: {sorted(by_name)[:20]})")
    return [(name, by_name[name]) for name in wanted]


def run_batches(model, batches):
    """Runs every calibration batch through `model` without autograd (a tuple/list is *args,
    a dict **kwargs, anything else the one input)."""
    with torch.no_grad():
        for batch in batches:
            if isinstance(batch, (tuple, list)):
                model(*batch)
            elif isinstance(batch, dict):
                model(**batch)
            else:
                model(batch)


def collect_calibration_statistics(model, batches, modules=None, *, hessian=True):
    """Runs `batches` through `model` and returns {"<linear>.weight": LinearStatistics} for every
    nn.Linear (or the named `modules`). A Linear that saw no input raises ValueError."""
    stats = {}
    handles = []
    for name, mod in linear_modules(model, modules):
        entry = LinearStatistics(mod.in_features, hessian)
        stats[f"{name}.weight" if name else "weight"] = entry
        handles.append(mod.register_forward_pre_hook(lambda _m, args, s=entry: s.add(args[0])))
    try:
        run_batches(model, batches)
    finally:
        for handle in handles:
            handle.remove()
    idle = [name for name, entry in stats.items() if entry.rows == 0]
    if idle:
        raise _lucidq.Error(f"calibration: {idle} saw no input rows (is the batch list empty?)")
    return stats


def save_calibration_statistics(stats, path, *, overwrite=False):
    """Writes {"<tensor>": LinearStatistics} as safetensors (docs/formats.md, "Calibration
    statistics"): per tensor `<tensor>.hessian` F64 [K, K] (when collected), `.abs_max` F32 [K],
    `.abs_sum` F64 [K], `.square_sum` F64 [K], `.rows` I64 [1]."""
    tensors = {}
    for name, entry in stats.items():
        if entry.hessian is not None:
            tensors[f"{name}.hessian"] = entry.hessian.sum()
        tensors[f"{name}.abs_max"] = np.asarray(entry.channels.abs_max, dtype=np.float32)
        tensors[f"{name}.abs_sum"] = np.asarray(entry.channels.abs_sum, dtype=np.float64)
        tensors[f"{name}.square_sum"] = np.asarray(entry.channels.square_sum, dtype=np.float64)
        tensors[f"{name}.rows"] = np.array([entry.rows], dtype=np.int64)
    save_safetensors(os.fspath(path), tensors, overwrite=overwrite,
                     metadata={"format": FORMAT, "version": FORMAT_VERSION})


def load_calibration_statistics(path):
    """Reads a file written by save_calibration_statistics (or any tool writing the format)."""
    tensors, metadata = load_safetensors(os.fspath(path), with_metadata=True)
    if metadata.get("format") != FORMAT:
        raise _lucidq.Error(
            f"{os.fspath(path)}: __metadata__ format is {metadata.get('format')!r}, "
            f"expected {FORMAT!r} (a calibration statistics file)")
    names = sorted({key.rsplit(".", 1)[0] for key in tensors if key.rsplit(".", 1)[-1] in _FIELDS})
    stats = {}
    for name in names:
        missing = [f for f in _FIELDS[1:] if f"{name}.{f}" not in tensors]
        if missing:
            raise _lucidq.Error(f"{os.fspath(path)}: tensor {name!r} lacks {missing}")
        rows = int(tensors[f"{name}.rows"].reshape(-1)[0])
        channels = _lucidq.ChannelStats(tensors[f"{name}.abs_max"], tensors[f"{name}.abs_sum"],
                                        tensors[f"{name}.square_sum"], rows)
        hessian = None
        if f"{name}.hessian" in tensors:
            hessian = _lucidq.HessianAccumulator(tensors[f"{name}.hessian"], rows)
            if hessian.features != channels.features:
                raise _lucidq.Error(
                    f"{os.fspath(path)}: {name}.hessian is for {hessian.features} features, "
                    f"{name}.abs_max for {channels.features}")
        stats[name] = LinearStatistics(channels.features, hessian_stats=hessian,
                                       channel_stats=channels)
        if hessian is None:
            stats[name].hessian = None
    return stats
