"""The int8 GEMM against PyTorch 1.13's quantized linear ops (dynamic, weights, static).

Skipped when torch is missing. Engines: whichever of fbgemm / onednn / qnnpack the
installed torch supports (Debian's 1.13 build has onednn and qnnpack, no fbgemm).
Run with -s to see the figures; each randomised test prints its seed.

(1) Dynamic: torch.ops.quantized.linear_dynamic on linear_prepack(quantize_per_channel
    (w, qint8)) vs lucidq.gemm_dynamic on the same codes. Both outputs are compared with
    the float64 product of the ORIGINAL float weight and activations. Ours quantizes each
    activation row on its own by default (per_row=True), torch the whole tensor (with
    reduce_range when asked: onednn honours it, qnnpack ignores it). Asserted: our RMS
    error is no larger than torch's, with and without reduce_range. Our per_row=False
    uses torch's reduce_range=False semantics (quint8 over the tensor's min / max widened
    to 0): same zero point, scale equal or one ulp apart; with equal activation codes the
    outputs are bit-identical to qnnpack's and within float32 rounding of onednn's.
(2) Weights: PackedWeightsInt8.quantize(per_channel=True) equals
    PerChannelMinMaxObserver(qint8, per_channel_symmetric) + quantize_per_channel exactly.
(3) Static: torch.ao.nn.quantized.Linear vs QuantizedLinear (float bias) and
    gemm_requantize (bias_int32 quantized as torch does): torch requantizes in float32,
    we in double, so codes may differ by 1; asserted max difference <= 1 and a small
    fraction differing (reported).

Every comparison is first made against an exact int64 reference (the integer product, then
docs/numerics.md's float or double stage). torch is compared with only where its engine is
exact, which is measured, not assumed (`engine_is_exact`): without VNNI, oneDNN multiplies
u8 x s8 with vpmaddubsw, whose int16 pair sums saturate (2 * 255 * 127 > 32767), so torch's
onednn engine is wrong on such CPUs. Its deviation is then printed as a measured fact.
"""

import numpy as np
import pytest

import lucidq as Q
from qhelpers import engine_is_exact

torch = pytest.importorskip("torch")

ENGINES = [
    e for e in ("fbgemm", "onednn", "qnnpack") if e in torch.backends.quantized.supported_engines
]


@pytest.fixture(params=ENGINES or [pytest.param(None, marks=pytest.mark.skip("no engine"))])
def engine(request):
    saved = torch.backends.quantized.engine
    torch.backends.quantized.engine = request.param
    yield request.param
    torch.backends.quantized.engine = saved




def exact_accumulators(codes, zero_point, w_codes):
    """The exact int64 acc[m, n] = sum_k (A[m, k] - z_A) * W[n, k]."""
    return (codes.astype(np.int64) - zero_point) @ w_codes.astype(np.int64).T


def torch_weight(w):
    """torch's per-channel symmetric qint8 weight of float w [N, K]."""
    obs = torch.ao.quantization.PerChannelMinMaxObserver(
        dtype=torch.qint8, qscheme=torch.per_channel_symmetric
    )
    t = torch.from_numpy(w)
    obs(t)
    scale, zero_point = obs.calculate_qparams()
    return torch.quantize_per_channel(t, scale.double(), zero_point, 0, torch.qint8)


def packed_from_torch(qw):
    """The same codes and scales in a PackedWeightsInt8."""
    scales = qw.q_per_channel_scales().numpy().astype(np.float32)
    return Q.PackedWeightsInt8.pack(qw.int_repr().numpy(), scales)


def activations(rng, m, k, kind):
    x = rng.normal(size=(m, k))
    if kind == "outlier rows":  # per-token magnitudes spread over 3 decades (LLM-like)
        x *= np.exp(rng.uniform(np.log(0.01), np.log(10), (m, 1)))
    elif kind == "shifted":  # mostly positive, no row crosses far below 0
        x = np.abs(x) + 0.5
    return x.astype(np.float32)


def errors(y, ref):
    d = y.astype(np.float64) - ref
    return float(np.sqrt(np.mean(d * d))), float(np.abs(d).max())


DYNAMIC_CASES = [(64, 127, 64, "normal"), (33, 64, 255, "outlier rows"), (17, 33, 127, "shifted")]


