"""lucidq.workflow's observer modules: parity with torch.ao.quantization 1.13, state_dict, errors."""

import copy
import io
import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (apt-get install python3-torch)")
tq = pytest.importorskip("torch.ao.quantization")

import lucidq  # noqa: E402
import lucidq.workflow as W  # noqa: E402

PER_TENSOR = [
    {},
    {"dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric},
    {"dtype": torch.quint8, "qscheme": torch.per_tensor_symmetric},
    {"reduce_range": True},
    {"quant_min": 0, "quant_max": 127},
    {"dtype": torch.qint8, "quant_min": -127, "quant_max": 127, "eps": 2.0**-12},
]
PER_CHANNEL = [
    {},
    {"dtype": torch.qint8, "qscheme": torch.per_channel_symmetric},
    {"ch_axis": 1},
    {"ch_axis": -1, "dtype": torch.qint8, "qscheme": torch.per_channel_symmetric},
]
PAIRS_PER_TENSOR = [
    ("MinMaxObserver", {}),
    ("MovingAverageMinMaxObserver", {"averaging_constant": 0.1}),
    ("HistogramObserver", {}),
    ("HistogramObserver", {"bins": 256}),
]
PAIRS_PER_CHANNEL = [
    ("PerChannelMinMaxObserver", {}),
    ("MovingAveragePerChannelMinMaxObserver", {"averaging_constant": 0.1}),
]


def batches(rng, shape=(6, 5, 4), count=4):
    """Calibration batches whose range grows and shifts (exercises the histogram's re-binning)."""
    return [
        torch.from_numpy((rng.normal(size=shape) * (1 + i) + 0.3 * i).astype(np.float32))
        for i in range(count)
    ]


def assert_same_qparams(ours, theirs, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's reduce_range deprecation
        for x in data:
            assert ours(x) is x
            theirs(x)
        scale, zero_point = ours.calculate_qparams()
        ref_scale, ref_zero_point = theirs.calculate_qparams()
    assert scale.dtype == torch.float32 and zero_point.dtype == torch.int64
    assert scale.shape == ref_scale.shape
    relative = ((scale - ref_scale).abs() / ref_scale).max().item()
    print(f"{type(ours).__name__}: scale relative difference {relative:.2e}")
    assert relative <= 1e-6
    assert torch.equal(zero_point, ref_zero_point.long())
    assert torch.equal(ours.min_val, theirs.min_val) and torch.equal(ours.max_val, theirs.max_val)


@pytest.mark.parametrize("kwargs", PER_TENSOR, ids=str)
@pytest.mark.parametrize("name, own", PAIRS_PER_TENSOR, ids=lambda v: str(v))
def test_per_tensor_qparams_equal_torch(rng, name, own, kwargs):
    ours = getattr(W, name)(**own, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(tq, name)(**own, **kwargs)
    assert_same_qparams(ours, theirs, batches(rng))
    assert (ours.quant_min, ours.quant_max) == (theirs.quant_min, theirs.quant_max)


@pytest.mark.parametrize("kwargs", PER_CHANNEL, ids=str)
@pytest.mark.parametrize("name, own", PAIRS_PER_CHANNEL, ids=lambda v: str(v))
def test_per_channel_qparams_equal_torch(rng, name, own, kwargs):
    ours = getattr(W, name)(**own, **kwargs)
    theirs = getattr(tq, name)(**own, **kwargs)
    assert_same_qparams(ours, theirs, batches(rng))


def test_attributes_are_lucidq_values():
    obs = W.PerChannelMinMaxObserver(ch_axis=1, dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
    assert obs.dtype == lucidq.qint8 and obs.qscheme is lucidq.per_channel_symmetric
    assert (obs.ch_axis, obs.quant_min, obs.quant_max) == (1, -128, 127)
    assert obs.eps == pytest.approx(float(np.finfo(np.float32).eps))
    reduced = W.MinMaxObserver(reduce_range=True)
    assert (reduced.dtype, reduced.quant_min, reduced.quant_max) == (lucidq.quint8, 0, 127)
    assert W.MinMaxObserver(dtype="qint4").quant_max == 7


def test_bfloat16_and_float16_inputs_observed(rng):
    x = torch.from_numpy(rng.normal(size=(8, 3)).astype(np.float32))
    for dtype in (torch.float16, torch.bfloat16):
        low = x.to(dtype)
        ours, theirs = W.MinMaxObserver(), W.MinMaxObserver()
        ours(low)
        theirs(low.float())
        assert torch.equal(ours.calculate_qparams()[0], theirs.calculate_qparams()[0])


def test_no_data_error_and_non_float_input():
    for obs in (W.MinMaxObserver(), W.PerChannelMinMaxObserver(), W.HistogramObserver()):
        with pytest.raises(ValueError, match="saw no data"):
            obs.calculate_qparams()
    obs = W.MinMaxObserver()
    obs(torch.tensor([float("nan"), float("inf")]))
    with pytest.raises(ValueError, match="saw no data"):
        obs.calculate_qparams()
    with pytest.raises(ValueError, match="torch.int64"):
        obs(torch.arange(3))
    with pytest.raises(ValueError, match="expected a torch tensor"):
        obs([1.0, 2.0])


def test_per_channel_shape_mismatch_is_clear():
    obs = W.PerChannelMinMaxObserver(ch_axis=0)
    obs(torch.ones(4, 3))
    with pytest.raises(ValueError, match="channel"):
        obs(torch.ones(5, 3))


def test_unknown_argument_names_the_class():
    with pytest.raises(TypeError, match="MinMaxObserver"):
        W.MinMaxObserver(bogus=1)
    with pytest.raises(ValueError, match="quint4x2"):
        W.MinMaxObserver(dtype=torch.quint4x2)


@pytest.mark.parametrize("make", [
    lambda: W.PerChannelMinMaxObserver(dtype=torch.qint8, qscheme=torch.per_channel_symmetric),
    lambda: W.MovingAveragePerChannelMinMaxObserver(ch_axis=1),
    lambda: W.HistogramObserver(bins=64),
    lambda: W.MovingAverageMinMaxObserver(),
    lambda: W.PercentileObserver(percentile=99.0, bins=128),
    lambda: W.MseObserver(bins=128),
])
def test_state_dict_round_trip_resizes(rng, make):
    calibrated = make()
    for x in batches(rng):
        calibrated(x)
    state = calibrated.state_dict()
    assert {"min_val", "max_val", "observer_state"} <= set(state)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    fresh = make()  # per-channel buffers are empty here: loading must resize them
    fresh.load_state_dict(torch.load(buffer))
    for a, b in zip(fresh.calculate_qparams(), calibrated.calculate_qparams()):
        assert torch.equal(a, b)
    assert torch.equal(fresh.min_val, calibrated.min_val)
    # the statistics keep accumulating identically after loading
    more = batches(rng, count=1)[0] * 7
    fresh(more)
    calibrated(more)
    for a, b in zip(fresh.calculate_qparams(), calibrated.calculate_qparams()):
        assert torch.equal(a, b)


def test_histogram_buffer_and_torch_state_names(rng):
    obs = W.HistogramObserver(bins=32)
    reference = tq.HistogramObserver(bins=32)
    for x in batches(rng, count=2):
        obs(x)
        reference(x)
        assert torch.equal(obs.histogram, reference.histogram)  # follows every batch
    state = obs.state_dict()
    assert state["histogram"].shape == (32,)
    assert torch.equal(state["histogram"], reference.histogram)


def test_loading_another_class_reports_error(rng):
    source = W.MinMaxObserver()
    source(batches(rng, count=1)[0])
    target = W.HistogramObserver()
    with pytest.raises(RuntimeError, match="observer_state"):
        target.load_state_dict(source.state_dict(), strict=False)
    # the target keeps its own (empty) state, and its buffers say so
    assert json.loads(bytes(target.observer_state.numpy()))["observer"] == "HistogramObserver"
    assert target.min_val.item() == float("inf")


def test_deepcopy_and_pickle_keep_statistics(rng):
    obs = W.PerChannelMinMaxObserver()
    obs(batches(rng, count=1)[0])
    clone = copy.deepcopy(obs)
    buffer = io.BytesIO()
    torch.save(obs, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    for other in (clone, loaded):
        for a, b in zip(other.calculate_qparams(), obs.calculate_qparams()):
            assert torch.equal(a, b)


def test_fixed_and_placeholder_observers():
    fixed = W.FixedQParamsObserver(scale=1.0 / 256, zero_point=0)
    x = torch.randn(3)
    assert fixed(x) is x
    scale, zero_point = fixed.calculate_qparams()
    assert scale.tolist() == [1.0 / 256] and zero_point.tolist() == [0]
    assert (fixed.quant_min, fixed.quant_max, fixed.dtype) == (0, 255, lucidq.quint8)
    placeholder = W.default_dynamic_quant_observer()
    assert placeholder.dtype == lucidq.quint8 and placeholder.compute_dtype == lucidq.quint8
    assert W.NoopObserver().dtype == torch.float16
    assert placeholder(x) is x
    with pytest.raises(ValueError):
        placeholder.calculate_qparams()


def test_with_args_factories():
    factory = W.MinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
    assert repr(factory).startswith("MinMaxObserver.with_args(dtype=torch.qint8")
    first, second = factory(), factory()
    assert first is not second and first.dtype == lucidq.qint8
    narrower = factory.with_args(quant_min=-127, quant_max=127)
    assert narrower().quant_min == -127 and factory().quant_min == -128
    assert factory == W.MinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
    assert factory != narrower
