"""Parity with PyTorch (Debian python3-torch 1.13, CPU): codes, fake quantization and its
gradient, observers' qparams, dequantization. Never skipped: without torch every test fails.

Each case prints one line, e.g.
    parity quantize_per_tensor quint8: 1000000 values compared, 0 differed
(run `pytest -s` to see them; set LUCIDQ_PARITY_LOG=<file> to also append them to a file).

Known PyTorch 1.13 divergences, by design (see docs/numerics.md and test_api.py):
- torch casts z + round(x / s) to int64 in float, so +Inf, -Inf, NaN and any
  |x / s| >= 2^63 become quant_min (int64 overflow); we saturate +-Inf to
  quant_max / quant_min and map NaN to the zero point. A scale whose reciprocal
  overflows float32 (s < 2^-128) makes every x * (1/s) infinite or NaN, so torch
  returns quant_min for every value while we keep 0 -> z and saturate the rest.
  Parity cases therefore use finite values with |x / s| < 2^62.
- qint32 with a nonzero zero point: torch adds z to round(x / s) in float32 and
  loses integers above 2^24; we add exactly. Compared with z = 0 over the full
  range, and with z != 0 only for |x / s| < 2^24.
- qint32 dequantize: torch converts the code to float32 before using it, so codes
  above 2^24 are rounded first (up to 1 ulp off the correctly rounded s (q - z));
  and with z != 0 it computes q - z in int32, which wraps (sign flip) when
  |q - z| > 2^31 - 1. Those codes are left out of the comparison and counted.
- calculate_qparams when max - min overflows float32: torch's scale becomes inf;
  ours is recomputed in double and stays finite.
"""

import os

import numpy as np
import pytest

import lucidq as Q
from qhelpers import ulp_distance

N = 1_000_000  # values per parity case
FAR = 2.0**61.5  # |x / s| bound of the "far outside the range" values


@pytest.fixture(scope="module")
def torch():
    try:
        import torch
    except ImportError as error:
        pytest.fail(
            f"PyTorch is required for the parity tests and is missing ({error}). Run "
            "scripts/install-deps.sh (installs Debian's python3-torch) and use /usr/bin/python3."
        )
    return torch


def report(case, compared, differed, extra="", unit="values"):
    line = f"parity {case}: {compared} {unit} compared, {differed} differed"
    if extra:
        line += f" ({extra})"
    print(line)
    log = os.environ.get("LUCIDQ_PARITY_LOG")
    if log:
        with open(log, "a") as out:
            out.write(line + "\n")


TORCH_DTYPES = {"quint8": "quint8", "qint8": "qint8", "qint32": "qint32"}


def torch_dtype(torch, qdtype):
    return getattr(torch, TORCH_DTYPES[qdtype.name])


def random_scales(rng, count):
    """float32 scales: log-uniform over [1e-4, 1e3] plus a few special ones."""
    s = np.exp(rng.uniform(np.log(1e-4), np.log(1e3), count)).astype(np.float32)
    special = np.array([1.0, 0.1, 2.0**-7, 3.0, 0.0173], np.float32)
    s[: min(count, special.size)] = special[: min(count, special.size)]
    return s


def code_space(rng, n, qdtype, z, limit):
    """n values of x / s (float64) mixing the grid, exact ties (marked), grid points, normal
    data and values far outside; returns (u, tie_mask)."""
    lo, hi = qdtype.quant_min - z, qdtype.quant_max - z
    m = n // 6
    tie_lo, tie_hi = max(lo - 3, -(2**22)), min(hi + 3, 2**22)  # k + 0.5 exact in float32
    span = float(hi - lo)
    far_low = min(np.log2(max(span, 4.0)), np.log2(limit) - 1)
    far = np.exp2(rng.uniform(far_low, np.log2(limit), m)) * rng.choice([-1.0, 1.0], m)
    parts = [
        rng.uniform(max(lo - 3, -limit), min(hi + 3, limit), m),
        rng.integers(tie_lo, tie_hi, m, endpoint=True) + 0.5,
        rng.integers(max(lo, -limit), min(hi, limit), m, endpoint=True).astype(np.float64),
        np.clip(rng.normal((lo + hi) / 2, span / 6, m), -limit, limit),
        far,
        rng.normal(0, 2, n - 5 * m),
    ]
    ties = np.zeros(n, bool)
    ties[m : 2 * m] = True
    return np.concatenate(parts), ties


