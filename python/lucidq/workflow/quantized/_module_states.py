"""The declared state (_state.py) of lucidq's built-in quantized module types.

Weights are lucidq QuantizedTensors (int8 per-channel codes for the GEMM and convolution
weights, 4- or 8-bit group codes for weight-only ones), embedding tables torch's prepacked rows,
biases float32 arrays; settings are the output grid and the layer's arguments.
"""

import numpy as np
from torch import nn

from ... import _lucidq
from ...nn import DynamicQuantizedLinear
from ...weight_only import WeightOnlyLinear
from . import activation as _act
from . import conv as _conv
from . import dynamic as _dynamic
from . import dynamic_rnn as _dynamic_rnn
from . import embedding as _embedding
from . import functional as _functional
from . import linear as _linear
from . import pool as _pool
from . import stubs as _stubs
from . import weight_only as _weight_only
from ._state import declare_state
from ._state import grid_settings as _grid
from ._state import settings_qdtype as _qdtype
from ._state import with_bias as _with_bias

__all__ = []

_ACTIVATION_ARGS = ("alpha", "negative_slope", "approximate", "inplace")
_POOL_ARGS = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")


def _int8_packed(weight):
    codes = weight.int_repr().astype(np.int8)
    return _lucidq.PackedWeightsInt8.pack(codes, np.asarray(weight.qparams.scale, np.float32))


# --- Linear, LinearReLU ----------------------------------------------------------------------
def _encode_linear(m):
    return _with_bias({"weight": m.packed_weight.to_quantized()}, m.bias), _grid(m)


def _decode_linear(cls, tensors, settings):
    return cls(_int8_packed(tensors["weight"]), tensors.get("bias"), settings["scale"],
               settings["zero_point"], _qdtype(settings))


declare_state([_linear.Linear, _linear.LinearReLU], _encode_linear, _decode_linear)


# --- dynamic Linear --------------------------------------------------------------------------
def _encode_dynamic(m):
    layer = m.layer
    tensors = _with_bias({"weight": layer.packed_weight.to_quantized()}, layer.bias)
    return tensors, {"per_row": layer.per_row, "qdtype": layer.qdtype.name}


def _decode_dynamic(cls, tensors, settings):
    return cls(_int8_packed(tensors["weight"]), tensors.get("bias"), per_row=settings["per_row"],
               qdtype=_qdtype(settings))


declare_state(_dynamic.Linear, _encode_dynamic, _decode_dynamic, name="DynamicLinear")


# --- dynamic LSTM, GRU and cells: torch's parameter names (weight_ih_l0, bias_hh_l1_reverse, ...)
def _encode_recurrent(m):
    tensors = {}
    for name, layer in m.products.items():
        tensors[f"weight_{name}"] = layer.packed_weight.to_quantized()
        if layer.bias is not None:
            tensors[f"bias_{name}"] = layer.bias
    first = next(iter(m.products.values()))
    return tensors, {"settings": m.settings(), "per_row": first.per_row,
                     "qdtype": first.qdtype.name}


def _decode_recurrent(cls, tensors, settings):
    products = {
        name: DynamicQuantizedLinear(_int8_packed(tensors[f"weight_{name}"]),
                                     tensors.get(f"bias_{name}"), per_row=settings["per_row"],
                                     qdtype=_qdtype(settings))
        for name in cls.names_of(settings["settings"])}
    return cls(products, **settings["settings"])


for _cls in (_dynamic_rnn.LSTM, _dynamic_rnn.GRU, _dynamic_rnn.LSTMCell, _dynamic_rnn.GRUCell,
             _dynamic_rnn.RNNCell):
    declare_state(_cls, _encode_recurrent, _decode_recurrent, name=f"Dynamic{_cls.__name__}")


# --- weight-only Linear ----------------------------------------------------------------------
def _encode_weight_only(m):
    layer = m.layer
    tensors = _with_bias({"weight": layer.to_quantized()}, layer.bias)
    return tensors, {"scale_type": layer.format["scale_type"], "activations": layer.activations}


def _decode_weight_only(cls, tensors, settings):
    return cls(WeightOnlyLinear.from_quantized(tensors["weight"], tensors.get("bias"),
                                               settings["activations"]))


declare_state(_weight_only.Linear, _encode_weight_only, _decode_weight_only,
              name="WeightOnlyLinear")


