"""The state of quantized modules, declared once per type, for state_dict and save_quantized.

A quantized module keeps its weights in lucidq objects (packed GEMM weights, embedding tables)
and plain attributes, not in torch parameters. Each module type declares its state once:

    declare_state(Linear, encode, decode)            # name: "Linear" (the class name)
    declare_state(dynamic.Linear, encode, decode, name="DynamicLinear")

    encode(module) -> (tensors, settings)
        tensors:  {name: NumPy array or lucidq.QuantizedTensor}: weights, biases, tables
        settings: {key: JSON value}: output grid ("scale", "zero_point", "qdtype"), layer
                  arguments (stride, padding, mode, ...)
    decode(cls, tensors, settings) -> a new module of type cls, equal to the encoded one
        (same outputs bit for bit)
    shapes(tensors, settings) -> {name: shape}, optional (declare_state(..., shapes=...)):
        the shapes of the float module's parameters the tensors stand for, which
        load_quantized checks against a float model (default: each tensor's own shape; an
        embedding's prepacked table stands for its weight [rows, dim])

and lists QuantizedState among its base classes (`class BatchNorm2d(QuantizedState,
nn.Module)`). The declaration goes next to the class or in _module_states.py (the built-in
types). It gives the type, with nothing else to write:
- state_dict(): for a QuantizedTensor `w`: `<prefix>w` (its codes in its shape, int8 for a
  signed grid, uint8 otherwise), `<prefix>w.scale` (float32 scales, shaped as its parameters),
  `<prefix>w.zero_point` (asymmetric grids only) and its grid in the extra state; other arrays
  as tensors `<prefix><name>`; the settings "scale" and "zero_point" (an output grid) as
  0-d tensors `<prefix>scale` (float64, so any Python float is kept exactly) and
  `<prefix>zero_point` (int64); the type name and the other settings as the extra state
  `<prefix>_extra_state` (a dict of plain values, as torch.save pickles it).
- load_state_dict(): checks the type and every tensor's shape and dtype against the module's
  own, reports a mismatch through torch's error list in torch's words ("size mismatch for
  <key>: copying a param with shape ... from checkpoint, the shape in current model is ...",
  so strict or not, load_state_dict raises), missing and unexpected keys as torch does (a
  missing key keeps the module's value), then decodes a new module and takes over its
  attributes and children (cached kernels and tables start empty).
- save_quantized / load_quantized (save.py): the same tensors in the file, the settings in
  its `lucidq.model` description.
The declared state is the whole state: parameters or buffers registered on a quantized module
are not saved (declare them as tensors).
"""

import collections

import numpy as np
import torch
from torch import nn

from ... import _lucidq

__all__ = ["QuantizedState", "declare_state", "declared_types", "encode_module",
           "decode_module", "float_shapes", "param_shape", "split_quantized", "join_quantized",
           "grid_settings", "settings_qdtype", "with_bias"]

EXTRA_KEY = "_extra_state"
GRID_TENSORS = {"scale": torch.float64, "zero_point": torch.int64}

Declaration = collections.namedtuple("Declaration", "cls name encode decode shapes")
_BY_TYPE = {}
_BY_NAME = {}
_MODULE_INTERNALS = frozenset(vars(nn.Module()))


def declare_state(classes, encode, decode, name=None, shapes=None):
    """Declares the state of one class or a list of classes (see the module doc). name: the
    type's name in state dicts and checkpoints (default the class name); shapes(tensors,
    settings) -> {name: shape}: the shapes of the float module's parameters the tensors
    replace, which load_quantized checks against the model (default: each tensor's shape)."""
    for cls in classes if isinstance(classes, (list, tuple)) else [classes]:
        declared = Declaration(cls, name or cls.__name__, encode, decode, shapes)
        if declared.name in _BY_NAME and _BY_NAME[declared.name].cls is not cls:
            raise ValueError(f"declare_state: the name {declared.name!r} is already declared for "
                             f"{_BY_NAME[declared.name].cls.__qualname__}")
        _BY_TYPE[cls] = declared
        _BY_NAME[declared.name] = declared


def declared_types():
    """{type name: class} of every declared module type."""
    return {name: declared.cls for name, declared in _BY_NAME.items()}