def to_values(u, ties, scale):
    """x = u * s in float32; ties are nudged so that fl(x * fl(1/s)) == k + 0.5 exactly.
    Returns (x, exact_tie_count)."""
    scale = np.broadcast_to(np.asarray(scale, np.float32), u.shape)
    inv = np.float32(1) / scale
    x = (u * scale.astype(np.float64)).astype(np.float32)
    t = u[ties].astype(np.float32)
    start = (u[ties] / inv[ties].astype(np.float64)).astype(np.float32)
    found = np.zeros(t.size, bool)
    best = start.copy()
    for offset in (0, 1, -1, 2, -2, 3, -3):
        cand = (start.view(np.int32) + np.int32(offset)).view(np.float32)
        hit = ~found & (cand * inv[ties] == t)
        best[hit] = cand[hit]
        found |= hit
    x[ties] = best
    return x, int(found.sum())


def per_tensor_cases(rng, qdtype, n, chunks, z_range, limit):
    """Yields (x, s, z, exact_ties) chunks that add up to n values."""
    scales = random_scales(rng, chunks)
    for i in range(chunks):
        size = n // chunks + (1 if i < n % chunks else 0)
        z = int(rng.integers(z_range[0], z_range[1], endpoint=True))
        u, ties = code_space(rng, size, qdtype, z, limit)
        x, exact = to_values(u, ties, scales[i])
        yield x, scales[i], z, exact


QUANTIZE_CASES = [
    # label, qdtype, zero-point range, |x / s| limit
    ("quint8", Q.quint8, (0, 255), FAR),
    ("qint8", Q.qint8, (-128, 127), FAR),
    ("qint32", Q.qint32, (0, 0), FAR),
    ("qint32 z!=0 |x/s|<2^24", Q.qint32, (-(2**20), 2**20), 2.0**24 - 2.0**21),
]


@pytest.mark.parametrize(
    "label, qdtype, z_range, limit", QUANTIZE_CASES, ids=[c[0] for c in QUANTIZE_CASES]
)
def test_quantize_per_tensor(torch, rng, label, qdtype, z_range, limit):
    compared = differed = ties = 0
    for x, s, z, exact in per_tensor_cases(rng, qdtype, N, 16, z_range, limit):
        ours = Q.quantize(x, Q.QParams.per_tensor(s, z, qdtype)).int_repr()
        tdtype = torch_dtype(torch, qdtype)
        ref = torch.quantize_per_tensor(torch.from_numpy(x), float(s), z, tdtype)
        ref = ref.int_repr().numpy().astype(np.int32)
        bad = np.flatnonzero(ours != ref)
        if bad.size and differed == 0:
            i = bad[0]
            print(f"first difference: x={x[i]!r} s={s!r} z={z} ours={ours[i]} torch={ref[i]}")
        compared += x.size
        differed += bad.size
        ties += exact
    report(f"quantize_per_tensor {label}", compared, differed, f"{ties} exact ties")
    assert compared >= N and ties > N // 10
    assert differed == 0


def per_channel_data(rng, qdtype, shape, axis, z_range, limit):
    """x of `shape` with per-channel scales / zero points along axis; returns (x, s, z, ties)."""
    channels = shape[axis]
    scales = random_scales(rng, channels)
    zps = rng.integers(z_range[0], z_range[1], channels, endpoint=True)
    moved = list(shape)
    moved.insert(0, moved.pop(axis))
    per = int(np.prod(moved[1:]))
    u = np.empty((channels, per))
    tie_mask = np.empty((channels, per), bool)
    for c in range(channels):
        u[c], tie_mask[c] = code_space(rng, per, qdtype, int(zps[c]), limit)
    scale_of = np.repeat(scales, per).reshape(channels, per)
    x, exact = to_values(u.ravel(), tie_mask.ravel(), scale_of.ravel())
    x = np.moveaxis(x.reshape(moved), 0, axis)
    return np.ascontiguousarray(x), scales, zps, exact