# --- Conv1d, Conv2d, ConvReLU2d --------------------------------------------------------------
def _encode_conv(m):
    codes = m.packed_weight.unpack()  # [C_out, C_in / groups, KH, KW]
    if m.SPATIAL_DIMS == 1:
        codes = codes[:, :, 0, :]
    scales = m.packed_weight.scales
    qparams = _lucidq.QParams.per_channel(scales, np.zeros(len(scales), np.int32), 0,
                                          _lucidq.qint8, "per_channel_symmetric")
    weight = _lucidq.QuantizedTensor(codes.shape, qparams,
                                     np.ascontiguousarray(codes).view(np.uint8).ravel())
    settings = {**_grid(m), "stride": list(m.stride),
                "padding": m.padding if isinstance(m.padding, str) else list(m.padding),
                "dilation": list(m.dilation), "groups": m.packed_weight.groups}
    return _with_bias({"weight": weight}, m.bias), settings


def _decode_conv(cls, tensors, settings):
    weight = tensors["weight"]
    codes = weight.int_repr().astype(np.int8)
    if cls.SPATIAL_DIMS == 1:
        codes = codes[:, :, None, :]
    packed = _lucidq.PackedConvWeights.pack(
        codes, np.asarray(weight.qparams.scale, np.float32), groups=settings["groups"])
    padding = settings["padding"]
    return cls(packed, tensors.get("bias"), tuple(settings["stride"]),
               padding if isinstance(padding, str) else tuple(padding),
               tuple(settings["dilation"]), settings["scale"], settings["zero_point"],
               _qdtype(settings))


declare_state([_conv.Conv1d, _conv.Conv2d, _conv.ConvReLU2d], _encode_conv, _decode_conv)


# --- Embedding, EmbeddingBag -----------------------------------------------------------------
def _encode_embedding(m):
    settings = {"bits": m.table.bits, "dim": m.table.dim, "padding_idx": m.padding_idx}
    if isinstance(m, _embedding.EmbeddingBag):
        settings.update(mode=m.mode, include_last_offset=m.include_last_offset)
    return {"prepacked": m.table.prepacked()}, settings  # torch's prepacked rows


def _decode_embedding(cls, tensors, settings):
    table = _lucidq.QuantizedEmbeddingTable.from_prepacked(tensors["prepacked"], settings["dim"],
                                                           settings["bits"])
    if cls is _embedding.EmbeddingBag:
        return cls(table, settings["mode"], settings["include_last_offset"],
                   settings["padding_idx"])
    return cls(table, settings["padding_idx"])


def _embedding_shapes(tensors, settings):
    return {"weight": (tensors["prepacked"].shape[0], settings["dim"])}


declare_state([_embedding.Embedding, _embedding.EmbeddingBag], _encode_embedding,
              _decode_embedding, shapes=_embedding_shapes)


# --- stubs, pooling, activations, QFunctional ------------------------------------------------
declare_state(_stubs.Quantize, lambda m: ({}, _grid(m)),
              lambda cls, tensors, settings: cls(settings["scale"], settings["zero_point"],
                                                 _qdtype(settings)))
declare_state(_stubs.DeQuantize, lambda m: ({}, {}), lambda cls, tensors, settings: cls())
declare_state(_functional.QFunctional, lambda m: ({}, _grid(m)),
              lambda cls, tensors, settings: cls(settings["scale"], settings["zero_point"],
                                                 _qdtype(settings)))


def _encode_pool(m):
    return {}, {"args": {k: getattr(m.float_module, k) for k in _POOL_ARGS}}


declare_state(_pool.MaxPool2d, _encode_pool,
              lambda cls, tensors, settings: cls(nn.MaxPool2d(**settings["args"])))


def _activation_args(m):
    return {k: getattr(m.float_module, k) for k in _ACTIVATION_ARGS if hasattr(m.float_module, k)}


def _encode_clamp(m):
    return {}, {"args": _activation_args(m)}


def _decode_clamp(cls, tensors, settings):
    return cls(getattr(nn, cls.__name__)(**settings["args"]))


declare_state([_act.ReLU, _act.ReLU6], _encode_clamp, _decode_clamp)


def _encode_lookup(m):
    return {}, {**_grid(m), "args": _activation_args(m)}


def _decode_lookup(cls, tensors, settings):
    return cls(getattr(nn, cls.__name__)(**settings["args"]), settings["scale"],
               settings["zero_point"], _qdtype(settings))


declare_state([_act.Sigmoid, _act.Hardsigmoid, _act.Tanh, _act.Hardswish, _act.ELU,
               _act.LeakyReLU, _act.GELU, _act.SiLU], _encode_lookup, _decode_lookup)
