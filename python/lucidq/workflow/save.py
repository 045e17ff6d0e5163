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
from ..nn import DynamicQuantizedLinear
from ..weight_only import WeightOnlyLinear
from . import quantized as q
from .quantized import activation as _act
from .quantized import dynamic as _dynamic
from .quantized import dynamic_rnn as _dynamic_rnn
from .quantized import weight_only as _weight_only

__all__ = ["save_quantized", "load_quantized"]

MODEL_KEY = "lucidq.model"
_ACTIVATION_ARGS = ("alpha", "negative_slope", "approximate", "inplace")
_LOOKUPS = {cls.__name__: cls for cls in (
    _act.Sigmoid, _act.Hardsigmoid, _act.Tanh, _act.Hardswish, _act.ELU, _act.LeakyReLU,
    _act.GELU, _act.SiLU)}
_STATIC_LINEAR = {"Linear": q.Linear, "LinearReLU": q.LinearReLU}
_CONVS = {"Conv1d": q.Conv1d, "Conv2d": q.Conv2d, "ConvReLU2d": q.ConvReLU2d}
_POOL_ARGS = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
_RECURRENT = {f"Dynamic{cls.__name__}": cls for cls in (
    _dynamic_rnn.LSTM, _dynamic_rnn.GRU, _dynamic_rnn.LSTMCell, _dynamic_rnn.GRUCell,
    _dynamic_rnn.RNNCell)}


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