def _declaration(module):
    declared = _BY_TYPE.get(type(module))
    if declared is None:
        raise _lucidq.Error(f"{type(module).__qualname__}: declares no state (declare_state in "
                            "lucidq.workflow.quantized._state)")
    return declared


def encode_module(module):
    """(type name, tensors, settings) of a declared module, or None for any other module."""
    declared = _BY_TYPE.get(type(module))
    if declared is None:
        return None
    tensors, settings = declared.encode(module)
    return declared.name, tensors, settings


def _named(name):
    declared = _BY_NAME.get(name)
    if declared is None:
        raise _lucidq.Error(f"unknown quantized module type {name!r} (expected one of "
                            f"{sorted(_BY_NAME)})")
    return declared


def decode_module(name, tensors, settings):
    """A new module of the declared type `name` from its tensors and settings; lucidq.Error
    for an unknown name."""
    declared = _named(name)
    return declared.decode(declared.cls, tensors, settings)


def float_shapes(name, tensors, settings):
    """{parameter name: shape tuple} of the float module that a module of the declared type
    `name` with these tensors and settings replaces (see declare_state)."""
    declared = _named(name)
    if declared.shapes is not None:
        return {key: tuple(shape) for key, shape in declared.shapes(tensors, settings).items()}
    return {key: tuple(value.shape) for key, value in tensors.items()}


