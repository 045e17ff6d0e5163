"""FakeQuantize / LearnableFakeQuantize against torch 1.13's FakeQuantize / _LearnableFakeQuantize."""

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (apt-get install python3-torch)")
tq = pytest.importorskip("torch.ao.quantization")
from torch.ao.quantization._learnable_fake_quantize import _LearnableFakeQuantize  # noqa: E402

import lucidq  # noqa: E402
import lucidq.workflow as W  # noqa: E402

FACTORY_PAIRS = [
    ("default_fake_quant", W.default_fake_quant, tq.default_fake_quant),
    ("default_weight_fake_quant", W.default_weight_fake_quant, tq.default_weight_fake_quant),
    (
        "default_per_channel_weight_fake_quant",
        W.default_per_channel_weight_fake_quant,
        tq.default_per_channel_weight_fake_quant,
    ),
    ("default_histogram_fake_quant", W.default_histogram_fake_quant, tq.default_histogram_fake_quant),
    (
        "per_channel_affine_axis1",
        W.FakeQuantize.with_args(
            observer=W.MovingAveragePerChannelMinMaxObserver, ch_axis=1, quant_min=0, quant_max=255
        ),
        tq.FakeQuantize.with_args(
            observer=tq.MovingAveragePerChannelMinMaxObserver, ch_axis=1, quant_min=0, quant_max=255
        ),
    ),
    (
        "fixed_qparams_0to1",
        W.default_fixed_qparams_range_0to1_fake_quant,
        tq.default_fixed_qparams_range_0to1_fake_quant,
    ),
]


def tensor(rng, shape, scale=1.0):
    return torch.from_numpy((rng.normal(size=shape) * scale).astype(np.float32))


@pytest.mark.parametrize("name, ours_factory, theirs_factory", FACTORY_PAIRS, ids=lambda v: v if isinstance(v, str) else "")
def test_forward_and_backward_equal_torch(rng, name, ours_factory, theirs_factory):
    ours, theirs = ours_factory(), theirs_factory()
    for step in range(3):
        x = tensor(rng, (6, 10), scale=2.0 + step).requires_grad_()
        x_ref = x.detach().clone().requires_grad_()
        y, y_ref = ours(x), theirs(x_ref)
        assert torch.equal(y, y_ref), f"{name} step {step}: forward differs"
        grad = tensor(rng, (6, 10))
        y.backward(grad)
        y_ref.backward(grad)
        assert torch.equal(x.grad, x_ref.grad), f"{name} step {step}: gradient differs"
        assert torch.equal(ours.scale, theirs.scale)
        assert torch.equal(ours.zero_point.long(), theirs.zero_point.long())
    assert (ours.quant_min, ours.quant_max) == (theirs.quant_min, theirs.quant_max)


def test_flags_are_buffers_and_switch_like_torch(rng):
    fq = W.default_fake_quant()
    assert fq.fake_quant_enabled.dtype == torch.uint8
    assert {"fake_quant_enabled", "observer_enabled", "scale", "zero_point"} <= set(fq.state_dict())
    x = tensor(rng, (4, 4))
    fq(x)
    frozen_scale = fq.scale.clone()
    fq.apply(W.disable_observer)
    fq(x * 10)
    assert torch.equal(fq.scale, frozen_scale) and fq.observer_enabled.item() == 0
    fq.apply(W.disable_fake_quant)
    assert torch.equal(fq(x), x)
    fq.apply(W.enable_fake_quant)
    fq.apply(W.enable_observer)
    assert fq.fake_quant_enabled.item() == 1 and fq.observer_enabled.item() == 1
    # the module functions also switch torch's own fake quantizers
    theirs = tq.default_fake_quant()
    theirs.apply(W.disable_observer)
    assert theirs.observer_enabled.item() == 0


def test_state_dict_round_trip_per_channel(rng):
    source = W.default_per_channel_weight_fake_quant()
    source(tensor(rng, (5, 3)))
    buffer = io.BytesIO()
    torch.save(source.state_dict(), buffer)
    buffer.seek(0)
    target = W.default_per_channel_weight_fake_quant()
    assert target.scale.shape == (1,)
    target.load_state_dict(torch.load(buffer))
    assert target.scale.shape == (5,) and torch.equal(target.scale, source.scale)
    target.disable_observer()
    source.disable_observer()
    x = tensor(rng, (5, 3))
    assert torch.equal(target(x), source(x))


def test_non_float_input_and_bad_observer():
    with pytest.raises(ValueError, match="torch.int64"):
        W.default_fake_quant()(torch.arange(4))
    with pytest.raises(ValueError, match="FixedQParamsObserver"):
        W.FixedQParamsFakeQuantize(observer=W.MinMaxObserver)
    with pytest.raises(ValueError, match="instance"):
        W.QConfig(activation=W.MinMaxObserver(), weight=W.MinMaxObserver)


