"""Tests of lucidq.WeightOnlyLinear / PackedWeightsLowBit / weight_only_linear (NumPy in and out)."""

import pathlib
import re

import numpy as np
import pytest

import lucidq as Q


def exact(x, layer):
    """x · ŵᵀ + bias in float64 from the layer's own decoded weight (codes, scales, zero points)."""
    w = layer.weight
    q = w.codes().astype(np.float64)
    s = w.scales().astype(np.float64)
    z = w.zero_points().astype(np.float64)
    g = layer.format["group_size"] or layer.in_features
    cols = np.arange(layer.in_features) // g
    w_hat = s[:, cols] * (q - z[:, cols])
    y = x.astype(np.float64) @ w_hat.T
    if layer.bias is not None:
        y += layer.bias
    return y, w_hat


def bound(x, layer):
    """The rounding bound of docs/numerics.md: (L + G + 6)·u·Σ|x|·s·(|q|+|z|) + u·|y|."""
    w = layer.weight
    g = layer.format["group_size"] or layer.in_features
    cols = np.arange(layer.in_features) // g
    s = np.abs(w.scales().astype(np.float64))[:, cols]  # the search grid's scales may be < 0
    mag = s * (np.abs(w.codes()) + np.abs(w.zero_points())[:, cols])
    longest = (min(g, layer.in_features) + 7) // 8 * 8
    u = 2.0**-24
    y, _ = exact(x, layer)
    return (longest + w.groups_per_row + 6) * u * (np.abs(x.astype(np.float64)) @ mag.T) + u * np.abs(y)


@pytest.mark.parametrize("bits,group_size", [(4, 32), (4, 128), (4, None), (8, 64), (8, None)])
@pytest.mark.parametrize("symmetric", [True, False])
def test_product_within_rounding_bound(rng, bits, group_size, symmetric):
    n, k, m = 37, 300, 5
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    layer = Q.WeightOnlyLinear.from_float(
        w, b, bits=bits, group_size=group_size, symmetric=symmetric, activations="float32"
    )
    x = rng.standard_normal((m, k)).astype(np.float32)
    y = layer(x)
    assert y.dtype == np.float32 and y.shape == (m, n)
    want, w_hat = exact(x, layer)
    assert np.all(np.abs(y - want) <= bound(x, layer))
    np.testing.assert_array_equal(layer.dequantized_weight(), (w_hat).astype(np.float32))