@pytest.mark.parametrize("m, n, k, kind", DYNAMIC_CASES)
def test_dynamic_no_worse_than_torch(rng, engine, m, n, k, kind):
    w = rng.normal(size=(n, k)).astype(np.float32)
    bias = rng.normal(size=n).astype(np.float32)
    x = activations(rng, m, k, kind)
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + bias

    qw = torch_weight(w)
    packed = packed_from_torch(qw)
    assert np.array_equal(packed.unpack(), Q.PackedWeightsInt8.quantize(w).unpack())
    params = torch.ops.quantized.linear_prepack(qw, torch.from_numpy(bias))

    ours = errors(Q.gemm_dynamic(x, packed, bias), ref)
    ours_tensor = errors(Q.gemm_dynamic(x, packed, bias, per_row=False), ref)
    for reduce_range in (False, True):
        y = torch.ops.quantized.linear_dynamic(torch.from_numpy(x), params, reduce_range).numpy()
        theirs = errors(y, ref)
        print(
            f"dynamic {engine} {kind} M={m} N={n} K={k} reduce_range={reduce_range}: RMS / max "
            f"error ours per_row {ours[0]:.3e} / {ours[1]:.3e}, ours per-tensor "
            f"{ours_tensor[0]:.3e} / {ours_tensor[1]:.3e}, torch {theirs[0]:.3e} / {theirs[1]:.3e}"
        )
        assert ours[0] <= theirs[0]


def test_dynamic_activation_qparams_relationship(rng):
    """Our per-tensor activation qparams (calculate_qparams, as torch's MinMaxObserver: float32
    (max - min) / 255) vs torch's dynamic-path ChooseQuantizationParams (the same in double,
    then rounded): zero points equal, scales equal or one float32 ulp apart, except that
    torch 1.13 raises scales below SMALL_SCALE_THRESHOLD = 6.1e-5 to it (ranges narrower
    than 255 * 6.1e-5 = 0.0156); ours keep the finer scale."""
    floor = np.float32(6.1e-5)
    count, differ, floored = 5000, 0, 0
    for _ in range(count):
        x = (rng.normal(size=8) * np.exp(rng.uniform(-8, 8))
             + rng.normal() * np.exp(rng.uniform(-8, 8))).astype(np.float32)
        s_t, z_t = torch._choose_qparams_per_tensor(torch.from_numpy(x), False)
        ours = Q.choose_qparams(x, Q.per_tensor_affine, Q.quint8)
        s_o, s_t = ours.scale[0], np.float32(s_t)
        if s_t == floor and s_o < floor:
            floored += 1
            continue
        assert int(ours.zero_point[0]) == z_t
        assert s_o == s_t or np.nextafter(s_o, s_t) == s_t, (s_o, s_t)
        differ += int(s_o != s_t)
    assert differ > 0 and floored > 0  # both cases were exercised
    print(f"dynamic activation qparams: {count} tensors; {floored} below torch's 6.1e-5 scale "
          f"floor; of the rest, zero points all equal and {differ} scales "
          f"({differ / (count - floored):.1%}) one float32 ulp apart, the others equal")


