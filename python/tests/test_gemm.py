"""The packed int8 GEMM from Python: exact int32 / requantized outputs, float bounds, layers.

References are NumPy reimplementations of the equations of gemm.hpp:
- int32: acc = (A - z_A) @ W.T in int64 (exact);
- float: bit-exact float32 emulation of float(acc) * (s_A * s_W[n]) + bias[n], and a
  bound against the float64 product (derivation in float_bound below);
- requantized: the documented double-precision equation, exact.
Randomised tests take the `rng` fixture, which prints the seed (LUCIDQ_SEED to reproduce).
"""

import copy
import doctest
import pathlib
import pickle
import re

import numpy as np
import pytest

import lucidq as Q

SIZES = [1, 3, 17, 33, 64, 127]
U = 2.0**-24  # float32 unit roundoff
TINY = 2.0**-149  # float32 smallest subnormal: the absolute error of one rounding near 0
ACT_TYPES = {np.uint8: (0, 255), np.int8: (-128, 127)}


def log_uniform(rng, lo, hi, size):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size)).astype(np.float32)


def random_weights(rng, n, k, per_channel=True):
    codes = rng.integers(-128, 127, (n, k), endpoint=True).astype(np.int8)
    scales = log_uniform(rng, 1e-4, 1.0, n if per_channel else 1)
    return codes, scales


def random_acts(rng, m, k, dtype):
    lo, hi = ACT_TYPES[dtype]
    return rng.integers(lo, hi, (m, k), endpoint=True).astype(dtype)


def ref_acc(a, z, codes):
    """The exact accumulators in int64."""
    return (a.astype(np.int64) - z) @ codes.astype(np.int64).T


def float_emulation(acc, a_scale, w_scales, bias=None):
    """float(acc) * (s_A * s_W[n]) + bias[n] with every operation rounded to float32."""
    product = np.float32(a_scale) * w_scales.astype(np.float32)  # float32 * float32 -> float32
    out = acc.astype(np.float32) * product
    if bias is not None:
        out = out + bias.astype(np.float32)
    return out


def requantize_reference(acc, a_scale, w_scales, out_scale, out_zp, qdtype, bias=None,
                         bias_int32=None, relu=False):
    """The documented equation, in double: clamp(nearbyint(double(acc + b32) * m + o) + z)."""
    total = acc.astype(np.int64)
    if bias_int32 is not None:
        total = total + np.asarray(bias_int32, np.int64)
    m = np.float64(a_scale) * w_scales.astype(np.float64) / np.float64(out_scale)
    o = 0.0
    if bias is not None:
        o = np.asarray(bias, np.float32).astype(np.float64) / np.float64(out_scale)
    y = np.rint(total.astype(np.float64) * m + o) + out_zp
    lo = max(qdtype.quant_min, out_zp) if relu else qdtype.quant_min
    return np.clip(y, lo, qdtype.quant_max).astype(np.int64)


def float_bound(acc, a_scale, w_scales, bias):
    """Error bound of the float32 stage against the exact acc * s_A * s_W[n] + bias[n].

    With u = 2^-24 and |d_i| <= u: fl(acc) = acc (1 + d0) (d0 = 0 when |acc| <= 2^24),
    p = fl(s_A s_W) = s_A s_W (1 + d1), t = fl(fl(acc) p) = acc s_A s_W (1 + d0)(1 + d1)(1 + d2),
    C = fl(t + b) = (t + b)(1 + d3). Hence
      |C - (acc s_A s_W + b)| <= |acc s_A s_W| ((1 + u)^3 - 1) + u |t + b|
                              <= 4.0001 u |acc s_A s_W| + u |b|,
    plus one smallest subnormal per rounding when a result underflows. Since
    |acc| <= 255 * 128 * K, the K-level bound is 4.0001 u * 32640 K s_A max s_W + u max|b|.
    """
    exact = np.abs(acc.astype(np.float64) * np.float64(a_scale) * w_scales.astype(np.float64))
    b = 0.0 if bias is None else np.abs(bias.astype(np.float64))
    return 4.0001 * U * exact + U * b + 4 * TINY


# --------------------------------------------------------------------------- int32


def test_int32_exact_over_shapes_types_and_zero_points(rng):
    cases = 0
    for m in [1, 3, 17]:
        for n_index, k in enumerate(SIZES):
            n = SIZES[(n_index + m) % len(SIZES)]  # every N meets every K over the M loop
            codes, scales = random_weights(rng, n, k)
            w = Q.PackedWeightsInt8.pack(codes, scales)
            for dtype, (lo, hi) in ACT_TYPES.items():
                a = random_acts(rng, m, k, dtype)
                for z in (lo, hi, int(rng.integers(lo, hi, endpoint=True))):
                    got = Q.gemm_int32(a, w, a_zero_point=z)
                    assert got.dtype == np.int32 and got.shape == (m, n)
                    expected = ref_acc(a, z, codes)
                    assert np.array_equal(got, expected), f"M={m} N={n} K={k} {dtype} z={z}"
                    cases += 1
    print(f"int32 GEMM: {cases} cases exact")


