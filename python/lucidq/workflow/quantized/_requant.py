"""Exact int32 accumulators -> 8-bit output codes, with the requantization rule of lucidq's GEMM.

For the quantized modules whose integer sums are assembled in Python from lucidq's int32
kernels (Conv3d as a sum of conv2d over the depth taps, ConvTranspose as GEMM + col2im):
    out = clamp(nearbyint(acc · m[o] + o_b[o]) + z_out),
    m[o] = s_in · s_w[o] / s_out and o_b[o] = bias[o] / s_out in double,
ties to even, clamped to the grid (from z_out up with ReLU): the formula of
lucidq.gemm_requantize / conv2d_requantize, so one model requantizes one way.
"""

import numpy as np

__all__ = ["requantize_channels", "code_dtype"]


def code_dtype(qdtype):
    """The NumPy dtype of a grid's 8-bit codes."""
    return np.dtype(np.int8 if qdtype.is_signed else np.uint8)


def requantize_channels(acc, in_scale, weight_scales, bias, scale, zero_point, qdtype, relu):
    """acc: integer accumulators [B, C_out, ...] (exact); weight_scales: 1 or C_out float32;
    bias: None or float32 [C_out]; (scale, zero_point, qdtype): the output grid. Returns the
    C-contiguous 8-bit codes of acc's shape."""
    channels = acc.shape[1]
    shape = (1, channels) + (1,) * (acc.ndim - 2)
    w = np.broadcast_to(np.asarray(weight_scales, np.float32).astype(np.float64), (channels,))
    multiplier = (np.float64(np.float32(in_scale)) * w / np.float64(np.float32(scale)))
    values = acc.astype(np.float64) * multiplier.reshape(shape)
    if bias is not None:
        offset = np.asarray(bias, np.float32).astype(np.float64) / np.float64(np.float32(scale))
        values += offset.reshape(shape)
    low = max(qdtype.quant_min, zero_point) if relu else qdtype.quant_min
    codes = np.clip(np.rint(values) + zero_point, low, qdtype.quant_max)
    return np.ascontiguousarray(codes.astype(code_dtype(qdtype)))