PER_CHANNEL_CASES = [
    # label, qdtype, shape, axis, zero-point range, limit
    ("quint8", Q.quint8, (100, 10000), 0, (0, 255), FAR),
    ("qint8", Q.qint8, (10, 100, 1000), 1, (-128, 127), FAR),
    ("qint32", Q.qint32, (1000, 1000), 1, (0, 0), FAR),
    ("qint32 z!=0 |x/s|<2^24", Q.qint32, (50, 20000), 0, (-(2**20), 2**20), 2.0**24 - 2.0**21),
]


@pytest.mark.parametrize(
    "label, qdtype, shape, axis, z_range, limit",
    PER_CHANNEL_CASES,
    ids=[c[0] for c in PER_CHANNEL_CASES],
)
def test_quantize_per_channel(torch, rng, label, qdtype, shape, axis, z_range, limit):
    x, scales, zps, ties = per_channel_data(rng, qdtype, shape, axis, z_range, limit)
    our_axis = axis - len(shape) if axis == len(shape) - 1 else axis  # exercise a negative axis too
    qp = Q.QParams.per_channel(scales, zps, our_axis, qdtype)
    ours = Q.quantize(x, qp).int_repr()
    ref = torch.quantize_per_channel(
        torch.from_numpy(x),
        torch.from_numpy(scales.astype(np.float64)),
        torch.from_numpy(zps.astype(np.int64)),
        axis,
        torch_dtype(torch, qdtype),
    )
    ref = ref.int_repr().numpy().astype(np.int32)
    differed = int((ours != ref).sum())
    report(f"quantize_per_channel {label} axis={axis}", x.size, differed, f"{ties} exact ties")
    assert x.size >= N and ties > N // 10
    assert differed == 0


FAKE_CASES = [
    # label, qdtype (its range is torch's quant_min / quant_max)
    ("quint8", Q.quint8),
    ("qint8", Q.qint8),
    ("quint4 [0,15]", Q.quint4),
    ("qint8[-127,127]", Q.qint8.narrow_range()),
]


@pytest.mark.parametrize("label, qdtype", FAKE_CASES, ids=[c[0] for c in FAKE_CASES])
def test_fake_quantize_per_tensor_and_gradient(torch, rng, label, qdtype):
    compared = out_diff = grad_diff = mask_true = 0
    z_range = (qdtype.quant_min, qdtype.quant_max)
    for x, s, z, _ in per_tensor_cases(rng, qdtype, N, 8, z_range, FAR):
        qp = Q.QParams.per_tensor(s, z, qdtype)
        out, mask = Q.fake_quantize(x, qp, return_mask=True)
        grad_out = rng.standard_normal(x.size).astype(np.float32)
        ours_grad = Q.fake_quantize_backward(grad_out, mask)
        xt = torch.from_numpy(x.copy()).requires_grad_()
        qmin, qmax = qdtype.quant_min, qdtype.quant_max
        yt = torch.fake_quantize_per_tensor_affine(xt, float(s), z, qmin, qmax)
        yt.backward(torch.from_numpy(grad_out))
        out_diff += int((out.view(np.uint32) != yt.detach().numpy().view(np.uint32)).sum())
        grad_diff += int((ours_grad.view(np.uint32) != xt.grad.numpy().view(np.uint32)).sum())
        compared += x.size
        mask_true += int(mask.sum())
    report(f"fake_quantize_per_tensor_affine {label}", compared, out_diff, "bitwise")
    extra = f"{mask_true} in range"
    report(f"fake_quantize_per_tensor_affine backward {label}", compared, grad_diff, extra)
    assert compared >= N and 0 < mask_true < compared
    assert out_diff == 0 and grad_diff == 0


FAKE_CHANNEL_CASES = [c for c in FAKE_CASES if c[1] != Q.quint4]