@pytest.mark.parametrize("k", [64, 127, 1000])
@pytest.mark.parametrize("m, n", [(127, 33), (64, 127)])
def test_int32_exact_larger(rng, m, n, k):
    codes, scales = random_weights(rng, n, k)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    for dtype, (lo, hi) in ACT_TYPES.items():
        a = random_acts(rng, m, k, dtype)
        for z in (lo, hi):
            assert np.array_equal(Q.gemm_int32(a, w, z), ref_acc(a, z, codes))


def test_int32_extremes_at_max_depth():
    """|acc| reaches 255 * 128 * max_gemm_depth = 2^31 - 128 without overflow, both signs."""
    k = Q.max_gemm_depth
    assert 255 * 128 * k < 2**31 <= 255 * 128 * (k + 1)
    w = Q.PackedWeightsInt8.pack(np.full((2, k), -128, np.int8), [1.0])
    a = np.stack([np.full(k, 255, np.uint8), np.zeros(k, np.uint8)])
    got = Q.gemm_int32(a, w, a_zero_point=0)
    assert got[:, 0].tolist() == [-255 * 128 * k, 0]
    got = Q.gemm_int32(a, w, a_zero_point=255)
    assert got[:, 1].tolist() == [0, 255 * 128 * k]
    s = np.stack([np.full(k, -128, np.int8), np.full(k, 127, np.int8)])
    got = Q.gemm_int32(s, w, a_zero_point=127)
    assert got[:, 0].tolist() == [255 * 128 * k, 0]


def test_strided_and_noncontiguous_activations(rng):
    codes, scales = random_weights(rng, 17, 33)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    wide = random_acts(rng, 20, 70, np.uint8)
    variants = {
        "column slice (row stride 70)": wide[:, 5:38],
        "every other row": wide[::2, :33],
        "reversed rows (copied)": wide[::-1, :33],
        "Fortran order (copied)": np.asfortranarray(wide[:, :33]),
        "every other column (copied)": wide[:, :66:2],
        "single row": wide[3:4, 2:35],
        "no rows": wide[:0, :33],
    }
    for name, a in variants.items():
        got = Q.gemm_int32(a, w, a_zero_point=7)
        assert np.array_equal(got, ref_acc(np.ascontiguousarray(a), 7, codes)), name
        assert got.shape == (a.shape[0], 17), name


def test_weights_with_row_stride_and_integer_lists(rng):
    codes = rng.integers(-128, 127, (5, 20), endpoint=True).astype(np.int8)
    w = Q.PackedWeightsInt8.pack(codes[:, 3:14], [0.5])
    assert np.array_equal(w.unpack(), codes[:, 3:14])
    w_list = Q.PackedWeightsInt8.pack(codes[:, 3:14].tolist(), [0.5])  # int64 values in range
    assert np.array_equal(w_list.unpack(), codes[:, 3:14])


# --------------------------------------------------------------------------- packed weights


def test_packed_weights_properties(rng):
    codes, scales = random_weights(rng, 33, 17)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    assert (w.rows, w.columns, w.per_channel) == (33, 17, True)
    assert np.array_equal(w.scales, scales)
    assert np.array_equal(w.column_sums, codes.astype(np.int64).sum(axis=1))
    assert w.packed_bytes >= 33 * 17
    assert w.unpack().dtype == np.int8 and np.array_equal(w.unpack(), codes)
    q = w.to_quantized()
    assert q.shape == (33, 17) and np.array_equal(q.int_repr(), codes)
    assert np.array_equal(q.qparams.scale, scales) and q.qparams.qscheme.is_per_channel
    assert np.array_equal(Q.PackedWeightsInt8.from_quantized(q).unpack(), codes)
    assert repr(w) == "PackedWeightsInt8(rows=33, columns=17, per_channel=True)"

    t = Q.PackedWeightsInt8.pack(codes, scales[:1])
    assert not t.per_channel and np.array_equal(t.scales, np.repeat(scales[:1], 33))
    assert not t.to_quantized().qparams.qscheme.is_per_channel


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("qdtype", [Q.qint8, Q.qint8.narrow_range()])
def test_quantize_matches_lucidq_symmetric_quantization(rng, per_channel, qdtype):
    x = (rng.normal(size=(17, 64)) * log_uniform(rng, 1e-3, 10, (17, 1))).astype(np.float32)
    x[3] = 0.0  # an all-zero channel
    w = Q.PackedWeightsInt8.quantize(x, per_channel=per_channel, qdtype=qdtype)
    scheme = Q.per_channel_symmetric if per_channel else Q.per_tensor_symmetric
    q = Q.quantize(x, scheme, qdtype, ch_axis=0)
    assert np.array_equal(w.unpack(), q.int_repr())
    assert np.array_equal(w.scales, np.broadcast_to(q.qparams.scale, (17,)))
    assert w.unpack().min() >= qdtype.quant_min
    # float64 input is rounded to float32 first.
    w64 = Q.PackedWeightsInt8.quantize(x.astype(np.float64), per_channel=per_channel, qdtype=qdtype)
    assert np.array_equal(w64.unpack(), w.unpack())