def test_sqnr_matches_uniform_noise_model(rng):
    n, k, m = 128, 512, 8
    w = rng.standard_normal((n, k)).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    y_true = x.astype(np.float64) @ w.astype(np.float64).T
    for bits, group in [(8, None), (4, 32), (4, 64), (4, 128), (4, 256)]:
        layer = Q.WeightOnlyLinear.from_float(
            w, None, bits=bits, group_size=group, activations="float32"
        )
        y = layer(x).astype(np.float64)
        s = layer.weight.scales().astype(np.float64)[:, np.arange(k) // (group or k)]
        predicted_noise = (x.astype(np.float64) ** 2) @ (s**2 / 12.0).T
        measured = 10 * np.log10(np.sum(y_true**2) / np.sum((y - y_true) ** 2))
        predicted = 10 * np.log10(np.sum(y_true**2) / np.sum(predicted_noise))
        print(f"int{bits} group={group}: SQNR measured {measured:.2f} dB, predicted {predicted:.2f} dB")
        assert abs(measured - predicted) < 1.0


def test_leading_dims_bf16_and_float64(rng):
    n, k = 16, 64
    w = rng.standard_normal((n, k)).astype(np.float32)
    layer = Q.WeightOnlyLinear.from_float(w, bits=8, group_size=32)
    x = rng.standard_normal((2, 3, k)).astype(np.float32)
    y = layer(x)
    assert y.shape == (2, 3, n)
    np.testing.assert_array_equal(layer(x.astype(np.float64)), y)  # float64 rounds to x exactly
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)  # truncation: exact bf16 values of x_bf
    x_bf = (bits.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(layer(bits, input_dtype="bfloat16"), layer(x_bf))


def test_round_trip_through_quantized_tensor(rng):
    w = rng.standard_normal((20, 96)).astype(np.float32)
    layer = Q.WeightOnlyLinear.from_float(w, bits=4, group_size=32, symmetric=False, scale_type="bf16")
    qt = layer.to_quantized()
    again = Q.WeightOnlyLinear.from_quantized(qt)
    np.testing.assert_array_equal(again.weight.codes(), layer.weight.codes())
    np.testing.assert_array_equal(again.weight.scales(), layer.weight.scales())
    x = rng.standard_normal((3, 96)).astype(np.float32)
    np.testing.assert_array_equal(again(x), layer(x))
    np.testing.assert_array_equal(qt.int_repr(), layer.weight.codes())
    np.testing.assert_array_equal(Q.dequantize(qt), layer.dequantized_weight())
    assert layer.format == {
        "bits": 4,
        "group_size": 32,
        "symmetric": False,
        "scale_type": "bf16",
        "grid": "search",
    }
    assert "bits=4" in repr(layer)


def test_errors():
    w = np.ones((4, 64), np.float32)
    with pytest.raises(ValueError, match="bits = 3"):
        Q.WeightOnlyLinear.from_float(w, bits=3)
    with pytest.raises(ValueError, match="group_size = 48"):
        Q.WeightOnlyLinear.from_float(w, group_size=48)
    with pytest.raises(ValueError, match="scale_type"):
        Q.WeightOnlyLinear.from_float(w, scale_type="f8")
    with pytest.raises(ValueError, match="grid"):
        Q.WeightOnlyLinear.from_float(w, grid="mse")
    with pytest.raises(ValueError, match="expected a 2-D array"):
        Q.WeightOnlyLinear.from_float(np.ones(8, np.float32))
    layer = Q.WeightOnlyLinear.from_float(w, np.zeros(4, np.float32), group_size=32)
    with pytest.raises(ValueError, match=r"x shape = \[2, 63\]"):
        layer(np.ones((2, 63), np.float32))
    with pytest.raises(ValueError, match=r"bias has shape \(3,\)"):
        Q.WeightOnlyLinear.from_float(w, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="input_dtype"):
        layer(np.ones((2, 64), np.float32), input_dtype="int8")


def int8_reference(x, layer):
    """The int8 path in float64 from the layer's codes: per-row uint8 affine codes of x (the
    core's calculate_qparams / quantize), y = s_x · (xq − z_x) · ŵᵀ + bias, and the float32
    rounding bound of the documented steps, (G + 6)·u·s_x·Σ(xq + z_x)·s·(|w8| + |zw|) + u·|y|."""
    w = layer.weight
    g = layer.format["group_size"] or layer.in_features
    cols = np.arange(layer.in_features) // g
    s = w.scales().astype(np.float64)[:, cols]
    q = w.codes().astype(np.float64)
    z = w.zero_points().astype(np.float64)[:, cols]
    shift = 128.0 if (layer.format["bits"] == 8 and not layer.format["symmetric"]) else 0.0
    mag = np.abs(s) * (np.abs(q - shift) + np.abs(z - shift) * (not layer.format["symmetric"]))
    y = np.empty((x.shape[0], layer.out_features))
    tol = np.empty_like(y)
    u = 2.0**-24
    for r, row in enumerate(x):
        qp = Q.calculate_qparams(row.min(), row.max(), Q.QScheme.PER_TENSOR_AFFINE, Q.quint8)
        xq = Q.quantize(row, qp).int_repr().astype(np.float64)
        sx, zx = float(qp.scale[0]), float(qp.zero_point[0])
        y[r] = sx * ((xq - zx) @ (s * (q - z)).T)
        tol[r] = (w.groups_per_row + 6) * u * sx * ((xq + zx) @ mag.T)
    if layer.bias is not None:
        y += layer.bias
    return y, tol + u * np.abs(y)


@pytest.mark.parametrize("bits,group_size", [(4, 32), (4, 128), (4, None), (8, 64), (8, None)])
@pytest.mark.parametrize("symmetric", [True, False])
def test_int8_activations_match_their_definition(rng, bits, group_size, symmetric):
    n, k, m = 37, 300, 19
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    layer = Q.WeightOnlyLinear.from_float(
        w, b, bits=bits, group_size=group_size, symmetric=symmetric, activations="int8"
    )
    assert layer.activations == "int8" and layer.activation_path(1) == "int8_dynamic"
    x = (rng.standard_normal((m, k)) + 0.5).astype(np.float32)
    want, tol = int8_reference(x, layer)
    y = layer(x)
    assert np.all(np.abs(y - want) <= tol)
    # The same bits whatever the thread count.
    before = Q.num_threads()
    Q.set_num_threads(1)
    one = layer(x)
    Q.set_num_threads(2)
    two = layer(x)
    Q.set_num_threads(before)
    np.testing.assert_array_equal(one, two)


def test_int8_activations_sqnr(rng):
    """Weight error Σx²s²/12 plus activation error Σŵ²s_x²/12: measured within 1 dB."""
    n, k, m = 128, 512, 32
    w = rng.standard_normal((n, k)).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    y_true = x.astype(np.float64) @ w.astype(np.float64).T
    sx2 = np.array(
        [
            float(Q.calculate_qparams(r.min(), r.max(), Q.QScheme.PER_TENSOR_AFFINE, Q.quint8).scale[0])
            ** 2
            for r in x
        ]
    )
    for bits, group in [(8, None), (4, 32), (4, 128)]:
        layer = Q.WeightOnlyLinear.from_float(w, None, bits=bits, group_size=group, activations="int8")
        y = layer(x).astype(np.float64)
        s = layer.weight.scales().astype(np.float64)[:, np.arange(k) // (group or k)]
        w_hat = layer.dequantized_weight().astype(np.float64)
        noise = np.sum((x.astype(np.float64) ** 2) @ (s**2 / 12.0).T)
        noise += np.sum(sx2[:, None] * np.sum(w_hat**2, axis=1)[None, :] / 12.0)
        measured = 10 * np.log10(np.sum(y_true**2) / np.sum((y - y_true) ** 2))
        predicted = 10 * np.log10(np.sum(y_true**2) / noise)
        print(f"int{bits} group={group} int8 activations: SQNR {measured:.2f} dB, predicted {predicted:.2f} dB")
        assert abs(measured - predicted) < 1.0


@pytest.mark.parametrize("bits,group_size", [(4, 32), (8, None)])
def test_activations_auto_picks_the_documented_path(rng, bits, group_size):
    w = rng.standard_normal((40, 128)).astype(np.float32)
    auto = Q.WeightOnlyLinear.from_float(w, bits=bits, group_size=group_size)
    assert auto.activations == "auto"
    before = Q.active_isa()
    for isa in Q.supported_isas():
        Q.set_isa(isa)
        try:
            # int4 and int8 codes alike: AVX-512 VNNI or AVX2 kernels; the reference tier has none.
            # Grouped weights: block-wise scales; per-channel: per-row scales (finer there).
            want = ("int8_blocks" if group_size else "int8_dynamic") if isa != "reference" else "float32"
            name = {"int8_blocks": "int8_blocks", "int8_dynamic": "int8", "float32": "float32"}[want]
            explicit = Q.WeightOnlyLinear(auto.weight, None, name)
            for m in (1, 3, 16, 40):
                assert auto.activation_path(m) == want, (isa, m)
                x = rng.standard_normal((m, 128)).astype(np.float32)
                np.testing.assert_array_equal(auto(x), explicit(x))
        finally:
            Q.set_isa(before)
    assert "activations='auto'" in repr(auto)
    with pytest.raises(ValueError, match="activations"):
        Q.WeightOnlyLinear(auto.weight, None, "int4")
    with pytest.raises(ValueError, match="activations"):
        Q.weight_only_linear(np.ones((2, 128), np.float32), auto.weight, activations="bf16")
    with pytest.raises(TypeError, match=r"expected x first, then w"):
        Q.weight_only_linear(auto.weight, np.ones((2, 128), np.float32))  # gemm_*'s order
    with pytest.raises(TypeError, match=r"w is a ndarray \(expected a PackedWeightsLowBit"):
        Q.weight_only_linear(np.ones((2, 128), np.float32), np.ones((4, 128), np.float32))
    bad = np.ones((16, 128), np.float32)
    bad[3, 9] = np.nan
    with pytest.raises(ValueError, match=r"x\[3, 9\] = nan"):
        Q.weight_only_linear(bad, auto.weight, activations="int8")
    assert np.isnan(auto(bad)[3]).all()  # auto falls back to float32 for non-finite x


def test_dense_f16_layout_and_search_grid(rng):
    """int4 g32 with f16 scales streams 4.5 bits per weight; the search grid (the default) has
    less output error than min_max, with float and with block-wise int8 activations."""
    n, k, m = 64, 512, 8
    w = rng.standard_normal((n, k)).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    y_true = x.astype(np.float64) @ w.astype(np.float64).T
    errors = {}
    for grid in ("search", "min_max"):
        for acts in ("float32", "int8_blocks"):
            layer = Q.WeightOnlyLinear.from_float(
                w, bits=4, group_size=32, scale_type="f16", grid=grid, activations=acts
            )
            assert layer.weight.packed_bytes * 8 == 4.5 * n * k
            assert layer.format["grid"] == grid and layer.activation_path(m) == acts
            y = layer(x).astype(np.float64)
            errors[grid, acts] = np.sqrt(np.sum((y - y_true) ** 2) / np.sum(y_true**2))
    print(errors)
    assert errors["search", "float32"] < errors["min_max", "float32"]
    assert errors["search", "int8_blocks"] < errors["min_max", "int8_blocks"]


def test_readme_example_runs():
    """The ```python block under "## Weight-only low-bit layers" in python/README.md."""
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Weight-only low-bit layers", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})


def test_super6_scale_type(rng):
    """scale_type="super6": 4.5 bits per weight, ŵ = s · q − o from scales() and offsets(),
    the product within float rounding of x · ŵᵀ; no QuantizedTensor form, no zero points; the
    other fields must be int4 affine g32 and K a multiple of 256."""
    n, k, m = 20, 512, 3
    w = rng.standard_normal((n, k)).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    layer = Q.WeightOnlyLinear.from_float(
        w, bits=4, group_size=32, symmetric=False, scale_type="super6", activations="float32"
    )
    packed = layer.weight
    assert layer.format["scale_type"] == "super6"
    assert packed.packed_bytes * 8 == 4.5 * 32 * k  # two panels of 16 channels
    q = packed.codes()
    assert q.min() >= 0 and q.max() <= 15
    cols = np.arange(k) // 32
    s, o = packed.scales()[:, cols], packed.offsets()[:, cols]
    np.testing.assert_array_equal(packed.decode(), (s * q).astype(np.float32) - o)
    y_true = x.astype(np.float64) @ packed.decode().astype(np.float64).T
    np.testing.assert_allclose(layer(x), y_true, rtol=1e-4, atol=1e-3)
    with pytest.raises(ValueError, match="integer zero points cannot express"):
        packed.to_quantized()
    with pytest.raises(ValueError, match="offsets"):
        packed.zero_points()
    with pytest.raises(ValueError, match="multiple of 256"):
        Q.PackedWeightsLowBit.quantize(
            w[:, :320], bits=4, group_size=32, symmetric=False, scale_type="super6"
        )
    with pytest.raises(ValueError, match="group_size = 32"):
        Q.PackedWeightsLowBit.quantize(w, bits=4, group_size=64, symmetric=False, scale_type="super6")


def test_super6_from_ggml_q4_k(rng):
    """ggml q4_K blocks import into super6 without loss: decode() equals ggml's decode."""
    n, k = 5, 512
    w = rng.standard_normal((n, k)).astype(np.float32)
    blocks = Q.gguf.quantize(w, "q4_K")
    packed = Q.PackedWeightsLowBit.from_ggml(blocks, "q4_K", [n, k])
    assert packed.format["scale_type"] == "super6"
    np.testing.assert_array_equal(packed.decode(), Q.gguf.dequantize(blocks, "q4_K", [n, k]))
    with pytest.raises(ValueError, match="expected q4_K"):
        Q.PackedWeightsLowBit.from_ggml(Q.gguf.quantize(w, "q4_0"), "q4_0", [n, k])
    with pytest.raises(ValueError, match="bytes given"):
        Q.PackedWeightsLowBit.from_ggml(blocks.reshape(-1)[:-1], "q4_K", [n, k])


def test_the_super6_example_in_docs_formats_md_runs():
    """The ```python block under "**From ggml without loss.**" in docs/formats.md."""
    docs = pathlib.Path(__file__).resolve().parents[2] / "docs" / "formats.md"
    section = docs.read_text(encoding="utf-8").split("**From ggml without loss.**", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope = {}
    exec(compile(code, "docs/formats.md", "exec"), scope)
    w, mine, packed = scope["w"], scope["mine"], scope["packed"]
    assert np.sum((mine.decode() - w) ** 2) <= np.sum((packed.decode() - w) ** 2)
