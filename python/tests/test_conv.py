"""lucidq.conv2d_* from Python: exact against an int64 reference, the paths, the errors; the
quantized Conv2d / ConvReLU2d / Conv1d modules against torch's (qnnpack engine): codes within 1,
and lucidq equal to an exact reference computed here (integer sums in int64, the requantization
in float64 as docs/numerics.md states); `lucidq quantize` on a 4-D conv weight.
"""

import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import lucidq as Q

REPO = pathlib.Path(__file__).resolve().parents[2]


def exact_acc(codes, zero_point, weight, stride, padding, dilation, groups):
    """int64 sums of (x − z) ⊛ w for NCHW codes and OIHW weights; padding (top, bottom, left,
    right) reads as z."""
    x = codes.astype(np.int64) - zero_point
    top, bottom, left, right = padding
    x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    b, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    og = o // groups
    oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((b, o, oh, ow), np.int64)
    wt = weight.astype(np.int64)
    for i in range(kh):
        for j in range(kw):
            window = x[:, :, i * dilation[0]:i * dilation[0] + stride[0] * (oh - 1) + 1:stride[0],
                       j * dilation[1]:j * dilation[1] + stride[1] * (ow - 1) + 1:stride[1]]
            for g in range(groups):
                part = window[:, g * cg:(g + 1) * cg]
                out[:, g * og:(g + 1) * og] += np.einsum("bchw,oc->bohw", part,
                                                         wt[g * og:(g + 1) * og, :, i, j])
    return out


def exact_requantize(acc, x_scale, w_scales, bias, out_scale, out_zero_point, lo, hi, relu):
    m = np.float64(x_scale) * w_scales.astype(np.float64) / np.float64(out_scale)
    offset = bias.astype(np.float64) / np.float64(out_scale)
    q = np.rint(acc * m[None, :, None, None] + offset[None, :, None, None]) + out_zero_point
    return np.clip(q, max(lo, out_zero_point) if relu else lo, hi).astype(np.int64)


CASES = [  # (C_in, C_out, kernel, stride, padding, dilation, groups, H, W)
    (3, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, 9, 11),
    (17, 5, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1), 1, 12, 12),
    (4, 6, (3, 3), (1, 2), (0, 0, 0, 0), (2, 2), 2, 10, 13),
    (65, 65, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 65, 7, 7),
    (16, 32, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, 6, 5),
    (16, 32, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, 7, 7),
    (8, 8, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 8, 15, 15),
    (1, 4, (7, 1), (1, 1), (3, 3, 0, 0), (1, 1), 1, 9, 3),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("signed", [False, True])