@pytest.mark.parametrize(
    "label, qdtype", FAKE_CHANNEL_CASES, ids=[c[0] for c in FAKE_CHANNEL_CASES]
)
def test_fake_quantize_per_channel_and_gradient(torch, rng, label, qdtype):
    shape, axis = (20, 50, 1000), 1
    z_range = (qdtype.quant_min, qdtype.quant_max)
    x, scales, zps, _ = per_channel_data(rng, qdtype, shape, axis, z_range, FAR)
    qp = Q.QParams.per_channel(scales, zps, axis, qdtype)
    out, mask = Q.fake_quantize(x, qp, return_mask=True)
    grad_out = rng.standard_normal(shape).astype(np.float32)
    ours_grad = Q.fake_quantize_backward(grad_out, mask)
    xt = torch.from_numpy(x.copy()).requires_grad_()
    yt = torch.fake_quantize_per_channel_affine(
        xt, torch.from_numpy(scales), torch.from_numpy(zps.astype(np.int32)), axis,
        qdtype.quant_min, qdtype.quant_max,
    )
    yt.backward(torch.from_numpy(grad_out))
    out_diff = int((out.view(np.uint32) != yt.detach().numpy().view(np.uint32)).sum())
    grad_diff = int((ours_grad.view(np.uint32) != xt.grad.numpy().view(np.uint32)).sum())
    report(f"fake_quantize_per_channel_affine {label} axis={axis}", x.size, out_diff, "bitwise")
    extra = f"{int(mask.sum())} in range"
    report(f"fake_quantize_per_channel_affine backward {label}", x.size, grad_diff, extra)
    assert out_diff == 0 and grad_diff == 0


def random_ranges(rng, count):
    """(min, max) float32 pairs: mixed-sign, all-positive, all-negative, tiny (the scale
    hits eps), constant, and all-zero ranges, magnitudes from 1e-4 to 1e26."""
    k = count // 6
    a, b = (rng.standard_normal(count) * np.exp(rng.uniform(-10, 60, count)) for _ in range(2))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pos, neg = slice(k, 2 * k), slice(2 * k, 3 * k)
    lo[pos], hi[pos] = np.minimum(abs(a[pos]), abs(b[pos])), np.maximum(abs(a[pos]), abs(b[pos]))
    lo[neg], hi[neg] = -np.maximum(abs(a[neg]), abs(b[neg])), -np.minimum(abs(a[neg]), abs(b[neg]))
    tiny = slice(3 * k, 4 * k)
    lo[tiny], hi[tiny] = lo[tiny] * 1e-22, hi[tiny] * 1e-22
    hi[4 * k : 5 * k] = lo[4 * k : 5 * k]  # constant data
    lo[5 * k : 5 * k + 10] = hi[5 * k : 5 * k + 10] = 0  # all zero
    lo, hi = lo.astype(np.float32), hi.astype(np.float32)
    assert (lo <= hi).all() and (lo[pos] >= 0).all() and (hi[neg] <= 0).all()
    return lo, hi


OBSERVER_CASES = [(scheme, d) for scheme in Q.QScheme for d in (Q.quint8, Q.qint8)]


@pytest.mark.parametrize(
    "scheme, qdtype", OBSERVER_CASES, ids=[f"{s}-{d}" for s, d in OBSERVER_CASES]
)
def test_calculate_qparams_matches_observers(torch, rng, scheme, qdtype):
    qscheme = getattr(torch, str(scheme))
    tdtype = torch_dtype(torch, qdtype)
    lo, hi = random_ranges(rng, 60_000 if scheme.is_per_channel else 3_000)
    data = np.stack([lo, hi, (lo + hi) / 2], axis=1)  # one row per range, its min and max inside
    if scheme.is_per_channel:
        observer = torch.ao.quantization.PerChannelMinMaxObserver(
            ch_axis=0, dtype=tdtype, qscheme=qscheme
        )
        observer(torch.from_numpy(data))
        ref_scale, ref_zp = (t.numpy() for t in observer.calculate_qparams())
        ours = Q.calculate_qparams(lo, hi, scheme, qdtype)
        chosen = Q.choose_qparams(data, scheme, qdtype, ch_axis=0)
        assert chosen == Q.QParams(scheme, qdtype, ours.scale, ours.zero_point, 0)
        our_scale, our_zp = ours.scale, ours.zero_point
    else:
        observer = torch.ao.quantization.MinMaxObserver(dtype=tdtype, qscheme=qscheme)
        ref_scale, ref_zp, our_scale, our_zp = [], [], [], []
        for row in data:
            observer.reset_min_max_vals()
            observer(torch.from_numpy(row))
            s, z = observer.calculate_qparams()
            ref_scale.append(float(s))
            ref_zp.append(int(z))
            qp = Q.choose_qparams(row, scheme, qdtype)
            our_scale.append(qp.scale[0])
            our_zp.append(qp.zero_point[0])
        ref_scale, ref_zp = np.array(ref_scale, np.float32), np.array(ref_zp)
        our_scale, our_zp = np.array(our_scale, np.float32), np.array(our_zp)
    rel = np.abs(our_scale.astype(np.float64) / ref_scale - 1)
    zp_diff = int((our_zp != ref_zp).sum())
    report(
        f"calculate_qparams {scheme} {qdtype} vs {type(observer).__name__}", lo.size,
        int((our_scale != ref_scale).sum()) + zp_diff,
        f"max scale rel diff {rel.max():.3g}, {zp_diff} zero points differed",
        unit="ranges",
    )
    assert rel.max() <= 1e-6 and zp_diff == 0
    assert (our_scale == ref_scale).all()  # in practice bit-identical


