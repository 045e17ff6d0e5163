"""Parity of lucidq's observers with torch.ao.quantization (Debian's PyTorch 1.13).

Same batches into both, then the same scale (relative difference <= 1e-6; in
practice 0) and the same zero point, after 1, 3 and 10 batches of normal,
uniform, ReLU'd and heavy-tailed data, with fixed and growing ranges, for quint8
and qint8 and every scheme the torch observer supports. The observed state
(min_val / max_val, the histogram) is compared bit for bit as well. A summary of
the largest relative scale difference per observer is printed at the end.

Run: PYTHONPATH=<build>/python /usr/bin/python3 -m pytest python/tests/test_observer_parity.py
PyTorch is required: a missing torch is a failure, never a skip.
"""

import collections

import numpy as np
import pytest
import torch
from torch.ao.quantization import observer as tobs

import lucidq as Q

pytestmark = pytest.mark.filterwarnings("ignore:Please use quant_min and quant_max")

DISTRIBUTIONS = ["normal", "uniform", "relu", "heavy"]
BATCH_COUNTS = [1, 3, 10]
DTYPES = [(torch.quint8, Q.quint8), (torch.qint8, Q.qint8)]
PER_TENSOR = [(torch.per_tensor_affine, Q.per_tensor_affine),
              (torch.per_tensor_symmetric, Q.per_tensor_symmetric)]
PER_CHANNEL = [(torch.per_channel_affine, Q.per_channel_affine),
               (torch.per_channel_symmetric, Q.per_channel_symmetric)]
SCALE_RTOL = 1e-6

# observer name -> [max relative scale difference, zero-point mismatches, cases]
SUMMARY = collections.defaultdict(lambda: [0.0, 0, 0])
NEGATIVE_COUNTS = [0]  # histogram bins below zero seen in PyTorch-binned states


@pytest.fixture(scope="module", autouse=True)
def parity_summary(request):
    """Prints the largest relative scale difference per observer once the module is done."""
    yield
    lines = ["", "observer parity with torch.ao.quantization "
             "(max relative scale difference, zero-point mismatches, cases):"]
    lines += [f"  {name:45s} {rel:.3g}  {mismatches}  {cases}"
              for name, (rel, mismatches, cases) in sorted(SUMMARY.items())]
    lines.append(f"  histogram bins below zero (PyTorch's interpolation), reloaded exactly: "
                 f"{NEGATIVE_COUNTS[0]}")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print("\n".join(lines))


def batches(rng, distribution, count, growing, shape):
    """`count` float32 batches of `shape`; with `growing`, batch k is scaled by 1.6^k."""
    out = []
    for k in range(count):
        scale = rng.uniform(0.5, 3.0) * (1.6 ** k if growing else 1.0)
        if distribution == "normal":
            x = rng.standard_normal(shape)
        elif distribution == "uniform":
            x = rng.uniform(-0.3, 1.0, shape)
        elif distribution == "relu":
            x = np.maximum(rng.standard_normal(shape), 0.0)
        else:
            x = rng.standard_t(2, shape)
        out.append((x * scale).astype(np.float32))
    return out


def compare(name, ours, theirs, case):
    """Asserts equal qparams (scale within SCALE_RTOL, zero point exact) and records the gap."""
    q = ours.calculate_qparams()
    scale, zero_point = theirs.calculate_qparams()
    torch_scale = scale.numpy().astype(np.float32).reshape(-1)
    torch_zero = zero_point.numpy().astype(np.int64).reshape(-1)
    our_scale = np.asarray(q.scale, dtype=np.float32)
    our_zero = np.asarray(q.zero_point, dtype=np.int64)
    rel = float(np.max(np.abs(our_scale.astype(np.float64) - torch_scale) / torch_scale))
    mismatches = int(np.sum(our_zero != torch_zero))
    entry = SUMMARY[name]
    entry[0] = max(entry[0], rel)
    entry[1] += mismatches
    entry[2] += 1
    assert rel <= SCALE_RTOL, f"{case}: scale {our_scale} vs torch {torch_scale}"
    assert mismatches == 0, f"{case}: zero_point {our_zero} vs torch {torch_zero}"


