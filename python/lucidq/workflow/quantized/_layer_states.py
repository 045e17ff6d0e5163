"""The declared state (_state.py) of BatchNorm, PReLU, Conv3d, ConvTranspose, the norms, Softmax, Dropout.

Tensors carry the float module's parameter names (weight, bias, running_mean, running_var),
so load_quantized checks them against a float model; convolution weights are lucidq
QuantizedTensors of int8 codes (one scale, or one per output channel); settings are the
output grid and the layer's arguments.
"""

import numpy as np

from ... import _lucidq
from . import channel_table as _table
from . import conv as _conv
from . import conv3d as _conv3d
from . import conv_transpose as _transpose
from . import dropout as _dropout
from . import float_rule as _rule
from ._module_states import _decode_conv, _encode_conv
from ._state import declare_state
from ._state import grid_settings as _grid
from ._state import settings_qdtype as _qdtype
from ._state import with_bias as _with_bias

__all__ = []

declare_state(_conv.ConvReLU1d, _encode_conv, _decode_conv)


def _int8_weight(codes, scales):
    """int8 codes [C_out, ...] with 1 or C_out float32 scales as a symmetric QuantizedTensor."""
    scales = np.asarray(scales, np.float32).reshape(-1)
    if scales.size == 1:
        qparams = _lucidq.QParams.per_tensor(float(scales[0]), 0, _lucidq.qint8,
                                             "per_tensor_symmetric")
    else:
        qparams = _lucidq.QParams.per_channel(scales, np.zeros(scales.size, np.int32), 0,
                                              _lucidq.qint8, "per_channel_symmetric")
    codes = np.ascontiguousarray(codes, np.int8)
    return _lucidq.QuantizedTensor(codes.shape, qparams, codes.view(np.uint8).ravel())


def _codes_and_scales(weight):
    return weight.int_repr().astype(np.int8), np.asarray(weight.qparams.scale, np.float32)


# --- BatchNorm2d / 3d, BNReLU2d / 3d, PReLU ---------------------------------------------------
def _encode_batch_norm(m):
    tensors = {"weight": m.gamma, "bias": m.beta, "running_mean": m.mean, "running_var": m.var}
    return tensors, {**_grid(m), "eps": m.eps}


def _decode_batch_norm(cls, tensors, settings):
    return cls(tensors["weight"], tensors["bias"], tensors["running_mean"],
               tensors["running_var"], settings["eps"], settings["scale"],
               settings["zero_point"], _qdtype(settings))


declare_state([_table.BatchNorm2d, _table.BatchNorm3d, _table.BNReLU2d, _table.BNReLU3d],
              _encode_batch_norm, _decode_batch_norm)
declare_state(_table.PReLU, lambda m: ({"weight": m.weight}, _grid(m)),
              lambda cls, tensors, settings: cls(tensors["weight"], settings["scale"],
                                                 settings["zero_point"], _qdtype(settings)))


# --- Conv3d, ConvReLU3d -----------------------------------------------------------------------
def _encode_conv3d(m):
    settings = {**_grid(m), "stride": list(m.stride), "padding": [list(p) for p in m.padding],
                "dilation": list(m.dilation), "groups": m.taps[0].groups}
    return _with_bias({"weight": _int8_weight(m.weight_codes(), m.weight_scales)}, m.bias), \
        settings


def _decode_conv3d(cls, tensors, settings):
    codes, scales = _codes_and_scales(tensors["weight"])
    taps = [_lucidq.PackedConvWeights.pack(np.ascontiguousarray(codes[:, :, kd]), scales,
                                           groups=settings["groups"])
            for kd in range(codes.shape[2])]
    return cls(taps, scales, tensors.get("bias"), settings["stride"], settings["padding"],
               settings["dilation"], settings["scale"], settings["zero_point"], _qdtype(settings))


declare_state([_conv3d.Conv3d, _conv3d.ConvReLU3d], _encode_conv3d, _decode_conv3d)


# --- ConvTranspose1d / 2d / 3d: codes [C_out, C_in / groups, *k], torch's weight is
# [C_in, C_out / groups, *k] ------------------------------------------------------------------
_TRANSPOSE_ARGS = ("kernel_size", "stride", "padding", "output_padding", "dilation")


def _encode_transpose(m):
    settings = {**_grid(m), "groups": m.groups,
                **{k: list(getattr(m, k)) for k in _TRANSPOSE_ARGS}}
    return _with_bias({"weight": _int8_weight(m.weight_codes(), m.weight_scales)}, m.bias), \
        settings


def _decode_transpose(cls, tensors, settings):
    codes, scales = _codes_and_scales(tensors["weight"])
    return cls(_transpose.pack_groups(codes, settings["groups"]), scales, tensors.get("bias"),
               *(settings[k] for k in _TRANSPOSE_ARGS), settings["scale"],
               settings["zero_point"], _qdtype(settings))


def _transpose_shapes(tensors, settings):
    c_out, c_in_g, *kernel = tensors["weight"].shape
    groups = settings["groups"]
    shapes = {"weight": (c_in_g * groups, c_out // groups, *kernel)}
    if "bias" in tensors:
        shapes["bias"] = tuple(tensors["bias"].shape)
    return shapes


declare_state([_transpose.ConvTranspose1d, _transpose.ConvTranspose2d,
               _transpose.ConvTranspose3d], _encode_transpose, _decode_transpose,
              shapes=_transpose_shapes)


# --- LayerNorm, GroupNorm, InstanceNorm1d / 2d / 3d, Softmax: the float module's arguments
# and parameters ------------------------------------------------------------------------------
def _encode_float_rule(m):
    args = dict(m.args)
    if "normalized_shape" in args:
        args["normalized_shape"] = list(args["normalized_shape"])
    tensors = {k: v for k, v in (("weight", m.weight), ("bias", m.bias)) if v is not None}
    return tensors, {**_grid(m), "args": args}


def _decode_float_rule(cls, tensors, settings):
    return cls(settings["args"], tensors.get("weight"), tensors.get("bias"), settings["scale"],
               settings["zero_point"], _qdtype(settings))


declare_state([_rule.LayerNorm, _rule.GroupNorm, _rule.InstanceNorm1d, _rule.InstanceNorm2d,
               _rule.InstanceNorm3d, _rule.Softmax], _encode_float_rule, _decode_float_rule)
declare_state(_dropout.Dropout, lambda m: ({}, {"p": m.p}),
              lambda cls, tensors, settings: cls(settings["p"]))