def test_calculate_qparams_range_overflow_stays_finite(torch):
    # Divergence: (max - min) overflows float32; torch's scale is inf, ours is finite.
    qp = Q.calculate_qparams(-3e38, 3e38, Q.per_tensor_affine, Q.quint8)
    assert np.isfinite(qp.scale[0]) and qp.scale[0] == np.float32(6e38 / 255)
    observer = torch.ao.quantization.MinMaxObserver(dtype=torch.quint8)
    observer(torch.tensor([-3e38, 3e38]))
    theirs = float(observer.calculate_qparams()[0])
    print(f"scale for [-3e38, 3e38]: torch {theirs}, ours {qp.scale[0]}")


DEQUANT_CASES = [
    # label, qdtype, code range, zero-point range
    ("quint8", Q.quint8, (0, 255), (0, 255)),
    ("qint8", Q.qint8, (-128, 127), (-128, 127)),
    ("qint32 |q-z|<=2^24", Q.qint32, (-(2**24) + 2**20, 2**24 - 2**20), (-(2**20), 2**20)),
    ("qint32 full range z=0", Q.qint32, (-(2**31), 2**31 - 1), (0, 0)),
    ("qint32 full range z!=0", Q.qint32, (-(2**31), 2**31 - 1), (-(2**20), 2**20)),
]