LSQ_CASES = [
    # (id, per_channel, use_grad_scaling, quant_min, quant_max, zero_point, qscheme)
    ("per_tensor", False, True, 0, 255, 3.0, torch.per_tensor_affine),
    ("per_tensor_zero_point_tie", False, True, 0, 255, 2.5, torch.per_tensor_affine),
    ("per_tensor_no_grad_scaling", False, False, 0, 255, 7.3, torch.per_tensor_affine),
    ("per_tensor_symmetric_qint8", False, True, -128, 127, 0.0, torch.per_tensor_symmetric),
    ("per_tensor_4bit", False, True, 0, 15, 8.0, torch.per_tensor_affine),
    ("per_channel", True, True, 0, 255, 3.0, torch.per_channel_affine),
    ("per_channel_zero_point_tie", True, False, 0, 255, 2.5, torch.per_channel_affine),
]


def make_lsq_pair(per_channel, grad_scaling, qmin, qmax, zero_point, qscheme, channels):
    kwargs = dict(
        quant_min=qmin, quant_max=qmax, scale=0.05, zero_point=zero_point,
        channel_len=channels if per_channel else -1, use_grad_scaling=grad_scaling,
        qscheme=qscheme, dtype=torch.quint8 if qmin >= 0 else torch.qint8,
    )
    if per_channel:
        ours = W.LearnableFakeQuantize(observer=W.MovingAveragePerChannelMinMaxObserver, **kwargs)
        theirs = _LearnableFakeQuantize(observer=tq.MovingAveragePerChannelMinMaxObserver, **kwargs)
    else:
        ours = W.LearnableFakeQuantize(observer=W.MovingAverageMinMaxObserver, **kwargs)
        theirs = _LearnableFakeQuantize(observer=tq.MovingAverageMinMaxObserver, **kwargs)
    return ours, theirs


def relative(a, b):
    return ((a - b).abs() / b.abs().clamp_min(1e-30)).max().item()


def torch_cpu_capability():
    """torch's kernel tier ("AVX2", "AVX512", "NO AVX"), as torch.__config__.show() reports it."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":")[1].strip()
    return "unknown"


@pytest.mark.parametrize("case", LSQ_CASES, ids=lambda c: c[0])
def test_lsq_gradients_equal_torch(rng, case):
    if torch_cpu_capability() in ("DEFAULT", "NO AVX"):
        # torch's AVX2 / AVX512 kernels (every x86-64 CPU with AVX2) fuse x_hat - x into one
        # multiply-add, as lucidq does; its DEFAULT kernel (ATEN_CPU_CAPABILITY=default)
        # rounds twice, which moves the summed scale gradient by up to ~2e-6.
        pytest.skip("torch runs its DEFAULT (non-FMA) kernels: ATEN_CPU_CAPABILITY=default")
    _, per_channel, grad_scaling, qmin, qmax, zero_point, qscheme = case
    ours, theirs = make_lsq_pair(per_channel, grad_scaling, qmin, qmax, zero_point, qscheme, 8)
    ours.enable_param_learning()
    theirs.enable_param_learning()
    x = tensor(rng, (8, 16), scale=0.6).requires_grad_()  # some values fall outside the grid
    x_ref = x.detach().clone().requires_grad_()
    grad = tensor(rng, (8, 16))
    y, y_ref = ours(x), theirs(x_ref)
    assert torch.equal(y, y_ref)
    y.backward(grad)
    y_ref.backward(grad)
    scale_rel = relative(ours.scale.grad, theirs.scale.grad)
    zero_rel = relative(ours.zero_point.grad, theirs.zero_point.grad)
    print(f"{case[0]}: dscale relative {scale_rel:.2e}, dzero_point relative {zero_rel:.2e}")
    assert torch.equal(x.grad, x_ref.grad)
    assert scale_rel <= 1e-6 and zero_rel <= 1e-6


def test_lsq_grad_factor_is_one_over_sqrt_numel_qmax(rng):
    scaled, _ = make_lsq_pair(False, True, 0, 255, 3.0, torch.per_tensor_affine, 1)
    plain, _ = make_lsq_pair(False, False, 0, 255, 3.0, torch.per_tensor_affine, 1)
    x = tensor(rng, (4, 8))
    for module in (scaled, plain):
        module.enable_param_learning()
        module(x).sum().backward()
    factor = 1.0 / (x.numel() * 255) ** 0.5
    assert scaled.scale.grad.item() == pytest.approx(plain.scale.grad.item() * factor, rel=1e-5)


def test_lsq_static_estimate_follows_observer_then_learns(rng):
    ours, theirs = make_lsq_pair(False, True, 0, 255, 0.0, torch.per_tensor_affine, 1)
    for module in (ours, theirs):
        module.enable_static_estimate()
    x = tensor(rng, (8, 8))
    assert torch.equal(ours(x), theirs(x))
    assert torch.equal(ours.scale.data, theirs.scale.data)
    assert not ours.scale.requires_grad
    ours.enable_param_learning()
    assert ours.scale.requires_grad and ours.static_enabled.item() == 0
    optimizer = torch.optim.SGD(ours.parameters(), lr=0.1)
    before = ours.scale.item()
    (ours(x) - x * 0.5).pow(2).sum().backward()
    optimizer.step()
    assert ours.scale.item() != before
    scale, zero_point = ours.calculate_qparams()
    assert zero_point.dtype == torch.int64 and scale.item() > 0