@pytest.mark.parametrize("n, per_channel", [(7, True), (7, False), (1, True), (1, False)])
def test_pickle_and_copy_packed_weights(rng, n, per_channel):
    codes, scales = random_weights(rng, n, 33, per_channel)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    if per_channel and n == 1:  # one channel, but per-channel parameters: keep the flag
        w = Q.PackedWeightsInt8.from_quantized(
            Q.QuantizedTensor((1, 33), Q.QParams.per_channel(scales, 0, 0, Q.qint8,
                                                             Q.per_channel_symmetric),
                              codes.view(np.uint8))
        )
    a = random_acts(rng, 5, 33, np.uint8)
    for other in (pickle.loads(pickle.dumps(w)), copy.deepcopy(w), copy.copy(w)):
        assert (other.rows, other.columns, other.per_channel) == (n, 33, per_channel)
        assert np.array_equal(other.unpack(), codes)
        assert np.array_equal(other.scales, w.scales)
        assert np.array_equal(other.column_sums, w.column_sums)
        assert other.packed_bytes == w.packed_bytes
        assert np.array_equal(Q.gemm_float(a, other, 0.1, 3), Q.gemm_float(a, w, 0.1, 3))


# --------------------------------------------------------------------------- float output


def test_float_output_bit_exact_and_bounded(rng):
    worst = 0.0
    for m, n, k in [(1, 1, 1), (3, 17, 33), (17, 64, 127), (33, 3, 64), (64, 127, 17)]:
        codes, scales = random_weights(rng, n, k)
        w = Q.PackedWeightsInt8.pack(codes, scales)
        bias = rng.normal(size=n).astype(np.float32)
        for dtype, (lo, hi) in ACT_TYPES.items():
            a = random_acts(rng, m, k, dtype)
            z = int(rng.integers(lo, hi, endpoint=True))
            a_scale = float(log_uniform(rng, 1e-3, 1.0, 1)[0])
            acc = ref_acc(a, z, codes)
            for b in (None, bias):
                got = Q.gemm_float(a, w, a_scale, z, b)
                assert got.dtype == np.float32 and got.shape == (m, n)
                emulated = float_emulation(acc, a_scale, scales, b)
                case = f"M={m} N={n} K={k} {dtype} bias={b is not None}"
                assert np.array_equal(got, emulated), case
                exact = acc * np.float64(a_scale) * scales.astype(np.float64)
                if b is not None:
                    exact = exact + b.astype(np.float64)
                err = np.abs(got.astype(np.float64) - exact)
                assert np.all(err <= float_bound(acc, a_scale, scales, b))
                k_bound = 4.0001 * U * 32640 * k * a_scale * scales.max() + U * np.abs(bias).max()
                assert err.max() <= k_bound + 4 * TINY
                worst = max(worst, float((err / np.maximum(float_bound(acc, a_scale, scales, b),
                                                           TINY)).max()))
    print(f"float GEMM: bit-exact float32 emulation; worst error / bound = {worst:.3f}")


# --------------------------------------------------------------------------- requantized


OUT_QDTYPES = [Q.quint8, Q.qint8, Q.qint8.narrow_range(), Q.quint8.with_range(0, 127)]


