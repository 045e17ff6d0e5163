"""The observers' Python face: constructors with PyTorch's keywords, observe / merge /
calculate_qparams / reset, state and pickling, input dtypes, errors."""

import json
import pickle

import numpy as np
import pytest

import lucidq as Q

ALL_OBSERVERS = [
    lambda: Q.MinMaxObserver(),
    lambda: Q.MovingAverageMinMaxObserver(averaging_constant=0.1),
    lambda: Q.PerChannelMinMaxObserver(ch_axis=1, dtype=Q.qint8, qscheme=Q.per_channel_symmetric),
    lambda: Q.MovingAveragePerChannelMinMaxObserver(ch_axis=-1),
    lambda: Q.HistogramObserver(),
    lambda: Q.HistogramObserver(binning="exact", bins=512),
    lambda: Q.PercentileObserver(percentile=99.9, dtype=Q.qint8, qscheme=Q.per_tensor_symmetric),
    lambda: Q.PercentileObserver(qscheme=Q.per_channel_affine, ch_axis=0),
    lambda: Q.EntropyObserver(dtype=Q.qint8, qscheme=Q.per_tensor_symmetric),
    lambda: Q.MseObserver(),
    lambda: Q.MseObserver(qscheme="per_channel_symmetric", dtype="qint8", ch_axis=1),
]


def calibrate(observer, rng, batches=3):
    for k in range(batches):
        observer.observe((rng.standard_normal((8, 64)) * (1 + k)).astype(np.float32))
    return observer


def same_qparams(a, b):
    return (np.array_equal(a.scale, b.scale) and np.array_equal(a.zero_point, b.zero_point)
            and a.qscheme is b.qscheme and a.qdtype == b.qdtype)


@pytest.mark.parametrize("make", ALL_OBSERVERS)
def test_state_pickle_clone_and_load_observer_give_identical_qparams(rng, make):
    obs = calibrate(make(), rng)
    expected = obs.calculate_qparams()
    state = obs.save_state()
    assert json.loads(state)["observer"] == obs.name
    for copy in (pickle.loads(pickle.dumps(obs)), Q.load_observer(state), obs.clone()):
        assert type(copy) is type(obs)
        assert same_qparams(copy.calculate_qparams(), expected)
        assert copy.save_state() == state
    fresh = make()
    fresh.load_state(state)
    assert same_qparams(fresh.calculate_qparams(), expected)


@pytest.mark.parametrize("make", ALL_OBSERVERS)
def test_no_data_raises_and_reset_forgets(rng, make):
    obs = make()
    with pytest.raises(Q.Error, match="no finite value observed yet"):
        obs.calculate_qparams()
    calibrate(obs, rng)
    assert obs.count == 3 * 8 * 64
    obs.reset()
    assert obs.count == 0
    with pytest.raises(ValueError):
        obs.calculate_qparams()


@pytest.mark.parametrize("make", ALL_OBSERVERS)
def test_nonfinite_is_skipped_and_empty_batches_change_nothing(rng, make):
    clean = calibrate(make(), rng)
    dirty = make()
    dirty.load_state(clean.save_state())
    x = np.full((8, 64), np.nan, np.float32)
    x[0, 0] = np.inf
    x[1, 1] = -np.inf
    dirty.observe(np.zeros((8, 0), np.float32))
    dirty.observe(x)  # no finite value: counted, the statistics stay
    assert dirty.nonfinite_count == 8 * 64
    assert same_qparams(dirty.calculate_qparams(), clean.calculate_qparams())


def test_call_returns_its_input_like_a_torch_observer(rng):
    obs = Q.MinMaxObserver()
    x = rng.standard_normal(10).astype(np.float32)
    assert obs(x) is x
    assert obs.count == 10


