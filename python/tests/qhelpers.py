"""Shared helpers of the lucidq Python tests: dtype / scheme tables and float comparisons."""

import functools

import numpy as np

import lucidq as Q

# Every built-in grid plus the narrow-range qint8 of the max|x|/127 convention.
ALL_QDTYPES = [
    Q.qint8,
    Q.quint8,
    Q.qint4,
    Q.quint4,
    Q.qint2,
    Q.quint2,
    Q.qint16,
    Q.qint32,
    Q.qint8.narrow_range(),
]
ALL_QSCHEMES = list(Q.QScheme)


def ordered_bits(values):
    """float32 values mapped to integers that are consecutive for adjacent floats."""
    bits = np.asarray(values, np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def ulp_distance(a, b):
    """|a - b| in float32 ulps, element-wise (0 for equal values, +0 and -0 equal)."""
    return np.abs(ordered_bits(a) - ordered_bits(b))


def random_qparams(rng, qdtype, qscheme, shape, ch_axis=0, group_size=0):
    """Valid random QParams for an input of `shape` (scales log-uniform in [1e-3, 10])."""
    probe = Q.QParams(
        qscheme=qscheme,
        qdtype=qdtype,
        scale=[1.0],
        zero_point=[qdtype.symmetric_zero_point if qscheme.is_symmetric else 0],
    )
    probe.ch_axis = ch_axis
    probe.group_size = group_size
    count = int(np.prod(probe.param_shape(shape), dtype=np.int64))
    scale = np.exp(rng.uniform(np.log(1e-3), np.log(10.0), count)).astype(np.float32)
    if qscheme.is_symmetric:
        zero_point = np.full(count, qdtype.symmetric_zero_point, np.int64)
    else:
        lo, hi = qdtype.quant_min, qdtype.quant_max
        zero_point = rng.integers(lo, hi, count, endpoint=True)
    return Q.QParams(qscheme, qdtype, scale, zero_point, ch_axis, group_size)


def slot_index(shape, qparams):
    """For every element of an input of `shape`, the index of its (scale, zero_point)."""
    if not qparams.qscheme.is_per_channel:
        return np.zeros(shape, np.int64)
    axis = qparams.ch_axis % len(shape)
    channel = np.arange(shape[axis]).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    if qparams.group_size == 0:
        return np.broadcast_to(channel, shape).astype(np.int64)
    pshape = qparams.param_shape(shape)
    grids = np.indices(shape)
    grids[axis] = np.broadcast_to(channel // qparams.group_size, shape)
    return np.ravel_multi_index(tuple(grids), pshape)


@functools.lru_cache(maxsize=None)
def engine_is_exact(engine):
    """Whether `engine`'s u8 x s8 products are exact on this CPU, measured on the worst case:
    activations all 255 (dynamic qparams scale 1, zero point 0) times weights all 127
    (scale 1) must give 255 * 127 * K exactly (< 2^24, so exact in float32 too)."""
    import torch

    saved = torch.backends.quantized.engine
    torch.backends.quantized.engine = engine
    try:
        n, k = 8, 64
        w = torch.quantize_per_channel(torch.full((n, k), 127.0), torch.ones(n, dtype=torch.double),
                                       torch.zeros(n, dtype=torch.long), 0, torch.qint8)
        params = torch.ops.quantized.linear_prepack(w, None)
        y = torch.ops.quantized.linear_dynamic(torch.full((2, k), 255.0), params, False)
    finally:
        torch.backends.quantized.engine = saved
    expected = 255.0 * 127.0 * k
    got = float(y.flatten()[0])
    exact = bool(torch.all(y == expected))
    print(f"engine {engine}: 255 x 127 x K={k} gives {got:.0f} (exact {expected:.0f}): "
          f"{'exact' if exact else 'NOT exact (saturating u8 x s8 products)'}")
    return exact