def test_int32_matches_the_exact_sum_in_both_layouts(case, signed, rng):
    cin, cout, k, stride, pad, dil, groups, h, w = case
    dtype, lo = (np.int8, -128) if signed else (np.uint8, 0)
    x = rng.integers(lo, lo + 256, size=(3, cin, h, w)).astype(dtype)
    z = int(rng.integers(lo, lo + 256))
    codes = rng.integers(-128, 128, size=(cout, cin // groups) + k).astype(np.int8)
    packed = Q.PackedConvWeights.pack(codes, np.full(cout, 0.01, np.float32), groups=groups)
    np.testing.assert_array_equal(packed.unpack(), codes)
    expected = exact_acc(x, z, codes, stride, pad, dil, groups)
    got = Q.conv2d_int32(x, packed, z, stride=stride, padding=pad, dilation=dil)
    np.testing.assert_array_equal(got, expected)
    nhwc = Q.conv2d_int32(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), packed, z, stride=stride,
                          padding=pad, dilation=dil, layout="nhwc")
    np.testing.assert_array_equal(nhwc, expected.transpose(0, 2, 3, 1))


def test_paths_and_same_padding(rng):
    x = rng.integers(0, 256, size=(1, 8, 6, 6)).astype(np.uint8)
    pointwise = Q.PackedConvWeights.quantize(rng.normal(size=(4, 8, 1, 1)).astype(np.float32))
    depthwise = Q.PackedConvWeights.quantize(rng.normal(size=(8, 1, 3, 3)).astype(np.float32),
                                             groups=8)
    dense = Q.PackedConvWeights.quantize(rng.normal(size=(4, 8, 3, 3)).astype(np.float32))
    assert Q.conv2d_path(x, pointwise) == "pointwise"
    assert Q.conv2d_path(x, pointwise, stride=2) == "im2col"
    assert Q.conv2d_path(x, depthwise, padding="same") == "depthwise"
    assert Q.conv2d_path(x, dense) == "im2col"
    same = Q.conv2d_int32(x, dense, 3, padding="same")
    np.testing.assert_array_equal(same, Q.conv2d_int32(x, dense, 3, padding=1))
    assert Q.conv2d_int32(x, dense, 3, padding="valid").shape == (1, 4, 4, 4)
    even = Q.PackedConvWeights.quantize(rng.normal(size=(4, 8, 2, 2)).astype(np.float32))
    # torch's "same" for an even kernel: the odd element of padding at the bottom / right
    np.testing.assert_array_equal(Q.conv2d_int32(x, even, 3, padding="same"),
                                  Q.conv2d_int32(x, even, 3, padding=(0, 1, 0, 1)))


def test_errors_name_the_argument():
    x = np.zeros((1, 3, 5, 5), np.uint8)
    w = Q.PackedConvWeights.quantize(np.ones((4, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match=r"a.channels = 2 \(expected w.in_channels\(\) = 3"):
        Q.conv2d_int32(np.zeros((1, 2, 5, 5), np.uint8), w, 0)
    with pytest.raises(ValueError, match=r"options.stride_h = 0 \(expected >= 1\)"):
        Q.conv2d_int32(x, w, 0, stride=(0, 1))
    with pytest.raises(ValueError, match=r"options.stride_w = -1"):
        Q.conv2d_int32(x, w, 0, stride=(1, -1))
    with pytest.raises(ValueError, match=r"options.padding.top = 3 \(expected 0..2"):
        Q.conv2d_int32(x, w, 0, padding=3)
    with pytest.raises(ValueError, match=r"a.height = 2 with padding 0 \+ 0 is smaller"):
        Q.conv2d_int32(np.zeros((1, 3, 2, 5), np.uint8), w, 0)
    with pytest.raises(ValueError, match=r"x has shape \(3, 5, 5\)"):
        Q.conv2d_int32(np.zeros((3, 5, 5), np.uint8), w, 0)
    with pytest.raises(ValueError, match=r"x_zero_point = 300"):
        Q.conv2d_int32(x, w, 300)
    with pytest.raises(ValueError, match=r"layout = \"nchwx\""):
        Q.conv2d_int32(x, w, 0, layout="nchwx")


def _torch():
    return pytest.importorskip("torch", reason="parity with torch needs python3-torch")


TORCH_CASES = [  # (C_in, C_out, kernel, stride, padding, dilation, groups, H, W)
    (3, 16, 3, 1, 1, 1, 1, 12, 12),
    (16, 32, 3, 2, 1, 1, 1, 9, 9),
    (16, 16, 3, 1, 1, 1, 16, 8, 8),
    (8, 12, 5, 1, 2, 2, 2, 11, 11),
    (32, 64, 1, 2, 0, 1, 1, 8, 8),
    (17, 65, 7, 1, 3, 1, 1, 9, 9),
]


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("case", TORCH_CASES)
def test_parity_with_torch_qnnpack(case, relu, seed):
    torch = _torch()
    import torch.ao.nn.quantized as nnq
    import torch.nn.intrinsic.quantized as nniq
    from lucidq.workflow import quantized as LWQ

    if "qnnpack" not in torch.backends.quantized.supported_engines:
        pytest.skip("this torch build has no qnnpack engine")
    cin, cout, k, stride, pad, dil, groups, h, w = case
    torch.manual_seed(seed)
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = "qnnpack"
    try:
        weight = torch.randn(cout, cin // groups, k, k)
        scales = weight.abs().amax((1, 2, 3)).double() / 127.5
        qweight = torch.quantize_per_channel(weight, scales, torch.zeros(cout, dtype=torch.long),
                                             0, torch.qint8)
        bias = torch.randn(cout)
        cls = nniq.ConvReLU2d if relu else nnq.Conv2d
        theirs = cls(cin, cout, k, stride=stride, padding=pad, dilation=dil, groups=groups)
        theirs.set_weight_bias(qweight, bias)
        out_scale, out_zero = 0.02 * (k * k * cin / groups) ** 0.5, 97
        theirs.scale, theirs.zero_point = out_scale, out_zero
        qx = torch.quantize_per_tensor(torch.rand(2, cin, h, w) * 2 - 0.5, 0.01, 50, torch.quint8)
        expected_torch = theirs(qx).int_repr().numpy().astype(np.int64)
    finally:
        torch.backends.quantized.engine = previous
    codes = qweight.int_repr().numpy()
    w_scales = qweight.q_per_channel_scales().float().numpy()
    packed = Q.PackedConvWeights.pack(codes, w_scales, groups=groups)
    mine = (LWQ.ConvReLU2d if relu else LWQ.Conv2d)(
        packed, bias.numpy(), (stride, stride), (pad, pad), (dil, dil), out_scale, out_zero)
    got = mine(qx).int_repr().numpy().astype(np.int64)
    acc = exact_acc(qx.int_repr().numpy(), 50, codes, (stride, stride), (pad,) * 4, (dil, dil),
                    groups)
    exact = exact_requantize(acc, 0.01, w_scales, bias.numpy(), out_scale, out_zero, 0, 255, relu)
    np.testing.assert_array_equal(got, exact)  # lucidq is the exact equation
    diff = np.abs(got - expected_torch)
    print(f"{cls.__name__} {case}: max |lucidq - torch qnnpack| = {diff.max()} code, "
          f"{(diff != 0).mean() * 100:.3f} % of {diff.size} outputs differ; torch vs exact "
          f"max {np.abs(expected_torch - exact).max()}")
    assert diff.max() <= 1


def test_conv1d_module_against_torch(seed):
    torch = _torch()
    import torch.ao.nn.quantized as nnq
    from torch import nn

    import lucidq.workflow as LW
    import lucidq.workflow.quantize as W

    torch.manual_seed(seed)
    model = nn.Sequential(W.QuantStub(), nn.Conv1d(6, 10, 5, stride=2, padding=2, dilation=1),
                          W.DeQuantStub()).eval()
    model.qconfig = LW.get_default_qconfig()
    prepared = W.prepare(model)
    x = torch.randn(4, 6, 40)
    with torch.no_grad():
        prepared(x)
    quantized = W.convert(prepared)
    mine = quantized[1]
    q = quantized[0](x)
    out = mine(q)
    assert out.int_repr().shape == (4, 10, 20)
    codes = torch.from_numpy(mine.weight_codes()[:, :, 0, :].astype(np.float64))
    acc = torch.nn.functional.conv1d(q.int_repr().double() - q.q_zero_point(), codes, stride=2,
                                     padding=2)
    m = torch.from_numpy(mine.packed_weight.scales.astype(np.float64)) * q.q_scale() / mine.scale
    expected = torch.clamp(torch.round(acc * m[None, :, None] + torch.from_numpy(
        mine.bias.astype(np.float64))[None, :, None] / mine.scale) + mine.zero_point, 0, 255)
    np.testing.assert_array_equal(out.int_repr().numpy(), expected.numpy().astype(np.uint8))
    # torch's quantized Conv1d (qnnpack) on the same codes and grids: within 1 code
    if "qnnpack" not in torch.backends.quantized.supported_engines:
        pytest.skip("this torch build has no qnnpack engine")
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = "qnnpack"
    try:
        theirs = nnq.Conv1d(6, 10, 5, stride=2, padding=2)
        qweight = torch._make_per_channel_quantized_tensor(
            codes.to(torch.int8), torch.from_numpy(mine.packed_weight.scales).double(),
            torch.zeros(10, dtype=torch.long), 0)
        theirs.set_weight_bias(qweight, torch.from_numpy(mine.bias))
        theirs.scale, theirs.zero_point = mine.scale, mine.zero_point
        qx = torch._make_per_tensor_quantized_tensor(q.int_repr(), q.q_scale(), q.q_zero_point())
        torch_codes = theirs(qx).int_repr().numpy().astype(np.int64)
    finally:
        torch.backends.quantized.engine = previous
    diff = np.abs(out.int_repr().numpy().astype(np.int64) - torch_codes)
    print(f"Conv1d: max |lucidq - torch qnnpack| = {diff.max()} code, "
          f"{(diff != 0).mean() * 100:.3f} % differ")
    assert diff.max() <= 1


def test_lucidq_quantize_conv_weight_per_output_channel(tmp_path, rng):
    cli = REPO / "build" / "release" / "tools" / "lucidq" / "lucidq"
    if not cli.exists():
        cli = shutil.which("lucidq")
        if cli is None:
            pytest.skip("the lucidq CLI is not built (cmake --build build/release --target lucidq)")
    weight = rng.normal(size=(16, 3, 3, 3)).astype(np.float32)
    path = tmp_path / "cnn.safetensors"
    Q.save_safetensors(path, {"conv1.weight": weight, "conv1.bias": np.zeros(16, np.float32)})
    out = tmp_path / "cnn.q8.safetensors"
    done = subprocess.run([str(cli), "quantize", str(path), "-o", str(out)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    q = Q.load_quantized_tensor(out, "conv1.weight")
    assert q.shape == (16, 3, 3, 3) and q.qdtype == Q.qint8
    assert q.qparams.qscheme == Q.per_channel_symmetric and q.qparams.ch_axis == 0
    flat = weight.reshape(16, -1)
    qparams = Q.calculate_qparams(flat.min(axis=1), flat.max(axis=1), Q.per_channel_symmetric,
                                  Q.qint8)
    np.testing.assert_array_equal(q.int_repr().reshape(16, -1), Q.quantize(flat, qparams).int_repr())


def test_save_and_load_quantized_round_trip(tmp_path, seed):
    """A converted CNN (ConvReLU2d, grouped Conv2d, Conv1d, MaxPool2d, EmbeddingBag) saved with
    save_quantized and loaded into the fused float model computes the same bytes."""
    torch = _torch()
    import lucidq.workflow as LW
    import lucidq.workflow.quantize as W
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = W.QuantStub()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(2)
            self.grouped = nn.Conv2d(8, 8, 3, stride=2, padding="valid", groups=2)
            self.line = nn.Conv1d(8, 4, 1)
            self.dequant = W.DeQuantStub()
            self.bag = nn.EmbeddingBag(10, 4, mode="max")

        def forward(self, x, indices):
            y = self.grouped(self.pool(self.relu(self.conv(self.quant(x)))))
            y = self.line(y.reshape(y.shape[0], 8, -1))
            return self.dequant(y), self.bag(indices.reshape(-1, 2))

    torch.manual_seed(seed)
    model = W.fuse_modules(Net().eval(), [["conv", "relu"]])
    model.qconfig = LW.get_default_qconfig()
    model.bag.qconfig = torch.ao.quantization.float_qparams_weight_only_qconfig_4bit
    prepared = W.prepare(model)
    x, indices = torch.rand(2, 3, 12, 12), torch.tensor([1, 2, 3, 9])
    with torch.no_grad():
        prepared(x, indices)
    quantized = W.convert(prepared)
    path = tmp_path / "cnn.safetensors"
    W.save_quantized(quantized, path)
    fresh = W.fuse_modules(Net().eval(), [["conv", "relu"]])
    loaded = W.load_quantized(path, fresh)
    for ours, theirs in zip(quantized(x, indices), loaded(x, indices)):
        assert torch.equal(ours, theirs)
    assert loaded.grouped.packed_weight.groups == 2 and loaded.bag.table.bits == 4


def _python_block(path, header):
    text = path.read_text()
    section = text[text.index(header):]
    return section[section.index("```python") + len("```python"):section.index("```\n", section.index("```python") + 9)]


def test_readme_example_runs():
    """The ```python block under "## Int8 convolution and embedding tables" in python/README.md."""
    code = _python_block(REPO / "python" / "README.md", "## Int8 convolution and embedding tables")
    exec(compile(code, "README.md", "exec"), {})


def test_workflow_doc_example_runs():
    """The ```python block under "## Convolutions, pooling and embeddings" in docs/workflow.md."""
    _torch()
    code = _python_block(REPO / "docs" / "workflow.md", "## Convolutions, pooling and embeddings")
    exec(compile(code, "workflow.md", "exec"), {})


def test_packed_weights_quantize_and_pack_check_values():
    w = np.array([0.5, -0.25, 1.0, 0.125], np.float32).reshape(4, 1, 1, 1)
    packed = Q.PackedConvWeights.quantize(w)
    np.testing.assert_allclose(packed.scales, np.abs(w.ravel()) / 127.5, rtol=1e-6)
    flat = w.reshape(4, 1)
    qparams = Q.calculate_qparams(np.minimum(flat.min(axis=1), 0), np.maximum(flat.max(axis=1), 0),
                                  Q.per_channel_symmetric, Q.qint8)
    np.testing.assert_array_equal(packed.unpack().reshape(4, 1),
                                  Q.quantize(flat, qparams).int_repr())
    per_tensor = Q.PackedConvWeights.quantize(w, per_channel=False)
    assert not per_tensor.per_channel
    np.testing.assert_array_equal(per_tensor.unpack().ravel(), [64, -32, 127, 16])
    with pytest.raises(ValueError, match="holds values from 300 to 300"):
        Q.PackedConvWeights.pack(np.full((1, 1, 1, 1), 300), [0.1])
    with pytest.raises(ValueError, match="w has dtype float32 \\(expected int8 codes\\)"):
        Q.PackedConvWeights.pack(w, [0.1])
    with pytest.raises(ValueError, match=r"w has shape \(4, 1, 1\)"):
        Q.PackedConvWeights.quantize(w[..., 0])