def run_both(ours, theirs, xs):
    for x in xs:
        ours.observe(x)
        theirs(torch.from_numpy(x))


def per_tensor_cases():
    for tdtype, qdtype in DTYPES:
        for tscheme, qscheme in PER_TENSOR:
            yield tdtype, qdtype, tscheme, qscheme


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("count", BATCH_COUNTS)
@pytest.mark.parametrize("growing", [False, True])
@pytest.mark.parametrize("moving", [False, True])
def test_minmax_and_moving_average(rng, distribution, count, growing, moving):
    xs = batches(rng, distribution, count, growing, (64, 33))
    for tdtype, qdtype, tscheme, qscheme in per_tensor_cases():
        if moving:
            name = "MovingAverageMinMaxObserver"
            ours = Q.MovingAverageMinMaxObserver(dtype=qdtype, qscheme=qscheme)
            theirs = tobs.MovingAverageMinMaxObserver(dtype=tdtype, qscheme=tscheme)
        else:
            name = "MinMaxObserver"
            ours = Q.MinMaxObserver(dtype=qdtype, qscheme=qscheme)
            theirs = tobs.MinMaxObserver(dtype=tdtype, qscheme=tscheme)
        run_both(ours, theirs, xs)
        assert ours.min_val == theirs.min_val.item()
        assert ours.max_val == theirs.max_val.item()
        compare(name, ours, theirs, (distribution, count, growing, tdtype, tscheme))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("count", BATCH_COUNTS)
@pytest.mark.parametrize("growing", [False, True])
@pytest.mark.parametrize("moving", [False, True])
@pytest.mark.parametrize("ch_axis", [0, 1, -1])
def test_per_channel(rng, distribution, count, growing, moving, ch_axis):
    xs = batches(rng, distribution, count, growing, (6, 5, 7))
    for tdtype, qdtype in DTYPES:
        for tscheme, qscheme in PER_CHANNEL:
            if moving:
                name = "MovingAveragePerChannelMinMaxObserver"
                ours = Q.MovingAveragePerChannelMinMaxObserver(
                    ch_axis=ch_axis, dtype=qdtype, qscheme=qscheme)
                theirs = tobs.MovingAveragePerChannelMinMaxObserver(
                    ch_axis=ch_axis, dtype=tdtype, qscheme=tscheme)
            else:
                name = "PerChannelMinMaxObserver"
                ours = Q.PerChannelMinMaxObserver(ch_axis=ch_axis, dtype=qdtype, qscheme=qscheme)
                theirs = tobs.PerChannelMinMaxObserver(ch_axis=ch_axis, dtype=tdtype,
                                                       qscheme=tscheme)
            run_both(ours, theirs, xs)
            np.testing.assert_array_equal(ours.min_val, theirs.min_val.numpy())
            np.testing.assert_array_equal(ours.max_val, theirs.max_val.numpy())
            compare(name, ours, theirs, (distribution, count, growing, ch_axis, tdtype, tscheme))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("count", BATCH_COUNTS)
@pytest.mark.parametrize("growing", [False, True])
def test_histogram(rng, distribution, count, growing):
    xs = batches(rng, distribution, count, growing, (3001,))
    for tdtype, qdtype, tscheme, qscheme in per_tensor_cases():
        ours = Q.HistogramObserver(dtype=qdtype, qscheme=qscheme)
        theirs = tobs.HistogramObserver(dtype=tdtype, qscheme=tscheme)
        run_both(ours, theirs, xs)
        assert ours.min_val == theirs.min_val.item()
        assert ours.max_val == theirs.max_val.item()
        np.testing.assert_array_equal(ours.histogram, theirs.histogram.numpy())
        compare("HistogramObserver", ours, theirs, (distribution, count, growing, tdtype, tscheme))
        # The state reloads bit for bit, including the slightly negative counts PyTorch's
        # float32 interpolation can leave behind.
        np.testing.assert_array_equal(Q.load_observer(ours.save_state()).histogram, ours.histogram)
        NEGATIVE_COUNTS[0] += int(np.sum(ours.histogram < 0))


