"""Edge cases: non-finite, empty and constant inputs; float16 / bfloat16 conversions."""

import numpy as np
import pytest

import lucidq as Q
from qhelpers import ALL_QDTYPES, ALL_QSCHEMES


@pytest.mark.parametrize("qdtype", ALL_QDTYPES, ids=str)
@pytest.mark.parametrize("scheme", ALL_QSCHEMES, ids=str)
def test_nonfinite_input(rng, qdtype, scheme):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    x[1, 5] = np.nan
    x[3] = np.nan  # a whole channel without a finite value
    qp = Q.choose_qparams(x, scheme, qdtype)
    assert np.isfinite(qp.scale).all() and (qp.scale > 0).all()
    stats = Q.observe_range(x, scheme)
    assert stats.nonfinite_count == 3 + 1 + 64
    assert np.isfinite(stats.min).all() and np.isfinite(stats.max).all()
    if scheme.is_per_channel:
        assert stats.min[3] == stats.max[3] == 0 and qp.scale[3] == Q.default_eps
    codes = Q.quantize(x, qp).int_repr()
    zp = qp.zero_point if scheme.is_per_channel else np.repeat(qp.zero_point, 4)
    assert codes[0, 0] == zp[0] and codes[1, 5] == zp[1] and (codes[3] == zp[3]).all()
    assert codes[0, 1] == qdtype.quant_max and codes[0, 2] == qdtype.quant_min
    out, mask = Q.fake_quantize(x, qp, return_mask=True)
    assert out[0, 0] == 0 and not mask[0, 0] and np.isfinite(out).all()
    assert not mask[0, 1] and not mask[0, 2]
    assert out[0, 1] == Q.dequantize(Q.quantize(x, qp))[0, 1]
    m = Q.error_metrics(x, Q.quantize(x, qp))
    assert m.nonfinite_count == 68 and m.count == 256 - 68 and np.isfinite(m.mse)


def test_nonfinite_float16_and_bfloat16_inputs():
    qp = Q.QParams.per_tensor(0.5, 3, Q.quint8)
    half = np.array([np.nan, np.inf, -np.inf, 1.0], np.float16)
    assert Q.quantize(half, qp).int_repr().tolist() == [3, 255, 0, 5]
    bf = Q.float_to_bfloat16(half.astype(np.float32))
    assert Q.quantize(bf, qp, input_dtype="bfloat16").int_repr().tolist() == [3, 255, 0, 5]
    chosen = Q.choose_qparams(half, Q.per_tensor_affine, Q.quint8)
    assert chosen.scale[0] == np.float32(1) / np.float32(255)


def test_all_nonfinite_gives_eps_scale():
    x = np.array([np.nan, np.inf, -np.inf], np.float32)
    for scheme, zero_point in ((Q.per_tensor_affine, -128), (Q.per_tensor_symmetric, 0)):
        qp = Q.choose_qparams(x, scheme, Q.qint8)  # the range [0, 0]: z = qmin - round(0 / eps)
        assert qp.scale[0] == Q.default_eps and qp.zero_point[0] == zero_point
        assert Q.quantize(x, qp).int_repr().tolist() == [zero_point, 127, -128]


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)])
def test_empty_tensors(shape):
    x = np.zeros(shape, np.float32)
    q = Q.quantize(x, Q.per_tensor_affine, Q.qint4)
    assert q.shape == shape and q.storage.size == 0 and q.int_repr().shape == shape
    assert q.qparams.scale[0] == Q.default_eps
    assert Q.dequantize(q).shape == shape and Q.fake_quantize(x, q.qparams).shape == shape
    out, mask = Q.fake_quantize(x, q.qparams, return_mask=True)
    assert mask.shape == shape and mask.dtype == bool
    assert Q.fake_quantize_backward(out, mask).shape == shape
    m = Q.error_metrics(x, q)
    assert (m.count, m.mse, m.nonfinite_count) == (0, 0.0, 0)
    if shape[-1] == 0 and len(shape) == 2:
        qc = Q.quantize(x, Q.per_channel_symmetric, Q.qint8, 0)
        assert qc.qparams.scale.tolist() == [Q.default_eps] * 3
        assert len(Q.error_metrics_per_channel(x, qc, 0)) == 3


@pytest.mark.parametrize("value", [0.0, 3.25, -7.5, 1e-30, 6e4])
@pytest.mark.parametrize("qdtype", [Q.quint8, Q.qint8, Q.qint4], ids=str)
def test_constant_tensors(value, qdtype):
    x = np.full((5, 7), value, np.float32)
    for scheme in (Q.per_tensor_affine, Q.per_tensor_symmetric):
        q = Q.quantize(x, scheme, qdtype)
        s = q.qparams.scale[0]
        assert np.isfinite(s) and s >= Q.default_eps
        codes = q.int_repr()
        assert (codes == codes[0, 0]).all()
        x_hat = Q.dequantize(q)
        assert abs(x_hat[0, 0] - value) <= s / 2 + abs(value) * 2**-22
        if value == 0:
            assert s == Q.default_eps and (x_hat == 0).all()


# --- float16 / bfloat16 --------------------------------------------------------------------


