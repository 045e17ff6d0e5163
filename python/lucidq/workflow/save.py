"""save_quantized / load_quantized: a converted model as a lucidq checkpoint (docs/formats.md, format 1).

Every quantized weight is a format-1 quantized tensor `<module path>.weight` (int8 codes with
per-channel scales; weight-only: packed int4 / int8 codes with per-group scales), so
`lucidq inspect` lists it; biases and the parameters and buffers of modules left float are
kept float tensors under their state_dict names. The metadata key `lucidq.model` holds a JSON
object {module path: {"type": ..., settings}} describing each lucidq module (output grids,
dynamic and weight-only settings, activation arguments). load_quantized puts those modules
back into a model of the same structure, giving the same outputs bit for bit.
"""

import json
import os

import numpy as np
import torch
from torch import nn

from .. import _lucidq
from ..checkpoint import load_quantized_tensor, load_safetensors, save_safetensors
from . import mappings
from .quantized._state import (
    declared_types, decode_module, encode_module, float_shapes, param_shape,
)

__all__ = ["save_quantized", "load_quantized"]

MODEL_KEY = "lucidq.model"


def _tensor_metadata(name, qt, original_dtype="F32"):
    """The format-1 description of QuantizedTensor qt stored as `name` (keys in the spec's order)."""
    p = qt.qparams
    scheme = str(p.qscheme)
    bits = p.qdtype.bits
    entry = {
        "dtype": p.qdtype.name,
        "scheme": scheme,
        "axis": int(p.ch_axis) if p.qscheme.is_per_channel else 0,
        "group_size": int(p.group_size),
        "quant_min": int(p.qdtype.quant_min),
        "quant_max": int(p.qdtype.quant_max),
        "packing": {4: "packed4", 2: "packed2"}.get(bits, "none"),
        "shape": list(qt.shape),
        "original_dtype": original_dtype,
        "scale": f"{name}.scale",
    }
    if not p.qscheme.is_symmetric:
        entry["zero_point"] = f"{name}.zero_point"
    return json.dumps(entry, separators=(",", ":"))


def _code_array(qt):
    storage = np.asarray(qt.storage)
    if qt.qparams.qdtype.bits < 8:
        return storage  # packed, low bits first: the file's packing
    return storage.view(np.int8 if qt.qparams.qdtype.is_signed else np.uint8).reshape(qt.shape)


def _add_quantized(tensors, metadata, name, qt):
    tensors[name] = _code_array(qt)
    shape = param_shape(qt)
    tensors[f"{name}.scale"] = np.asarray(qt.qparams.scale, np.float32).reshape(shape)
    if not qt.qparams.qscheme.is_symmetric:
        zp_type = np.int8 if qt.qparams.qdtype.is_signed else np.uint8
        tensors[f"{name}.zero_point"] = np.asarray(qt.qparams.zero_point).astype(zp_type).reshape(shape)
    metadata[f"lucidq.tensor.{name}"] = _tensor_metadata(name, qt)


def _describe(path, module, tensors, metadata):
    """The JSON description of a lucidq module (adding its tensors), or None for other modules."""
    encoded = encode_module(module)
    if encoded is None:
        return None
    kind, arrays, settings = encoded
    for name, value in arrays.items():
        if isinstance(value, _lucidq.QuantizedTensor):
            _add_quantized(tensors, metadata, f"{path}.{name}", value)
        else:
            tensors[f"{path}.{name}"] = value
    return {"type": kind, **settings}


def save_quantized(model, path, overwrite=False):
    """Writes the converted model to `path` (safetensors, atomically). An existing file is
    replaced only with overwrite=True."""
    tensors, metadata, described = {}, {"lucidq.format": "1"}, {}
    for name, module in model.named_modules():
        if any(name.startswith(p + ".") for p in described):
            continue
        entry = _describe(name, module, tensors, metadata)
        if entry is not None:
            described[name] = entry
            continue
        for key, value in list(module.named_parameters(recurse=False)) + list(
                module.named_buffers(recurse=False)):
            if value is not None:
                full = f"{name}.{key}" if name else key
                tensors[full] = value.detach().cpu().numpy()
    if not described:
        raise _lucidq.Error(
            f"save_quantized: {type(model).__name__} has no lucidq quantized module (expected a "
            "model returned by convert, quantize_dynamic or quantize_weight_only)")
    metadata[MODEL_KEY] = json.dumps(described, separators=(",", ":"))
    save_safetensors(os.fspath(path), tensors, metadata=metadata, overwrite=overwrite)


def _saved_arrays(path, file, tensors, metadata, companions):
    """{name: NumPy array or QuantizedTensor} saved for the lucidq module at `path`."""
    prefix, arrays = f"{path}.", {}
    for key, value in tensors.items():
        if key.startswith(prefix) and key not in companions:
            quantized = f"lucidq.tensor.{key}" in metadata
            arrays[key[len(prefix):]] = load_quantized_tensor(file, key) if quantized else value
    return arrays


def _companions(metadata):
    """The names of the scale and zero-point tensors of the file's quantized tensors."""
    names = set()
    for key, value in metadata.items():
        if key.startswith("lucidq.tensor."):
            entry = json.loads(value)
            names.update(entry[k] for k in ("scale", "zero_point") if k in entry)
    return names