# Grid overrides: reduce_range and quant_min / quant_max, where PyTorch accepts them.
GRID_OVERRIDES = [
    dict(dtype="quint8", qscheme="affine", reduce_range=True),
    dict(dtype="qint8", qscheme="affine", reduce_range=True),
    dict(dtype="qint8", qscheme="symmetric", reduce_range=True),
    dict(dtype="quint8", qscheme="affine", quant_min=0, quant_max=127),
    dict(dtype="qint8", qscheme="symmetric", quant_min=-127, quant_max=127),
    dict(dtype="quint8", qscheme="symmetric", quant_min=0, quant_max=200),
    dict(dtype="qint8", qscheme="affine", quant_min=-100, quant_max=27, reduce_range=True),
]


def override_args(case, per_channel):
    dtypes = {"quint8": (torch.quint8, Q.quint8), "qint8": (torch.qint8, Q.qint8)}
    tdtype, qdtype = dtypes[case["dtype"]]
    schemes = PER_CHANNEL if per_channel else PER_TENSOR
    tscheme, qscheme = schemes[0] if case["qscheme"] == "affine" else schemes[1]
    extra = {k: v for k, v in case.items() if k not in ("dtype", "qscheme")}
    return (dict(dtype=tdtype, qscheme=tscheme, **extra), dict(dtype=qdtype, qscheme=qscheme, **extra))


@pytest.mark.parametrize("case", GRID_OVERRIDES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("kind", ["MinMaxObserver", "MovingAverageMinMaxObserver",
                                  "PerChannelMinMaxObserver", "HistogramObserver"])
def test_grid_overrides(rng, case, kind):
    per_channel = kind.startswith("PerChannel")
    torch_args, our_args = override_args(case, per_channel)
    ours = getattr(Q, kind)(**our_args)
    theirs = getattr(tobs, kind)(**torch_args)
    assert (ours.quant_min, ours.quant_max) == (theirs.quant_min, theirs.quant_max)
    run_both(ours, theirs, batches(rng, "normal", 3, True, (16, 40)))
    compare(kind + " (grid overrides)", ours, theirs, case)


@pytest.mark.parametrize("kind", ["MinMaxObserver", "PerChannelMinMaxObserver"])
def test_symmetric_quint8_reduce_range_is_refused_by_both(kind):
    scheme = "per_channel_symmetric" if kind.startswith("PerChannel") else "per_tensor_symmetric"
    with pytest.raises(NotImplementedError):
        getattr(tobs, kind)(dtype=torch.quint8, qscheme=getattr(torch, scheme), reduce_range=True)
    with pytest.raises(ValueError, match="reduce_range"):
        getattr(Q, kind)(dtype=Q.quint8, qscheme=scheme, reduce_range=True)


def test_documented_divergence_explicit_full_range_symmetric_quint8(rng):
    """PyTorch pins zero point (0 + 255) // 2 = 127 when quant_min=0, quant_max=255 are given
    explicitly, 128 otherwise; lucidq's QDtype cannot tell an explicit full range from the
    default, so it gives 128 either way (docs/calibration.md). The scales agree."""
    x = rng.standard_normal(1000).astype(np.float32)
    ours = Q.MinMaxObserver(dtype=Q.quint8, qscheme=Q.per_tensor_symmetric, quant_min=0, quant_max=255)
    theirs = tobs.MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_symmetric,
                                 quant_min=0, quant_max=255)
    run_both(ours, theirs, [x])
    scale, zero_point = theirs.calculate_qparams()
    q = ours.calculate_qparams()
    assert int(zero_point) == 127 and q.zero_point[0] == 128
    assert q.scale[0] == float(scale)


@pytest.mark.parametrize("distribution", ["normal", "relu"])
def test_histogram_million_element_batches(rng, distribution):
    """The benchmark's shape: three growing batches of 2^20 values."""
    xs = batches(rng, distribution, 3, True, (1 << 20,))
    for tdtype, qdtype, tscheme, qscheme in per_tensor_cases():
        ours = Q.HistogramObserver(dtype=qdtype, qscheme=qscheme)
        theirs = tobs.HistogramObserver(dtype=tdtype, qscheme=tscheme)
        run_both(ours, theirs, xs)
        np.testing.assert_array_equal(ours.histogram, theirs.histogram.numpy())
        compare("HistogramObserver (2^20 batches)", ours, theirs, (distribution, tdtype, tscheme))