def test_properties_follow_pytorch_names():
    obs = Q.MinMaxObserver(dtype=Q.quint8, reduce_range=True)
    assert (obs.quant_min, obs.quant_max) == (0, 127)
    assert obs.dtype == Q.quint8 and obs.qdtype == Q.quint8.with_range(0, 127)
    assert obs.reduce_range and obs.qscheme is Q.per_tensor_affine
    assert obs.min_val == float("inf") and obs.max_val == float("-inf")
    hist = Q.HistogramObserver()
    assert (hist.bins, hist.upsample_rate, hist.binning) == (2048, 128, "pytorch")
    pc = Q.PerChannelMinMaxObserver()
    assert pc.qscheme is Q.per_channel_affine and pc.ch_axis == 0
    assert pc.min_val.shape == (0,)
    assert Q.MovingAverageMinMaxObserver().averaging_constant == pytest.approx(0.01)
    assert Q.PercentileObserver().percentile == 99.99


def test_per_channel_values_are_arrays(rng):
    obs = Q.PerChannelMinMaxObserver(ch_axis=1)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    obs.observe(x)
    np.testing.assert_array_equal(obs.min_val, x.min(axis=(0, 2)))
    np.testing.assert_array_equal(obs.max_val, x.max(axis=(0, 2)))
    lo, hi = obs.clipping_range()
    np.testing.assert_array_equal(lo, obs.min_val)
    assert obs.calculate_qparams().ch_axis == 1


def test_half_and_bfloat16_inputs_match_their_float32_values(rng):
    x = rng.standard_normal(1000).astype(np.float16)
    bits = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # truncated to bfloat16
    as_bf16 = (bits.astype(np.uint32) << 16).view(np.float32)  # the same values as float32
    for make in (Q.MinMaxObserver, Q.HistogramObserver, Q.MseObserver):
        a, b, c, d = make(), make(), make(), make()
        a.observe(x)
        b.observe(x.astype(np.float32))
        c.observe(bits, input_dtype="bfloat16")
        d.observe(as_bf16)
        assert same_qparams(a.calculate_qparams(), b.calculate_qparams())
        assert same_qparams(c.calculate_qparams(), d.calculate_qparams())
    with pytest.raises(Q.Error, match="int32"):
        Q.MinMaxObserver().observe(np.arange(3, dtype=np.int32))


def test_merge_from_python(rng):
    a, b, both = Q.HistogramObserver(binning="exact"), Q.HistogramObserver(binning="exact"), \
        Q.HistogramObserver(binning="exact")
    for k in range(4):
        x = (rng.laplace(size=5000) * (1 + k)).astype(np.float32)
        (a if k % 2 else b).observe(x)
        both.observe(x)
    a.merge(b)
    np.testing.assert_array_equal(a.histogram, both.histogram)
    assert same_qparams(a.calculate_qparams(), both.calculate_qparams())
    with pytest.raises(Q.Error, match="other is a MinMaxObserver"):
        a.merge(Q.MinMaxObserver())


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="quant_min and quant_max"):
        Q.MinMaxObserver(quant_min=0)
    with pytest.raises(ValueError, match="qscheme = per_channel_affine"):
        Q.HistogramObserver(qscheme=Q.per_channel_affine)
    with pytest.raises(ValueError, match="binning"):
        Q.HistogramObserver(binning="fast")
    with pytest.raises(ValueError, match="percentile"):
        Q.PercentileObserver(percentile=10)
    with pytest.raises(ValueError, match="not a JSON object"):
        Q.load_observer("nope")


def test_pass_through_observers(rng):
    fixed = Q.FixedQParamsObserver(scale=2.0 / 256.0, zero_point=128)
    fixed(rng.standard_normal(10).astype(np.float32))
    q = fixed.calculate_qparams()
    assert q.scale[0] == np.float32(2.0 / 256.0) and q.zero_point[0] == 128
    assert (fixed.scale, fixed.zero_point) == (q.scale[0], 128)
    placeholder = Q.PlaceholderObserver(dtype="quint8", compute_dtype="quint8")
    assert (placeholder.dtype, placeholder.compute_dtype) == ("quint8", "quint8")
    assert Q.PlaceholderObserver().compute_dtype is None
    with pytest.raises(Q.Error, match="has no qparams"):
        placeholder.calculate_qparams()
    noop = Q.NoopObserver()
    assert noop.dtype == "float16" and isinstance(noop, Q.PlaceholderObserver)
    assert type(pickle.loads(pickle.dumps(noop))) is Q.NoopObserver