# --- QuantizedTensor <-> plain arrays --------------------------------------------------------
def param_shape(qt):
    """The shape of QuantizedTensor qt's scales: [] per tensor, [C] per channel, the weight's
    shape with the group axis divided by the group size for groups."""
    p, shape = qt.qparams, list(qt.shape)
    if not p.qscheme.is_per_channel:
        return []
    if p.group_size:
        shape[p.ch_axis] = -(-shape[p.ch_axis] // p.group_size)
        return shape
    return [shape[p.ch_axis]]


def _code_type(qdtype):
    if qdtype.bits > 8:
        return np.int16 if qdtype.bits <= 16 else np.int32
    return np.int8 if qdtype.is_signed else np.uint8


def split_quantized(qt):
    """(codes in qt's shape, float32 scales, zero points or None when symmetric, grid dict)."""
    p = qt.qparams
    codes = qt.int_repr().astype(_code_type(p.qdtype))
    shape = param_shape(qt)
    scale = np.asarray(p.scale, np.float32).reshape(shape)
    zero_point = None
    if not p.qscheme.is_symmetric:
        zero_point = np.asarray(p.zero_point).astype(_code_type(p.qdtype)).reshape(shape)
    grid = {"qdtype": p.qdtype.name, "qscheme": str(p.qscheme), "ch_axis": int(p.ch_axis),
            "group_size": int(p.group_size)}
    return codes, scale, zero_point, grid


def join_quantized(codes, scale, zero_point, grid):
    """The QuantizedTensor split_quantized split."""
    qdtype = _lucidq.QDtype(grid["qdtype"])
    qscheme = _lucidq.qscheme_from_string(grid["qscheme"])
    scale = np.asarray(scale, np.float32).reshape(-1)
    if zero_point is None:
        zero_point = np.full(scale.shape, qdtype.symmetric_zero_point, np.int64)
    qparams = _lucidq.QParams(qscheme, qdtype, scale, np.asarray(zero_point, np.int64).reshape(-1),
                              grid["ch_axis"], grid["group_size"])
    codes = np.ascontiguousarray(codes)
    if qdtype.bits < 8:
        storage = _lucidq.pack_codes(codes.astype(np.int32).ravel(), qdtype)
    else:
        storage = codes.view(np.uint8).ravel()
    return _lucidq.QuantizedTensor(codes.shape, qparams, storage)


# --- torch's state_dict protocol -------------------------------------------------------------
def _state_entries(module):
    """(tensors {key suffix: torch tensor}, extra state dict) of a declared module."""
    declared = _declaration(module)
    arrays, settings = declared.encode(module)
    tensors, quantized, rest = {}, {}, {}
    for name, value in arrays.items():
        if isinstance(value, _lucidq.QuantizedTensor):
            codes, scale, zero_point, quantized[name] = split_quantized(value)
            tensors[name] = torch.from_numpy(codes)
            tensors[f"{name}.scale"] = torch.from_numpy(scale)
            if zero_point is not None:
                tensors[f"{name}.zero_point"] = torch.from_numpy(zero_point)
        else:
            tensors[name] = torch.from_numpy(np.array(value))
    for key, value in settings.items():
        if key in GRID_TENSORS:
            tensors[key] = torch.tensor(value, dtype=GRID_TENSORS[key])
        else:
            rest[key] = value
    return tensors, {"type": declared.name, "settings": rest, "quantized": quantized}


def _decode_entries(declared, tensors, extra):
    """The module the state entries (as _state_entries gives) describe."""
    settings = dict(extra["settings"])
    arrays, used = {}, set()
    for name, grid in extra["quantized"].items():
        zero_point = tensors.get(f"{name}.zero_point")
        arrays[name] = join_quantized(
            tensors[name].numpy(), tensors[f"{name}.scale"].numpy(),
            None if zero_point is None else zero_point.numpy(), grid)
        used.update((name, f"{name}.scale", f"{name}.zero_point"))
    for key, value in tensors.items():
        if key in GRID_TENSORS:
            settings[key] = value.item()
        elif key not in used:
            arrays[key] = np.ascontiguousarray(value.numpy())
    return declared.decode(declared.cls, arrays, settings)


class QuantizedState:
    """Mixin (before nn.Module in the bases) giving a declared quantized module torch's
    state_dict / load_state_dict (see the module doc)."""

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        tensors, extra = _state_entries(self)
        for name, tensor in tensors.items():
            destination[prefix + name] = tensor
        destination[prefix + EXTRA_KEY] = extra

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        declared = _declaration(self)
        own, own_extra = _state_entries(self)
        given = {key[len(prefix):]: value for key, value in state_dict.items()
                 if key.startswith(prefix)
                 and key[len(prefix):].split(".", 1)[0] not in self._modules}
        if strict:
            missing_keys.extend(prefix + name for name in [*own, EXTRA_KEY] if name not in given)
            unexpected_keys.extend(prefix + name for name in given
                                   if name not in own and name != EXTRA_KEY)
        extra = given.get(EXTRA_KEY, own_extra)
        where = prefix[:-1] or type(self).__name__
        if not (isinstance(extra, dict) and {"type", "settings", "quantized"} <= set(extra)):
            error_msgs.append(f"While loading {where}: {prefix + EXTRA_KEY} is a "
                              f"{type(extra).__name__} (expected the dict a lucidq quantized "
                              "module's state_dict holds)")
            return
        if extra["type"] != declared.name:
            error_msgs.append(f"While loading {where}: the checkpoint holds a {extra['type']} "
                              f"(the module in current model is a {declared.name})")
            return
        tensors, ok = {}, True
        for name, mine in own.items():
            value = given.get(name, mine)
            if not torch.overrides.is_tensor_like(value):
                error_msgs.append(f'While copying the parameter named "{prefix + name}", expected '
                                  f"torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                ok = False
            elif value.shape != mine.shape:
                error_msgs.append(f"size mismatch for {prefix + name}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model is "
                                  f"{mine.shape}.")
                ok = False
            elif value.dtype != mine.dtype:
                error_msgs.append(f"dtype mismatch for {prefix + name}: copying a param of dtype "
                                  f"{value.dtype} from checkpoint, the dtype in current model is "
                                  f"{mine.dtype}.")
                ok = False
            else:
                tensors[name] = value.detach().cpu()
        if not ok:
            return
        try:
            fresh = _decode_entries(declared, tensors, extra)
        except (ValueError, TypeError, KeyError) as error:
            error_msgs.append(f"While loading {where}: {error}")
            return
        for key, value in vars(fresh).items():
            if key not in _MODULE_INTERNALS:
                setattr(self, key, value)
        for key, child in fresh._modules.items():
            self._modules[key] = child


# Helpers for encode / decode functions.
def grid_settings(module):
    """The output grid of a module as settings: scale, zero_point and the qdtype's name."""
    return {"scale": module.scale, "zero_point": module.zero_point, "qdtype": module.qdtype.name}


def settings_qdtype(settings):
    """The lucidq QDtype named in settings["qdtype"]."""
    return _lucidq.QDtype(settings["qdtype"])


def with_bias(tensors, bias):
    """tensors with "bias" added when bias is not None."""
    if bias is not None:
        tensors["bias"] = bias
    return tensors