def _param_shape(qt):
    p, shape = qt.qparams, list(qt.shape)
    if not p.qscheme.is_per_channel:
        return []
    if p.group_size:
        shape[p.ch_axis] = -(-shape[p.ch_axis] // p.group_size)
        return shape
    return [shape[p.ch_axis]]


def _code_array(qt):
    storage = np.asarray(qt.storage)
    if qt.qparams.qdtype.bits < 8:
        return storage  # packed, low bits first: the file's packing
    return storage.view(np.int8 if qt.qparams.qdtype.is_signed else np.uint8).reshape(qt.shape)


def _add_quantized(tensors, metadata, name, qt):
    tensors[name] = _code_array(qt)
    shape = _param_shape(qt)
    tensors[f"{name}.scale"] = np.asarray(qt.qparams.scale, np.float32).reshape(shape)
    if not qt.qparams.qscheme.is_symmetric:
        zp_type = np.int8 if qt.qparams.qdtype.is_signed else np.uint8
        tensors[f"{name}.zero_point"] = np.asarray(qt.qparams.zero_point).astype(zp_type).reshape(shape)
    metadata[f"lucidq.tensor.{name}"] = _tensor_metadata(name, qt)


def _grid(module):
    return {"scale": module.scale, "zero_point": module.zero_point, "qdtype": module.qdtype.name}


def _describe_recurrent(path, module, tensors, metadata):
    """A dynamic LSTM / GRU / cell: each weight as `<path>.weight_<name>` (torch's names:
    weight_ih_l0, weight_hh_l0_reverse, weight_ih, ...), each bias as `<path>.bias_<name>`."""
    for name, layer in module.products.items():
        weight = layer.packed_weight.to_quantized()
        _add_quantized(tensors, metadata, f"{path}.weight_{name}", weight)
        if layer.bias is not None:
            tensors[f"{path}.bias_{name}"] = layer.bias
    first = next(iter(module.products.values()))
    return {"type": f"Dynamic{type(module).__name__}", "settings": module.settings(),
            "per_row": first.per_row, "qdtype": first.qdtype.name}


def _rebuild_recurrent(path, entry, file, tensors):
    cls, settings = _RECURRENT[entry["type"]], entry["settings"]
    products = {}
    for name in cls.names_of(settings):
        weight = load_quantized_tensor(file, f"{path}.weight_{name}")
        packed = _lucidq.PackedWeightsInt8.pack(weight.int_repr().astype(np.int8),
                                                np.asarray(weight.qparams.scale, np.float32))
        products[name] = DynamicQuantizedLinear(packed, tensors.get(f"{path}.bias_{name}"),
                                                per_row=entry["per_row"],
                                                qdtype=_lucidq.QDtype(entry["qdtype"]))
    return cls(products, **settings)


def _describe(path, module, tensors, metadata):
    """The JSON description of a lucidq module (adding its tensors), or None for other modules."""
    kind = type(module)
    if kind in _RECURRENT.values():
        return _describe_recurrent(path, module, tensors, metadata)
    if kind in (q.Linear, q.LinearReLU):
        _add_quantized(tensors, metadata, f"{path}.weight", module.packed_weight.to_quantized())
        if module.bias is not None:
            tensors[f"{path}.bias"] = module.bias
        return {"type": kind.__name__, **_grid(module)}
    if kind is _dynamic.Linear:
        layer = module.layer
        _add_quantized(tensors, metadata, f"{path}.weight", layer.packed_weight.to_quantized())
        if layer.bias is not None:
            tensors[f"{path}.bias"] = layer.bias
        return {"type": "DynamicLinear", "per_row": layer.per_row, "qdtype": layer.qdtype.name}
    if kind is _weight_only.Linear:
        layer = module.layer
        _add_quantized(tensors, metadata, f"{path}.weight", layer.to_quantized())
        if layer.bias is not None:
            tensors[f"{path}.bias"] = layer.bias
        return {"type": "WeightOnlyLinear", "scale_type": layer.format["scale_type"],
                "activations": layer.activations}
    if kind in _CONVS.values():
        codes = module.packed_weight.unpack()  # [C_out, C_in / groups, KH, KW]
        if kind is q.Conv1d:
            codes = codes[:, :, 0, :]
        scales = module.packed_weight.scales
        qparams = _lucidq.QParams.per_channel(scales, np.zeros(len(scales), np.int32), 0,
                                              _lucidq.qint8, "per_channel_symmetric")
        weight = _lucidq.QuantizedTensor(codes.shape, qparams, codes.view(np.uint8).ravel())
        _add_quantized(tensors, metadata, f"{path}.weight", weight)
        if module.bias is not None:
            tensors[f"{path}.bias"] = module.bias
        return {"type": kind.__name__, **_grid(module), "stride": list(module.stride),
                "padding": module.padding if isinstance(module.padding, str) else
                list(module.padding), "dilation": list(module.dilation),
                "groups": module.packed_weight.groups}
    if kind in (q.Embedding, q.EmbeddingBag):
        tensors[f"{path}.prepacked"] = module.table.prepacked()  # torch's prepacked rows
        entry = {"type": kind.__name__, "bits": module.table.bits, "dim": module.table.dim,
                 "padding_idx": module.padding_idx}
        if kind is q.EmbeddingBag:
            entry.update(mode=module.mode, include_last_offset=module.include_last_offset)
        return entry
    if kind is q.MaxPool2d:
        m = module.float_module
        return {"type": "MaxPool2d", "args": {k: getattr(m, k) for k in _POOL_ARGS}}
    if kind is q.Quantize:
        return {"type": "Quantize", **_grid(module)}
    if kind is q.DeQuantize:
        return {"type": "DeQuantize"}
    if isinstance(module, (q.ReLU, _act._Lookup)):
        entry = {"type": kind.__name__}
        if isinstance(module, _act._Lookup):
            entry.update(_grid(module))
        args = {k: getattr(module.float_module, k) for k in _ACTIVATION_ARGS
                if hasattr(module.float_module, k)}
        entry["args"] = args
        return entry
    return None


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


def _rebuild(path, entry, file, tensors):
    kind = entry["type"]
    bias = tensors.get(f"{path}.bias")
    if kind in _STATIC_LINEAR or kind == "DynamicLinear":
        weight = load_quantized_tensor(file, f"{path}.weight")
        codes = weight.int_repr().astype(np.int8)
        packed = _lucidq.PackedWeightsInt8.pack(codes, np.asarray(weight.qparams.scale, np.float32))
        if kind == "DynamicLinear":
            module = _dynamic.Linear(packed, bias, per_row=entry["per_row"],
                                     qdtype=_lucidq.QDtype(entry["qdtype"]))
        else:
            module = _STATIC_LINEAR[kind](packed, bias, entry["scale"], entry["zero_point"],
                                          _lucidq.QDtype(entry["qdtype"]))
    elif kind in _RECURRENT:
        module = _rebuild_recurrent(path, entry, file, tensors)
    elif kind == "WeightOnlyLinear":
        weight = load_quantized_tensor(file, f"{path}.weight")
        layer = WeightOnlyLinear.from_quantized(weight, bias, entry["activations"])
        module = _weight_only.Linear(layer)
    elif kind in _CONVS:
        weight = load_quantized_tensor(file, f"{path}.weight")
        codes = weight.int_repr().astype(np.int8)
        if kind == "Conv1d":
            codes = codes[:, :, None, :]
        packed = _lucidq.PackedConvWeights.pack(
            codes, np.asarray(weight.qparams.scale, np.float32), groups=entry["groups"])
        padding = entry["padding"]
        module = _CONVS[kind](packed, bias, tuple(entry["stride"]),
                              padding if isinstance(padding, str) else tuple(padding),
                              tuple(entry["dilation"]), entry["scale"], entry["zero_point"],
                              _lucidq.QDtype(entry["qdtype"]))
    elif kind in ("Embedding", "EmbeddingBag"):
        table = _lucidq.QuantizedEmbeddingTable.from_prepacked(
            tensors[f"{path}.prepacked"], entry["dim"], entry["bits"])
        if kind == "Embedding":
            module = q.Embedding(table, entry["padding_idx"])
        else:
            module = q.EmbeddingBag(table, entry["mode"], entry["include_last_offset"],
                                    entry["padding_idx"])
    elif kind == "MaxPool2d":
        module = q.MaxPool2d(nn.MaxPool2d(**entry["args"]))
    elif kind == "Quantize":
        module = q.Quantize(entry["scale"], entry["zero_point"], _lucidq.QDtype(entry["qdtype"]))
    elif kind == "DeQuantize":
        module = q.DeQuantize()
    elif kind in ("ReLU", "ReLU6"):
        float_type = getattr(nn, kind)
        module = getattr(q, kind)(float_type(**entry["args"]))
    elif kind in _LOOKUPS:
        float_module = getattr(nn, kind)(**entry["args"])
        module = _LOOKUPS[kind](float_module, entry["scale"], entry["zero_point"],
                                _lucidq.QDtype(entry["qdtype"]))
    else:
        raise _lucidq.Error(f"load_quantized: {file}: module {path!r} has unknown type {kind!r}")
    module._lucidq_path = path or "<model>"
    return module


def load_quantized(path, model):
    """Puts the modules saved in `path` back into `model` (in place; returned): a model with
    the same module paths as the saved one, e.g. the float model after the same fuse_modules
    call, before prepare. Float parameters and buffers saved for the other modules are copied
    in. Raises lucidq.Error naming the file and module path on any mismatch."""
    file = os.fspath(path)
    tensors, metadata = load_safetensors(file, with_metadata=True)
    if MODEL_KEY not in metadata:
        raise _lucidq.Error(f"load_quantized: {file} has no {MODEL_KEY!r} metadata (expected a "
                            "file written by save_quantized)")
    described = json.loads(metadata[MODEL_KEY])
    modules = dict(model.named_modules())
    for name in described:
        if name not in modules:
            raise _lucidq.Error(f"load_quantized: {file} has module {name!r}, which the model "
                                f"({type(model).__name__}) does not have")
    for name, entry in described.items():
        if name == "":
            raise _lucidq.Error(f"load_quantized: {file}: the whole model is one module "
                                "(expected a model with submodules)")
        new = _rebuild(name, entry, file, tensors)
        parent, _, leaf = name.rpartition(".")
        setattr(modules[parent] if parent else model, leaf, new)
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    with torch.no_grad():
        for key, value in tensors.items():
            if key in state:
                target = state[key]
                if tuple(target.shape) != value.shape:
                    raise _lucidq.Error(f"load_quantized: {file}: {key!r} has shape {value.shape} "
                                        f"but the model's has {tuple(target.shape)}")
                target.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    model.eval()
    return model