@pytest.mark.parametrize("m, n, k, kind", DYNAMIC_CASES)
def test_dynamic_per_tensor_relationship(rng, engine, m, n, k, kind):
    """per_row=False vs torch's reduce_range=False: the same arithmetic up to float rounding.

    Given torch's activation (scale, zero point), the codes are quantize_per_tensor's and
    gemm_float on them reproduces torch's linear_dynamic: bit for bit on qnnpack; on onednn
    within twice the two-sided float32 bound 2 (4.0001 u |acc s_A s_W| + u |b|) of
    test_gemm.float_bound (onednn orders its float operations differently; measured <= 1.2x
    the bound). Our own gemm_dynamic uses our qparams, equal to torch's unless the scale is
    one ulp apart (test above); when equal, the same relation holds for it.
    """
    u = 2.0**-24
    w = rng.normal(size=(n, k)).astype(np.float32)
    bias = rng.normal(size=n).astype(np.float32)
    x = activations(rng, m, k, kind)
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + bias
    qw = torch_weight(w)
    packed = packed_from_torch(qw)
    params = torch.ops.quantized.linear_prepack(qw, torch.from_numpy(bias))
    theirs = torch.ops.quantized.linear_dynamic(torch.from_numpy(x), params, False).numpy()

    s_t, z_t = torch._choose_qparams_per_tensor(torch.from_numpy(x), False)
    s_t = float(np.float32(s_t))
    codes = Q.quantize(x, Q.QParams.per_tensor(s_t, z_t, Q.quint8)).int_repr().astype(np.uint8)
    emulated = Q.gemm_float(codes, packed, s_t, z_t, bias).astype(np.float64)
    bound = 2 * (4.0001 * u * np.abs(emulated - bias) + u * np.abs(bias)) * (1 + 1e-6)
    if engine != "qnnpack":
        bound *= 2
    ratio = float((np.abs(emulated - theirs) / bound).max())

    ours = Q.gemm_dynamic(x, packed, bias, per_row=False)
    same_scale = Q.choose_qparams(x, Q.per_tensor_affine, Q.quint8).scale[0] == np.float32(s_t)
    e_ours, e_theirs = errors(ours, ref)[0], errors(theirs, ref)[0]
    print(
        f"dynamic per-tensor {engine} {kind}: with torch's qparams "
        f"{np.mean(emulated == theirs):.1%} outputs bit-identical, max |diff| / bound "
        f"{ratio:.3f}; gemm_dynamic same scale: {same_scale}, "
        f"{np.mean(ours == theirs):.1%} bit-identical; RMS error ours "
        f"{e_ours:.4e} torch {e_theirs:.4e}"
    )
    # Against the exact product first: gemm_float's float32 stage is within float_bound.
    acc = exact_accumulators(codes, z_t, qw.int_repr().numpy())
    w_scales = packed.scales.astype(np.float64)
    exact = acc * np.float64(s_t) * w_scales + bias.astype(np.float64)
    one_sided = (4.0001 * u * np.abs(acc * np.float64(s_t) * w_scales) + u * np.abs(bias)) * (1 + 1e-6)
    assert np.all(np.abs(emulated - exact) <= one_sided)
    if not engine_is_exact(engine):
        dev = float((np.abs(theirs - exact) / one_sided).max())
        print(f"dynamic per-tensor {engine}: torch is not exact on this CPU: its outputs are up "
              f"to {dev:.3g}x the float32 bound away from the exact product; lucidq is within it")
        return
    if engine == "qnnpack":
        assert np.array_equal(emulated, theirs)
    assert np.all(np.abs(emulated - theirs) <= bound)
    if same_scale:
        assert np.all(np.abs(ours - theirs) <= bound)
    assert abs(e_ours - e_theirs) <= 0.01 * e_theirs


@pytest.mark.parametrize("n, k", [(1, 1), (17, 33), (127, 64), (64, 255)])
def test_weight_quantization_equals_torch(rng, n, k):
    w = (rng.normal(size=(n, k)) * np.exp(rng.uniform(-5, 3, (n, 1)))).astype(np.float32)
    if n > 3:
        w[2] = 0.0  # an all-zero channel: scale from eps
        w[3] = np.abs(w[3])  # a channel without negatives
    qw = torch_weight(w)
    ours = Q.PackedWeightsInt8.quantize(w, per_channel=True)
    torch_scales = qw.q_per_channel_scales().numpy()
    assert np.array_equal(ours.scales.astype(np.float64), torch_scales)
    assert np.all(qw.q_per_channel_zero_points().numpy() == 0)
    assert np.array_equal(ours.unpack(), qw.int_repr().numpy())
    print(f"weights N={n} K={k}: {n * k} codes and {n} scales equal to torch's")