@pytest.mark.parametrize("out_qdtype", OUT_QDTYPES, ids=str)
def test_requantize_exact(rng, out_qdtype):
    cases = clamped = 0
    for m, n, k in [(1, 3, 1), (3, 17, 33), (17, 33, 64), (33, 127, 127), (64, 1, 17)]:
        codes, scales = random_weights(rng, n, k)
        w = Q.PackedWeightsInt8.pack(codes, scales)
        for dtype, (lo, hi) in ACT_TYPES.items():
            a = random_acts(rng, m, k, dtype)
            z = int(rng.choice([lo, hi, (lo + hi) // 2]))
            a_scale = float(log_uniform(rng, 1e-3, 1.0, 1)[0])
            acc = ref_acc(a, z, codes)
            spread = np.abs(acc * np.float64(a_scale) * scales).max()
            out_scale = float(np.float32(spread / rng.uniform(40, 200)))  # some outputs clamp
            out_zp = int(rng.integers(out_qdtype.quant_min, out_qdtype.quant_max, endpoint=True))
            bias = (rng.normal(size=n) * spread / 4).astype(np.float32)
            bias_int32 = rng.integers(-(2**20), 2**20, n).astype(np.int32)
            for kwargs in ({}, {"bias": bias}, {"bias_int32": bias_int32}):
                for relu in (False, True):
                    got = Q.gemm_requantize(a, w, a_scale, z, out_scale, out_zp, out_qdtype,
                                            relu=relu, **kwargs)
                    assert got.dtype == (np.int8 if out_qdtype.is_signed else np.uint8)
                    expected = requantize_reference(acc, a_scale, scales, out_scale, out_zp,
                                                    out_qdtype, relu=relu, **kwargs)
                    assert np.array_equal(got.astype(np.int64), expected), (
                        f"M={m} N={n} K={k} {dtype} z={z} {list(kwargs)} relu={relu}")
                    cases += 1
                    clamped += int(np.sum((expected == out_qdtype.quant_min) |
                                          (expected == out_qdtype.quant_max)))
    assert clamped > 0  # the saturation was exercised
    print(f"requantize {out_qdtype}: {cases} cases exact, {clamped} outputs saturated")


def test_requantize_ties_to_even():
    """Power-of-two scales make acc * m land exactly on .5: ties go to the even code."""
    k = 1
    w = Q.PackedWeightsInt8.pack(np.array([[1]], np.int8), [1.0])
    a = np.arange(0, 20, dtype=np.uint8).reshape(-1, 1)
    got = Q.gemm_requantize(a, w, 0.5, 0, 1.0, 100, Q.quint8)  # acc * 0.5 + 100
    expected = 100 + np.rint(np.arange(20) * 0.5)
    assert got[:, 0].tolist() == expected.astype(int).tolist()
    assert got[1:4, 0].tolist() == [100, 101, 102]  # 0.5 -> 0, 1.0 -> 1, 1.5 -> 2
    assert k == w.columns


def test_requantize_relu_and_default_dtype(rng):
    codes, scales = random_weights(rng, 9, 13)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    a = random_acts(rng, 11, 13, np.int8)
    plain = Q.gemm_requantize(a, w, 0.05, -3, 0.02, 10)
    assert plain.dtype == np.uint8
    fused = Q.gemm_requantize(a, w, 0.05, -3, 0.02, 10, relu=True)
    assert np.array_equal(fused, np.maximum(plain, 10))


# --------------------------------------------------------------------------- dynamic


def dynamic_reference(x, codes, scales, bias, per_row, qdtype):
    """lucidq's own qparams + quantize per row (or tensor), exact acc, float32 float stage."""
    rows = x if per_row else [x]
    outs = []
    for block in rows:
        block = np.atleast_2d(block)
        qp = Q.choose_qparams(block, Q.per_tensor_affine, qdtype)
        a = Q.quantize(block, qp).int_repr()
        acc = ref_acc(a, int(qp.zero_point[0]), codes)
        outs.append(float_emulation(acc, float(qp.scale[0]), scales, bias))
    return np.concatenate(outs, axis=0)


@pytest.mark.parametrize("per_row", [True, False])
@pytest.mark.parametrize("qdtype", [Q.quint8, Q.qint8], ids=str)
def test_gemm_dynamic_matches_reference(rng, per_row, qdtype):
    for m, n, k in [(1, 3, 17), (3, 17, 33), (17, 64, 127), (33, 127, 64)]:
        codes, scales = random_weights(rng, n, k)
        w = Q.PackedWeightsInt8.pack(codes, scales)
        x = (rng.normal(size=(m, k)) * log_uniform(rng, 1e-2, 10, (m, 1))).astype(np.float32)
        if m > 1:
            x[1] = np.abs(x[1])  # a row without negatives: its range is widened to include 0
        bias = rng.normal(size=n).astype(np.float32)
        for b in (None, bias):
            got = Q.gemm_dynamic(x, w, b, per_row=per_row, qdtype=qdtype)
            expected = dynamic_reference(x, codes, scales, b, per_row, qdtype)
            assert np.array_equal(got, expected), f"M={m} N={n} K={k} bias={b is not None}"
    # Byte-swapped and float64 inputs are converted (float64 rounded to float32 first).
    codes, scales = random_weights(rng, 5, 7)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    x32 = rng.normal(size=(4, 7)).astype(np.float32)
    for other in (x32.astype(">f4"), x32.astype(np.float64), np.asfortranarray(x32)):
        assert np.array_equal(Q.gemm_dynamic(other, w, per_row=per_row, qdtype=qdtype),
                              Q.gemm_dynamic(x32, w, per_row=per_row, qdtype=qdtype))
    # Strided rows are read in place and give the same result.
    wide = rng.normal(size=(9, 40)).astype(np.float32)
    codes, scales = random_weights(rng, 5, 33)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    assert np.array_equal(Q.gemm_dynamic(wide[::2, 4:37], w, per_row=per_row, qdtype=qdtype),
                          Q.gemm_dynamic(np.ascontiguousarray(wide[::2, 4:37]), w,
                                         per_row=per_row, qdtype=qdtype))


def test_empty_batches(rng):
    """M = 0 rows give [0, N] results (NumPy's matmul convention) once the arguments check."""
    w = Q.PackedWeightsInt8.quantize(rng.normal(size=(6, 10)).astype(np.float32))
    a = np.zeros((0, 10), np.uint8)
    assert Q.gemm_int32(a, w, 3).shape == (0, 6)
    assert Q.gemm_float(a, w, 0.1, 3, np.ones(6)).shape == (0, 6)
    assert Q.gemm_requantize(a, w, 0.1, 3, 0.2, 0, Q.qint8).shape == (0, 6)
    assert Q.gemm_dynamic(np.zeros((0, 10), np.float32), w).shape == (0, 6)
    assert Q.linear_dynamic(np.zeros((2, 0, 10), np.float32), w).shape == (2, 0, 6)
    with pytest.raises(Q.Error, match="a_zero_point = 256"):
        Q.gemm_int32(a, w, 256)
    with pytest.raises(Q.Error, match="bias has shape"):
        Q.gemm_float(a, w, 0.1, 3, np.ones(5))


def test_linear_dynamic_shapes(rng):
    w = Q.PackedWeightsInt8.quantize(rng.normal(size=(6, 10)).astype(np.float32))
    bias = rng.normal(size=6).astype(np.float32)
    x = rng.normal(size=(2, 3, 10)).astype(np.float32)
    y = Q.linear_dynamic(x, w, bias)
    assert y.shape == (2, 3, 6) and y.dtype == np.float32
    assert np.array_equal(y.reshape(6, 6), Q.gemm_dynamic(x.reshape(6, 10), w, bias))
    assert np.array_equal(Q.linear_dynamic(x[0, 0], w, bias), y[0, 0])
    tensor = Q.linear_dynamic(x, w, bias, per_row=False)
    assert np.array_equal(tensor.reshape(6, 6),
                          Q.gemm_dynamic(x.reshape(6, 10), w, bias, per_row=False))


def test_results_do_not_depend_on_tier_or_threads(rng):
    """Every output stage is bit-identical across kernel tiers and thread counts (gemm.hpp)."""
    codes, scales = random_weights(rng, 127, 300)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    a = random_acts(rng, 200, 300, np.uint8)
    x = rng.normal(size=(200, 300)).astype(np.float32)
    bias = rng.normal(size=127).astype(np.float32)

    def outputs():
        return [
            Q.gemm_int32(a, w, 131),
            Q.gemm_float(a, w, 0.01, 131, bias),
            Q.gemm_requantize(a, w, 0.01, 131, 0.05, 7, Q.qint8, bias=bias, relu=True),
            Q.gemm_dynamic(x, w, bias),
            Q.gemm_dynamic(x, w, bias, per_row=False, qdtype=Q.qint8),
        ]

    saved_isa, saved_threads = Q.active_isa(), Q.num_threads()
    try:
        Q.set_isa("reference")
        Q.set_num_threads(1)
        expected = outputs()
        assert np.array_equal(expected[0], ref_acc(a, 131, codes))
        for isa in Q.supported_isas():
            for threads in (1, 2, 3):
                Q.set_isa(isa)
                Q.set_num_threads(threads)
                for got, want in zip(outputs(), expected):
                    assert np.array_equal(got, want), (isa, threads)
    finally:
        Q.set_isa(saved_isa)
        Q.set_num_threads(saved_threads)


def test_concurrent_calls_from_python_threads(rng):
    """The GIL is released during the products; concurrent calls give the serial results."""
    from concurrent.futures import ThreadPoolExecutor

    codes, scales = random_weights(rng, 64, 127)
    w = Q.PackedWeightsInt8.pack(codes, scales)
    batches = [random_acts(rng, 33, 127, np.int8) for _ in range(8)]
    serial = [Q.gemm_requantize(b, w, 0.02, -5, 0.1, 3, Q.quint8) for b in batches]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda b: Q.gemm_requantize(b, w, 0.02, -5, 0.1, 3, Q.quint8),
                                 batches))
    assert all(np.array_equal(p, q) for p, q in zip(parallel, serial))


# --------------------------------------------------------------------------- errors


def errors_cases():
    codes = np.zeros((4, 6), np.int8)
    w = Q.PackedWeightsInt8.pack(codes, [0.5])
    a = np.zeros((2, 6), np.uint8)
    s = np.zeros((2, 6), np.int8)
    x = np.zeros((2, 6), np.float32)
    return [
        ("gemm_int32: a has dtype float32 \\(expected uint8 or int8",
         lambda: Q.gemm_int32(x, w)),
        ("gemm_int32: a has dtype int16", lambda: Q.gemm_int32(a.astype(np.int16), w)),
        ("gemm_int32: a has shape \\(2, 5\\) \\(expected a 2-D array \\[M, K\\] with K = "
         "w.columns = 6\\)", lambda: Q.gemm_int32(a[:, :5], w)),
        ("gemm_float: a has shape \\(6,\\)", lambda: Q.gemm_float(a[0], w, 1.0, 0)),
        ("gemm_int32: a has shape \\(1, 2, 6\\)", lambda: Q.gemm_int32(a[None], w)),
        ("gemm_int32: a_zero_point = 256 \\(expected an integer in \\[0, 255\\] for uint8 a\\)",
         lambda: Q.gemm_int32(a, w, 256)),
        ("gemm_int32: a_zero_point = -1 \\(expected an integer in \\[0, 255\\]",
         lambda: Q.gemm_int32(a, w, -1)),
        ("gemm_float: a_zero_point = 128 \\(expected an integer in \\[-128, 127\\] for int8 a\\)",
         lambda: Q.gemm_float(s, w, 1.0, 128)),
        ("gemm_float: a_scale = 0.0 \\(expected a finite scale > 0\\)",
         lambda: Q.gemm_float(a, w, 0.0, 0)),
        ("gemm_float: a_scale = nan", lambda: Q.gemm_float(a, w, float("nan"), 0)),
        ("gemm_float: bias has shape \\(3,\\) \\(expected \\[N\\] with N = w.rows = 4\\)",
         lambda: Q.gemm_float(a, w, 1.0, 0, np.zeros(3, np.float32))),
        ("gemm_requantize: both bias and bias_int32 are given",
         lambda: Q.gemm_requantize(a, w, 1.0, 0, 1.0, 0, bias=np.zeros(4),
                                   bias_int32=np.zeros(4, np.int32))),
        ("gemm_requantize: bias_int32 has shape \\(5,\\)",
         lambda: Q.gemm_requantize(a, w, 1.0, 0, 1.0, 0, bias_int32=np.zeros(5, np.int32))),
        ("gemm_requantize: out_qdtype = qint4 \\(expected an 8-bit grid",
         lambda: Q.gemm_requantize(a, w, 1.0, 0, 1.0, 0, Q.qint4)),
        ("gemm_requantize: out_zero_point = 128 \\(expected an integer in "
         "\\[-128, 127\\] for qint8",
         lambda: Q.gemm_requantize(a, w, 1.0, 0, 1.0, 128, Q.qint8)),
        ("gemm_requantize: out_scale = -1.0", lambda: Q.gemm_requantize(a, w, 1.0, 0, -1.0, 0)),
        ("gemm_requantize: a_zero_point = 300", lambda: Q.gemm_requantize(a, w, 1.0, 300, 1.0, 0)),
        ("PackedWeightsInt8.pack: w has dtype float32 \\(expected int8 codes\\)",
         lambda: Q.PackedWeightsInt8.pack(x, [1.0])),
        ("PackedWeightsInt8.pack: w holds values from 0 to 128 \\(expected int8 codes in",
         lambda: Q.PackedWeightsInt8.pack(np.array([[0, 128]]), [1.0])),
        ("PackedWeightsInt8.pack: w has shape \\(6,\\) \\(expected a 2-D array \\[N, K\\]\\)",
         lambda: Q.PackedWeightsInt8.pack(codes[0], [1.0])),
        ("PackedWeightsInt8.pack: scales has 3 values \\(expected 1 per tensor or N = 4",
         lambda: Q.PackedWeightsInt8.pack(codes, [1.0, 1.0, 1.0])),
        ("PackedWeightsInt8.quantize: w has shape \\(6,\\)",
         lambda: Q.PackedWeightsInt8.quantize(x[0])),
        ("PackedWeightsInt8.quantize: w has dtype int8",
         lambda: Q.PackedWeightsInt8.quantize(codes)),
        ("gemm_dynamic: x has shape \\(2, 5\\) \\(expected a 2-D array \\[M, K\\] with K = "
         "w.columns = 6\\)", lambda: Q.gemm_dynamic(x[:, :5], w)),
        ("gemm_dynamic: x has dtype uint8", lambda: Q.gemm_dynamic(a, w)),
        ("gemm_dynamic: bias has shape \\(2,\\)", lambda: Q.gemm_dynamic(x, w, np.zeros(2))),
        ("linear_dynamic: x has shape \\(2, 1, 7\\) \\(expected \\[..., K\\] with K = "
         "w.columns = 6\\)", lambda: Q.linear_dynamic(np.zeros((2, 1, 7), np.float32), w)),
        ("linear_dynamic: x has dtype int32",
         lambda: Q.linear_dynamic(np.zeros((2, 6), np.int32), w)),
    ]


@pytest.mark.parametrize("pattern, make", errors_cases())
def test_binding_errors_name_the_argument(pattern, make):
    with pytest.raises(Q.Error, match=pattern):
        make()


def test_core_errors_reach_python():
    """Errors found by the core (bad scales, non-finite values, depth) keep its message."""
    with pytest.raises(Q.Error, match="scale"):
        Q.PackedWeightsInt8.pack(np.zeros((2, 3), np.int8), [1.0, -2.0])
    bad = np.ones((3, 4), np.float32)
    bad[1, 2] = np.nan
    with pytest.raises(Q.Error, match=r"(?s)1.*2"):  # names row 1 and column 2
        Q.PackedWeightsInt8.quantize(bad)
    w = Q.PackedWeightsInt8.quantize(np.ones((2, 4), np.float32))
    with pytest.raises(Q.Error, match=r"(?s)1.*2"):
        Q.gemm_dynamic(bad, w)
    with pytest.raises(Q.Error, match=str(Q.max_gemm_depth)):
        Q.PackedWeightsInt8.pack(np.zeros((1, Q.max_gemm_depth + 1), np.int8), [1.0])
    with pytest.raises(Q.Error, match="zero"):
        Q.PackedWeightsInt8.from_quantized(Q.quantize(np.ones((2, 3), np.float32),
                                                      Q.QParams.per_tensor(0.1, 5, Q.qint8)))
    with pytest.raises(Q.Error, match="ch_axis = 1"):
        Q.PackedWeightsInt8.from_quantized(
            Q.quantize(np.ones((2, 3), np.float32), Q.per_channel_symmetric, Q.qint8, ch_axis=1))
    for qdtype in (Q.quint8, Q.qint4):
        with pytest.raises(Q.Error, match=f"qdtype = {qdtype}"):
            Q.PackedWeightsInt8.quantize(np.ones((2, 3), np.float32), qdtype=qdtype)


# --------------------------------------------------------------------------- layers


def static_bound(x, layer, w_codes, w_scales):
    """|y - y_ref| <= s_in/2 sum|W_hat| + s_w/2 sum|x| + s_out/2 (+ slack for the float32
    output): input rounding through the quantized weight, weight rounding through the real
    input, output rounding. Valid while nothing clamps (the test sizes the ranges)."""
    s_in = float(layer.input_qparams.scale[0])
    s_out = layer.scale
    w_hat = w_codes.astype(np.float64) * w_scales[:, None]
    bound = (s_in / 2) * np.abs(w_hat).sum(axis=1) + np.abs(x).sum(axis=-1, keepdims=True) * (
        w_scales.astype(np.float64) / 2
    )
    return bound + s_out / 2 * (1 + 1e-6) + 1e-6 * s_out


def test_quantized_linear_from_float(rng):
    k, n = 33, 17
    weight = rng.normal(size=(n, k)).astype(np.float32)
    bias = rng.normal(size=n).astype(np.float32)
    x = rng.uniform(-2, 2, size=(2, 5, k)).astype(np.float32)
    ref = x.astype(np.float64) @ weight.T.astype(np.float64) + bias
    lo, hi = min(ref.min(), 0.0) * 1.1, max(ref.max(), 0.0) * 1.1
    out_q = Q.calculate_qparams(lo, hi, Q.per_tensor_affine, Q.quint8)
    in_q = Q.calculate_qparams(-2.0, 2.0, Q.per_tensor_affine, Q.quint8)
    layer = Q.QuantizedLinear.from_float(
        weight, bias, input_scale=float(in_q.scale[0]), input_zero_point=int(in_q.zero_point[0]),
        output_scale=float(out_q.scale[0]), output_zero_point=int(out_q.zero_point[0]))
    assert (layer.in_features, layer.out_features) == (k, n)
    packed = Q.PackedWeightsInt8.quantize(weight)
    assert np.array_equal(layer.weight.int_repr(), packed.unpack())
    assert np.array_equal(layer.bias, bias)
    assert repr(layer).startswith("QuantizedLinear(in_features=33, out_features=17, input=(")

    y = layer(x)
    assert y.shape == (2, 5, n) and y.dtype == np.float32
    # The pipeline by hand: quantize, gemm_requantize, dequantize.
    codes = Q.quantize(x, layer.input_qparams).int_repr().astype(np.uint8)
    out_codes = layer.forward_codes(codes)
    assert out_codes.dtype == np.uint8 and out_codes.shape == (2, 5, n)
    direct = Q.gemm_requantize(codes.reshape(-1, k), packed, float(in_q.scale[0]),
                               int(in_q.zero_point[0]), float(out_q.scale[0]),
                               int(out_q.zero_point[0]), bias=bias)
    assert np.array_equal(out_codes.reshape(-1, n), direct)
    manual = (out_codes.astype(np.float32) - np.float32(layer.zero_point)) * np.float32(layer.scale)
    assert np.array_equal(y, manual)
    bound = static_bound(x, layer, packed.unpack(), packed.scales.astype(np.float64))
    err = np.abs(y - ref)
    assert np.all(err <= bound), float((err - bound).max())
    print(f"QuantizedLinear: max |err| {err.max():.4g}, output scale {layer.scale:.4g}")


def test_quantized_linear_signed_relu_and_errors(rng):
    weight = rng.normal(size=(4, 8)).astype(np.float32)
    layer = Q.QuantizedLinear.from_float(
        weight, None, input_scale=0.05, input_zero_point=-3, output_scale=0.1,
        output_zero_point=-20, input_qdtype=Q.qint8, output_qdtype="qint8", relu=True,
        per_channel=False)
    assert not layer.packed_weight.per_channel and layer.relu and layer.bias is None
    codes = rng.integers(-128, 127, (6, 8), endpoint=True).astype(np.int8)
    out = layer.forward_codes(codes)
    assert out.dtype == np.int8 and out.min() >= -20
    assert np.all(layer(rng.normal(size=(6, 8))) >= 0)
    with pytest.raises(Q.Error, match="x_codes has dtype uint8 \\(expected int8 codes"):
        layer.forward_codes(codes.view(np.uint8))
    with pytest.raises(Q.Error, match="x has shape \\(6, 7\\) \\(expected \\[..., K\\] with K = "
                                      "in_features = 8\\)"):
        layer(np.zeros((6, 7), np.float32))
    with pytest.raises(Q.Error, match="bias has shape \\(3,\\)"):
        Q.QuantizedLinear.from_float(weight, [1, 2, 3], input_scale=1, input_zero_point=0,
                                     output_scale=1, output_zero_point=0)
    with pytest.raises(Q.Error, match="input_qdtype = qint4"):
        Q.QuantizedLinear.from_float(weight, input_scale=1, input_zero_point=0, output_scale=1,
                                     output_zero_point=0, input_qdtype=Q.qint4)
    with pytest.raises(Q.Error, match="zero_point"):
        Q.QuantizedLinear.from_float(weight, input_scale=1, input_zero_point=300, output_scale=1,
                                     output_zero_point=0)


@pytest.mark.parametrize("observer", ["minmax", "histogram"])
def test_quantized_linear_calibrate(rng, observer):
    weight = rng.normal(size=(6, 12)).astype(np.float32)
    bias = rng.normal(size=6).astype(np.float32)
    samples = [rng.normal(size=(8, 12)).astype(np.float32) for _ in range(3)]
    layer = Q.QuantizedLinear.calibrate(weight, bias, samples, observer=observer, relu=True)
    make = Q.MinMaxObserver if observer == "minmax" else Q.HistogramObserver
    obs_in, obs_out = make(dtype=Q.quint8), make(dtype=Q.quint8)
    for x in samples:
        obs_in.observe(x)
        obs_out.observe(np.maximum(x @ weight.T + bias, 0))
    assert layer.input_qparams == obs_in.calculate_qparams()
    assert layer.output_qparams == obs_out.calculate_qparams()
    assert layer.zero_point == 0  # ReLU outputs start at 0
    again = Q.QuantizedLinear.from_observers(weight, bias, obs_in, obs_out, relu=True)
    assert np.array_equal(again(samples[0]), layer(samples[0]))
    with pytest.raises(Q.Error, match="expected a per-tensor observer"):
        per_channel = Q.PerChannelMinMaxObserver(ch_axis=1)
        per_channel.observe(samples[0])
        Q.QuantizedLinear.from_observers(weight, bias, per_channel, obs_out)
    with pytest.raises(Q.Error, match="samples is empty"):
        Q.QuantizedLinear.calibrate(weight, bias, [])


def test_dynamic_quantized_linear(rng):
    weight = rng.normal(size=(17, 33)).astype(np.float32)
    bias = rng.normal(size=17).astype(np.float32)
    layer = Q.DynamicQuantizedLinear.from_float(weight, bias)
    assert (layer.in_features, layer.out_features, layer.per_row) == (33, 17, True)
    assert repr(layer) == ("DynamicQuantizedLinear(in_features=33, out_features=17, "
                           "per_channel=True, per_row=True, qdtype=quint8)")
    x = (rng.normal(size=(4, 3, 33)) * np.array([0.01, 1, 100])[:, None]).astype(np.float32)
    y = layer(x)
    packed = Q.PackedWeightsInt8.quantize(weight)
    assert np.array_equal(y, Q.linear_dynamic(x, packed, bias))
    assert np.array_equal(layer.weight.int_repr(), packed.unpack())
    # Error bound per row: s_x/2 sum|W_hat| + s_w/2 sum|x| (+ float32 slack).
    w_hat = packed.unpack().astype(np.float64) * packed.scales[:, None]
    flat = x.reshape(-1, 33).astype(np.float64)
    s_x = np.array([Q.choose_qparams(r, Q.per_tensor_affine, Q.quint8).scale[0] for r in flat])
    bound = (s_x[:, None] / 2) * np.abs(w_hat).sum(axis=1) + np.abs(flat).sum(
        axis=1, keepdims=True) * packed.scales / 2
    ref = flat @ weight.T.astype(np.float64) + bias
    err = np.abs(y.reshape(-1, 17) - ref)
    assert np.all(err <= bound * (1 + 1e-5) + 1e-6 * np.abs(ref) + 1e-30)
    tensor = Q.DynamicQuantizedLinear.from_float(weight, bias, per_channel=False, per_row=False)
    assert np.array_equal(tensor(x), Q.linear_dynamic(
        x, Q.PackedWeightsInt8.quantize(weight, per_channel=False), bias, per_row=False))
    # Per-row quantization keeps the small rows x[:, 0] (scale 0.01) accurate; per-tensor not.
    err_row = np.abs(layer(x)[:, 0] - ref.reshape(4, 3, 17)[:, 0]).max()
    err_tensor = np.abs(Q.DynamicQuantizedLinear.from_float(weight, bias, per_row=False)(x)[:, 0]
                        - ref.reshape(4, 3, 17)[:, 0]).max()
    assert err_row < err_tensor, (err_row, err_tensor)
    with pytest.raises(Q.Error, match="qdtype = qint4"):
        Q.DynamicQuantizedLinear.from_float(weight, qdtype=Q.qint4)


def test_layers_pickle(rng):
    weight = rng.normal(size=(5, 9)).astype(np.float32)
    bias = rng.normal(size=5).astype(np.float32)
    x = rng.normal(size=(3, 9)).astype(np.float32)
    layers = [
        Q.QuantizedLinear.from_float(weight, bias, input_scale=0.03, input_zero_point=120,
                                     output_scale=0.05, output_zero_point=100, relu=True),
        Q.DynamicQuantizedLinear.from_float(weight, bias, per_row=False, qdtype=Q.qint8),
    ]
    for layer in layers:
        other = pickle.loads(pickle.dumps(layer))
        assert repr(other) == repr(layer)
        assert np.array_equal(other(x), layer(x))
        assert np.array_equal(other.weight.int_repr(), layer.weight.int_repr())


def test_docstring_examples_run():
    """The examples of the native class (test_doctests.py runs lucidq/nn.py's)."""
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    finder = doctest.DocTestFinder(recurse=False)
    for test in finder.find(Q.PackedWeightsInt8, "PackedWeightsInt8", module=False, globs={}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 4 and result.failed == 0


def test_readme_example_runs():
    """The ```python block under "## Int8 GEMM and quantized linear layers" in python/README.md."""
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Int8 GEMM and quantized linear layers", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