def _float_param(module, name):
    """The float tensor `name` of a float (or fused: its first part) module, or None."""
    value = getattr(module, name, None)
    if value is None and isinstance(module, nn.Sequential) and len(module):
        value = getattr(module[0], name, None)
    return value if isinstance(value, torch.Tensor) else None


def _sources(cls):
    """The float, QAT and fused types that convert to quantized type cls."""
    tables = (mappings.static_mapping(), mappings.dynamic_mapping(),
              mappings.weight_only_mapping())
    return {source for table in tables for source, target in table.items() if target is cls}


def _check_module(file, name, entry, arrays, current):
    """Refuses a model module `current` that the saved module cannot replace: another type, or
    other shapes (both named)."""
    kind = entry["type"]
    cls = declared_types().get(kind)
    if cls is None:
        raise _lucidq.Error(f"load_quantized: {file}: module {name!r} has unknown type {kind!r}")
    where = f"load_quantized: {file}: module {name!r}"
    sources = _sources(cls)
    if type(current) is not cls and type(current) not in sources:
        expected = sorted({f"{t.__module__}.{t.__qualname__}" for t in sources})
        raise _lucidq.Error(
            f"{where} is a {kind} in the checkpoint but a {type(current).__qualname__} in the "
            f"model (expected a {cls.__qualname__} or a module converting to it: "
            f"{', '.join(expected) or 'none'})")
    saved = float_shapes(kind, arrays, entry)
    if type(current) is cls:
        _, own_arrays, own_settings = encode_module(current)
        model = float_shapes(kind, own_arrays, own_settings)
    else:
        model = {key: tuple(value.shape) for key in ("weight", "bias", *saved)
                 if (value := _float_param(current, key)) is not None}
    for key in [*saved, *(key for key in model if key not in saved)]:
        if key in saved and key in model:
            if saved[key] != model[key]:
                raise _lucidq.Error(f"{where}: {key} has shape {list(saved[key])} in the "
                                    f"checkpoint but {list(model[key])} in the model")
        elif key == "bias" and key in saved and type(current) is not cls:
            continue  # a float conv without bias whose BatchNorm the saved bias folds in
        else:
            side, other = ("checkpoint", "model") if key in saved else ("model", "checkpoint")
            shape = list(saved.get(key, model.get(key)))
            raise _lucidq.Error(f"{where}: the {side} has {key} of shape {shape}, the {other} "
                                "has none")


def load_quantized(path, model):
    """Puts the modules saved in `path` back into `model` (in place; returned): a model with
    the same module paths as the saved one, e.g. the float model after the same fuse_modules
    call, before prepare, or a model converted the same way. Float parameters and buffers
    saved for the other modules are copied in. Checks everything before changing the model:
    raises lucidq.Error naming the file and module path when a module is missing on either
    side (naming the side), has another type, or a tensor has another shape (both shapes)."""
    file = os.fspath(path)
    tensors, metadata = load_safetensors(file, with_metadata=True)
    if MODEL_KEY not in metadata:
        raise _lucidq.Error(f"load_quantized: {file} has no {MODEL_KEY!r} metadata (expected a "
                            "file written by save_quantized)")
    described = json.loads(metadata[MODEL_KEY])
    modules = dict(model.named_modules())
    companions = _companions(metadata)
    replacements = {}
    for name, entry in described.items():
        if name == "":
            raise _lucidq.Error(f"load_quantized: {file}: the whole model is one module "
                                "(expected a model with submodules)")
        if name not in modules:
            raise _lucidq.Error(
                f"load_quantized: {file} has module {name!r} ({entry['type']}), which the model "
                f"({type(model).__name__}) lacks")
        arrays = _saved_arrays(name, file, tensors, metadata, companions)
        _check_module(file, name, entry, arrays, modules[name])
        settings = {key: value for key, value in entry.items() if key != "type"}
        try:
            new = decode_module(entry["type"], arrays, settings)
        except (_lucidq.Error, KeyError, TypeError) as error:
            raise _lucidq.Error(f"load_quantized: {file}: module {name!r}: {error}") from None
        new._lucidq_path = name
        replacements[name] = new

    def replaced(key):
        return any(key.startswith(f"{name}.") for name in replacements)

    state = {key: value for key, value in [*model.named_parameters(), *model.named_buffers()]
             if not replaced(key)}
    saved = {key: value for key, value in tensors.items()
             if not replaced(key) and key not in companions}
    for key in sorted(set(state) | set(saved)):
        if key not in state or key not in saved:
            sides = ["the checkpoint", f"the model ({type(model).__name__})"]
            side, other = sides if key in saved else sides[::-1]
            module = key.rpartition(".")[0] or "<model>"
            raise _lucidq.Error(f"load_quantized: {file}: {side} has tensor {key!r} (module "
                                f"{module!r}), which {other} lacks")
        if tuple(state[key].shape) != saved[key].shape:
            raise _lucidq.Error(f"load_quantized: {file}: {key!r} has shape "
                                f"{list(saved[key].shape)} in the checkpoint but "
                                f"{list(state[key].shape)} in the model")
    for name, new in replacements.items():
        parent, _, leaf = name.rpartition(".")
        setattr(modules[parent] if parent else model, leaf, new)
    with torch.no_grad():
        for key, value in saved.items():
            state[key].copy_(torch.from_numpy(np.ascontiguousarray(value)))
    model.eval()
    return model