@pytest.mark.parametrize(
    "label, qdtype, codes_range, z_range", DEQUANT_CASES, ids=[c[0] for c in DEQUANT_CASES]
)
def test_dequantize(torch, rng, label, qdtype, codes_range, z_range):
    storage = {"quint8": np.uint8, "qint8": np.int8, "qint32": np.int32}[qdtype.name]
    worst = compared = differed = overflowed = 0
    for s in random_scales(rng, 10):
        z = int(rng.integers(z_range[0], z_range[1], endpoint=True))
        codes = rng.integers(codes_range[0], codes_range[1], N // 10, endpoint=True).astype(storage)
        ref = torch._make_per_tensor_quantized_tensor(torch.from_numpy(codes), float(s), z)
        ref = ref.dequantize().numpy()
        qp = Q.QParams.per_tensor(s, z, qdtype)
        ours = Q.dequantize(Q.QuantizedTensor(codes.shape, qp, codes.view(np.uint8)))
        # Ours is s * (q - z) rounded once: the float64 product is exact for |q - z| < 2^29
        # and rounds identically in the core (also a float64 product) beyond.
        exact = (np.float64(s) * (codes.astype(np.int64) - z)).astype(np.float32)
        np.testing.assert_array_equal(ours, exact)
        # torch 1.13 computes q - z in int32 for qint32: it wraps when that leaves int32.
        wraps = np.abs(codes.astype(np.int64) - z) > 2**31 - 1
        ulps = ulp_distance(ours[~wraps], ref[~wraps])
        worst = max(worst, int(ulps.max()))
        compared += int((~wraps).sum())
        differed += int((ulps > 0).sum())
        overflowed += int(wraps.sum())
    extra = f"max {worst} ulp"
    if overflowed:
        extra += f"; {overflowed} codes left out: torch's int32 q - z wraps"
    report(f"dequantize {label}", compared, differed, extra)
    assert worst <= 1 and compared >= N - overflowed


def test_dequantize_per_channel(torch, rng):
    codes = rng.integers(-128, 127, (100, 1000), endpoint=True).astype(np.int8)
    scales = random_scales(rng, 1000)
    zps = rng.integers(-128, 127, 1000, endpoint=True)
    ref = torch._make_per_channel_quantized_tensor(
        torch.from_numpy(codes),
        torch.from_numpy(scales.astype(np.float64)),
        torch.from_numpy(zps),
        1,
    ).dequantize().numpy()
    qp = Q.QParams.per_channel(scales, zps, 1, Q.qint8)
    ours = Q.dequantize(Q.QuantizedTensor(codes.shape, qp, codes.view(np.uint8)))
    ulps = ulp_distance(ours, ref)
    extra = f"max {int(ulps.max())} ulp"
    report("dequantize per_channel qint8 axis=1", codes.size, int((ulps > 0).sum()), extra)
    assert ulps.max() <= 1


def test_nonfinite_and_huge_inputs_follow_our_design(torch):
    # Our documented behaviour; torch 1.13's (int64-cast overflow) is printed for the record.
    x = np.array([np.inf, -np.inf, np.nan, 2.0**70, -(2.0**70), 0.0], np.float32)
    for qdtype in (Q.quint8, Q.qint8, Q.qint32):
        qp = Q.QParams.per_tensor(1.0, 3, qdtype)
        ours = Q.quantize(x, qp).int_repr().tolist()
        lo, hi = qdtype.quant_min, qdtype.quant_max
        assert ours == [hi, lo, 3, hi, lo, 3]
        ref = torch.quantize_per_tensor(torch.from_numpy(x), 1.0, 3, torch_dtype(torch, qdtype))
        ref = ref.int_repr().tolist()
        print(f"{qdtype} [inf, -inf, nan, 2^70, -2^70, 0]: ours {ours}, torch {ref}")
    tiny = Q.QParams.per_tensor(1e-39, 5, Q.quint8)  # 1 / s overflows float32
    small = np.array([0.0, 1.0, -1.0], np.float32)
    assert Q.quantize(small, tiny).int_repr().tolist() == [5, 255, 0]
    ref = torch.quantize_per_tensor(torch.from_numpy(small), 1e-39, 5, torch.quint8)
    ref = ref.int_repr().tolist()
    print(f"quint8 s=1e-39 z=5 [0, 1, -1]: ours [5, 255, 0], torch {ref}")
    # fake_quantize: NaN -> 0 with mask False (torch: s * (quant_min - z), mask False).
    out, mask = Q.fake_quantize(x, Q.QParams.per_tensor(0.5, 3, Q.quint8), return_mask=True)
    assert out.tolist()[:3] == [0.5 * 252, -1.5, 0.0] and not mask[:5].any() and mask[5]
    ref = torch.fake_quantize_per_tensor_affine(torch.from_numpy(x), 0.5, 3, 0, 255).tolist()
    print(f"fake_quantize quint8 s=0.5 z=3 {x.tolist()}: ours {out.tolist()}, torch {ref}")


def test_torch_tensors_are_accepted_as_input(torch, rng):
    # CPU tensors convert through NumPy's __array__ protocol, like any array-like.
    x = torch.from_numpy(rng.standard_normal((4, 5)).astype(np.float32))
    qp = Q.QParams.per_tensor(0.02, 3, Q.quint8)
    np.testing.assert_array_equal(
        Q.quantize(x, qp).int_repr(), Q.quantize(x.numpy(), qp).int_repr()
    )
    ref = torch.quantize_per_tensor(x, 0.02, 3, torch.quint8).int_repr().numpy()
    np.testing.assert_array_equal(Q.quantize(x, qp).int_repr(), ref)
    assert Q.choose_qparams(x.double(), "per_tensor_affine", "quint8") == Q.choose_qparams(
        x.numpy(), "per_tensor_affine", "quint8"
    )