def test_float16_to_float_exhaustive():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    ours = Q.float16_to_float(bits)
    ref = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    assert nan.sum() == 2046  # exponent all ones, mantissa != 0, either sign
    np.testing.assert_array_equal(ours[~nan].view(np.uint32), ref[~nan].view(np.uint32))
    assert np.isnan(ours[nan]).all()
    np.testing.assert_array_equal(np.signbit(ours[nan]), np.signbit(ref[nan]))
    # The quantize input path converts float16 the same way.
    qp = Q.QParams.per_tensor(2.0**-20, 0, Q.qint32)
    finite = bits[np.isfinite(ref)].view(np.float16)
    np.testing.assert_array_equal(
        Q.quantize(finite, qp).int_repr(), Q.quantize(finite.astype(np.float32), qp).int_repr()
    )


@np.errstate(over="ignore", invalid="ignore")  # NaN / overflow casts are the point
def test_float_to_float16_random_and_boundaries(rng):
    sample = rng.integers(0, 2**32, 2_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    boundaries = np.array(
        [0.0, -0.0, 65504.0, 65519.99, 65520.0, 65536.0, -65520.0, 2.0**-24, 2.0**-25, 2.0**-26,
         np.nextafter(np.float32(2.0**-25), np.float32(1)), 3 * 2.0**-25, 5 * 2.0**-25, 2.0**-14,
         np.nextafter(np.float32(2.0**-14), np.float32(0)), 2.0**-14 - 2.0**-25, 1 + 2.0**-11,
         1 + 3 * 2.0**-11, 1 + 2.0**-11 + 2.0**-23, 2048 + 1.0, 2048 + 3.0, np.inf, -np.inf, 1e-45,
         3.4e38, np.nan],
        np.float32,
    )
    # Every tie between adjacent half values, in every binade (normal and subnormal).
    halves = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float32)
    ties = ((halves[:-1].astype(np.float64) + halves[1:]) / 2).astype(np.float32)
    x = np.concatenate([sample, boundaries, ties, -ties])
    ours = Q.float_to_float16(x)
    ref = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(ours[~nan], ref[~nan])
    assert np.isnan(ours[nan].view(np.float16)).all()


@np.errstate(over="ignore", invalid="ignore")  # NaN / overflow casts are the point
def bfloat16_reference(x):
    """Nearest bfloat16 (ties to even) of float32 x, found by comparing the two neighbours."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32)
    low = (bits >> 16).astype(np.uint32)  # truncation: the neighbour towards zero
    high = low + 1  # the neighbour away from zero (sign-magnitude order)
    def as_float(b):
        return (b << 16).astype(np.uint32).view(np.float32).astype(np.float64)

    lo, hi = as_float(low), as_float(high)
    hi = np.where(np.isinf(hi), np.copysign(2.0**128, hi), hi)  # Inf rounds like 2^128
    xd = x.astype(np.float64)
    d_lo, d_hi = np.abs(xd - lo), np.abs(hi - xd)
    pick_high = (d_hi < d_lo) | ((d_hi == d_lo) & (low % 2 == 1))
    out = np.where(pick_high, high, low).astype(np.uint16)
    return out, np.isnan(x)


def test_bfloat16_round_to_nearest_even(rng):
    sample = rng.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    mids = (rng.integers(0, 2**16, 20_000, dtype=np.uint32) << 16) | 0x8000  # exact ties
    near = np.concatenate([mids - 1, mids + 1])
    edges = np.array([0x7F7F8000, 0x7F7FFFFF, 0x7F7F7FFF, 0xFF7F8000, 0x00008000, 0x00018000,
                      0x7F800000, 0xFF800000, 0x7FC00001, 0x7F800001, 0x00000000, 0x80000000],
                     np.uint32)
    x = np.concatenate([sample, mids, near, edges]).view(np.float32)
    ours = Q.float_to_bfloat16(x)
    ref, nan = bfloat16_reference(x)
    np.testing.assert_array_equal(ours[~nan], ref[~nan])
    back = Q.bfloat16_to_float(ours)
    assert np.isnan(back[nan]).all()
    np.testing.assert_array_equal(back[~nan].view(np.uint32), ours[~nan].astype(np.uint32) << 16)
    assert Q.float_to_bfloat16(np.float32(np.inf)) == 0x7F80


def test_bfloat16_input_path(rng):
    x = rng.standard_normal((6, 9)).astype(np.float32) * 5
    bits = Q.float_to_bfloat16(x)
    widened = Q.bfloat16_to_float(bits)
    scales = np.linspace(0.01, 0.2, 9)
    for qp in (
        Q.QParams.per_tensor(0.05, 3, Q.qint8),
        Q.QParams.per_channel(scales, None, 1, "qint4", "per_channel_symmetric"),
    ):
        codes = Q.quantize(bits, qp, input_dtype="bfloat16").int_repr()
        np.testing.assert_array_equal(codes, Q.quantize(widened, qp).int_repr())
        out = Q.fake_quantize(bits.view(np.int16), qp, input_dtype="bf16")
        np.testing.assert_array_equal(out, Q.fake_quantize(widened, qp))
    chosen = Q.choose_qparams(bits, "per_tensor_affine", "quint8", input_dtype="bfloat16")
    assert chosen == Q.choose_qparams(widened, "per_tensor_affine", "quint8")
    half = x.astype(np.float16)
    np.testing.assert_array_equal(
        Q.quantize(half.view(np.uint16), "per_tensor_affine", "qint8", input_dtype="float16")
        .int_repr(),
        Q.quantize(half, "per_tensor_affine", "qint8").int_repr(),
    )