def torch_bias_int32(bias, a_scale, w_scales):
    """torch's quantized bias: round(bias / (s_A * s_W[n])) in float32, as quantize_per_channel
    with qint32 does (x * (1 / s), ties to even)."""
    s = (np.float32(a_scale) * w_scales).astype(np.float32)
    return np.rint(bias.astype(np.float32) * (np.float32(1) / s)).astype(np.int32)


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("m, n, k", [(64, 127, 64), (33, 64, 255)])
def test_static_linear_codes_within_one(rng, engine, m, n, k, relu):
    w = rng.normal(size=(n, k)).astype(np.float32)
    bias = rng.normal(size=n).astype(np.float32)
    x = rng.normal(size=(m, k)).astype(np.float32)
    in_scale, in_zp = 0.03, 128
    ref = x.astype(np.float64) @ w.T.astype(np.float64) + bias
    hi = float(np.abs(ref).max())
    out_scale, out_zp = float(np.float32(2 * hi / 255)), 128

    qw = torch_weight(w)
    if relu:  # torch 1.13 keeps the fused module under torch.nn.intrinsic
        import torch.nn.intrinsic.quantized as fused

        cls = fused.LinearReLU
    else:
        cls = torch.ao.nn.quantized.Linear
    layer = cls(k, n)
    layer.set_weight_bias(qw, torch.from_numpy(bias))
    layer.scale, layer.zero_point = out_scale, out_zp
    qx = torch.quantize_per_tensor(torch.from_numpy(x), in_scale, in_zp, torch.quint8)
    theirs = layer(qx).int_repr().numpy().astype(np.int64)

    packed = packed_from_torch(qw)
    codes = qx.int_repr().numpy()
    ours_layer = Q.QuantizedLinear(
        packed, bias, input_scale=in_scale, input_zero_point=in_zp, output_scale=out_scale,
        output_zero_point=out_zp, relu=relu,
    )
    assert np.array_equal(Q.quantize(x, ours_layer.input_qparams).int_repr(), codes)
    ours_float_bias = ours_layer.forward_codes(codes).astype(np.int64)
    b32 = torch_bias_int32(bias, in_scale, packed.scales)
    ours_int_bias = Q.gemm_requantize(
        codes, packed, in_scale, in_zp, out_scale, out_zp, bias_int32=b32, relu=relu
    ).astype(np.int64)
    # The exact reference: int64 accumulators, then docs/numerics.md's double stage (c).
    acc = exact_accumulators(codes, in_zp, qw.int_repr().numpy())
    mult = np.float64(in_scale) * packed.scales.astype(np.float64) / np.float64(out_scale)
    low = out_zp if relu else 0

    def requantized(total, offset):
        return np.clip(np.rint(total * mult + offset) + out_zp, low, 255).astype(np.int64)

    exact_float_bias = requantized(acc.astype(np.float64), bias.astype(np.float64) / out_scale)
    exact_int_bias = requantized((acc + b32).astype(np.float64), 0.0)
    assert np.array_equal(ours_float_bias, exact_float_bias)
    assert np.array_equal(ours_int_bias, exact_int_bias)
    if not engine_is_exact(engine):
        diff = np.abs(exact_float_bias - theirs)
        print(f"static {engine} M={m} N={n} K={k} relu={relu}: torch is not exact on this CPU: "
              f"{np.count_nonzero(diff > 1)} of {diff.size} codes more than 1 from the exact "
              f"result (max {diff.max()}); lucidq equals it")
        return
    for name, ours in (("float bias", ours_float_bias), ("bias_int32", ours_int_bias)):
        diff = np.abs(ours - theirs)
        print(
            f"static {engine} M={m} N={n} K={k} relu={relu} ({name}): {diff.size} codes, "
            f"{np.count_nonzero(diff)} differ ({np.mean(diff > 0):.2%}), "
            f"max difference {diff.max()}"
        )
        assert diff.max() <= 1
        assert np.mean(diff > 0) <= 0.02


def test_inexact_onednn_path_is_exercised_on_every_cpu():
    """The branch above for an inexact engine runs wherever this test runs: oneDNN limited to
    AVX2 (ONEDNN_MAX_CPU_ISA, read once per process, hence a subprocess) uses vpmaddubsw and
    saturates, as it does on CPUs without VNNI; the lucidq assertions must still hold."""
    if "onednn" not in ENGINES:
        pytest.skip("this torch has no onednn engine")
    import os
    import subprocess
    import sys

    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", __file__, "-q", "-s", "-p", "no:cacheprovider",
         "-k", "onednn and not inexact_onednn_path"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    print(run.stdout[-3000:])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "engine onednn: 255 x 127" in run.stdout
    if "NOT exact" not in run.stdout:
        pytest.skip("oneDNN stayed exact with ONEDNN_MAX_CPU_ISA=AVX2 (it may ignore the limit)")
