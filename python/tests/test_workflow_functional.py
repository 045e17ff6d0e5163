"""Lucid's spellings of quantize / dequantize / fake_quantize / calculate_qparams (NumPy and torch inputs)."""

import numpy as np
import pytest

import lucid.quantization as Q

try:
    import torch
except ImportError:  # the torch cases skip; the NumPy ones still run
    torch = None

needs_torch = pytest.mark.skipif(
    torch is None, reason="torch is not installed (apt-get install python3-torch)"
)


def test_issue_examples():
    # The first two calls a new user writes, in Lucid's loose spelling.
    x = np.array([0.1, -0.5, 9.0, 0.04], np.float32)
    codes = Q.quantize(x, 0.02, 3, Q.quint8)
    assert codes.dtype == np.uint8
    assert codes.tolist() == [8, 0, 255, 5]
    scale, zp = Q.calculate_qparams(-1.0, 3.0, Q.per_tensor_affine, Q.quint8)
    assert scale == pytest.approx(np.float32(4.0 / 255), rel=1e-7)
    assert zp == 64 and isinstance(zp, int)


def test_qparams_forms_unchanged():
    x = np.array([[191.6, -13.5, 728.6], [92.14, 295.5, -184], [0, 684.6, 245.5]], np.float32)
    q = Q.quantize(x, Q.QParams.per_tensor(3.5, -70, Q.qint8))
    assert isinstance(q, Q.QuantizedTensor)
    assert q.int_repr()[0].tolist() == [-15, -74, 127]
    assert Q.dequantize(q).dtype == np.float32
    qp = Q.calculate_qparams(-184.0, 728.6, Q.per_tensor_affine, Q.qint8)
    assert isinstance(qp, Q.QParams) and int(qp.zero_point[0]) == -77
    out, mask = Q.fake_quantize(x, qp, return_mask=True)
    assert out.shape == x.shape and mask.dtype == bool


def test_calculate_qparams_unpacks_per_channel():
    scale, zp = Q.calculate_qparams(
        np.array([-1.0, -2.0], np.float32), np.array([1.0, 4.0], np.float32),
        Q.per_channel_symmetric, Q.qint8,
    )
    assert scale.dtype == np.float32 and zp.dtype == np.int32
    assert zp.tolist() == [0, 0]
    np.testing.assert_array_equal(scale, np.array([1 / 127.5, 4 / 127.5], np.float32))


@pytest.mark.parametrize("qdtype, dtype", [
    (Q.qint8, np.int8), (Q.quint8, np.uint8), (Q.qint4, np.int8), (Q.quint4, np.uint8),
    (Q.qint16, np.int16), (Q.qint32, np.int32),
])
def test_quantize_codes_storage_dtype_and_round_trip(rng, qdtype, dtype):
    x = rng.normal(size=(5, 7)).astype(np.float32)
    scale = float(np.abs(x).max()) / max(qdtype.quant_max, 1)
    codes = Q.quantize(x, scale, 0, qdtype)
    assert codes.dtype == dtype and codes.shape == x.shape
    reference = Q.quantize(x, Q.QParams.per_tensor(scale, 0, qdtype)).int_repr()
    np.testing.assert_array_equal(codes.astype(np.int32), reference)
    back = Q.dequantize(codes, scale, 0)
    np.testing.assert_array_equal(back, Q.dequantize(Q.quantize(x, Q.QParams.per_tensor(scale, 0, qdtype))))


def test_per_channel_forms_match_qparams_forms(rng):
    x = rng.normal(size=(4, 6)).astype(np.float32)
    scale = np.array([0.01, 0.02, 0.03, 0.05], np.float32)
    zp = np.array([0, -3, 5, 1])
    codes = Q.quantize(x, scale, zp, Q.qint8, ch_axis=0)
    qp = Q.QParams.per_channel(scale, zp, 0, Q.qint8, Q.per_channel_affine)
    np.testing.assert_array_equal(codes.astype(np.int32), Q.quantize(x, qp).int_repr())
    # negative axis, float zero points holding whole numbers (Lucid stores them as floats)
    same = Q.quantize(x, scale, zp.astype(np.float32), Q.qint8, ch_axis=-2)
    np.testing.assert_array_equal(same, codes)
    np.testing.assert_array_equal(
        Q.dequantize(codes, scale, zp, ch_axis=0), Q.dequantize(Q.quantize(x, qp))
    )
    np.testing.assert_array_equal(
        Q.fake_quantize(x, scale, zp, -128, 127, ch_axis=0), Q.fake_quantize(x, qp)
    )


def test_fake_quantize_narrow_range():
    x = np.array([-2.0, -1.27, 0.3, 5.0], np.float32)
    out = Q.fake_quantize(x, 0.01, 0, -127, 127)
    grid = Q.qint8.with_range(-127, 127)
    np.testing.assert_array_equal(out, Q.fake_quantize(x, Q.QParams.per_tensor(0.01, 0, grid)))
    assert out[0] == np.float32(-1.27)


@pytest.mark.parametrize("call, pattern", [
    (lambda x: Q.quantize(x, [0.1, 0.2], 0, Q.qint8), "pass ch_axis"),
    (lambda x: Q.quantize(x, 0.1, 0.5, Q.qint8), "zero_point.*whole numbers"),
    (lambda x: Q.quantize(x, 0.1, 0, "qint9"), "qint9"),
    (lambda x: Q.quantize(x.astype(np.int32), 0.1, 0, Q.qint8), "int32"),
    (lambda x: Q.quantize(x, [0.1, 0.2, 0.3], 0, Q.qint8, ch_axis=3), "ch_axis = 3"),
    (lambda x: Q.dequantize(x, 0.1, 0), "expected integer codes"),
    (lambda x: Q.dequantize(np.array([1, 2], np.uint8), -0.1, 0), "scale"),
    (lambda x: Q.fake_quantize(x, 0.1, 0, 5, 1), r"quant_min = 5, quant_max = 1 \(expected"),
])
def test_clear_errors(call, pattern):
    x = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match=pattern):
        call(x)


def test_wrong_arity_lists_every_form():
    with pytest.raises(TypeError,
                       match="incompatible function arguments(.|\n)*Lucid's lucid.quantization form"):
        Q.quantize(np.ones(3, np.float32), 3.5)


@needs_torch
def test_torch_inputs_give_torch_outputs(rng):
    x = torch.from_numpy(rng.normal(size=(3, 4)).astype(np.float32))
    codes = Q.quantize(x, 0.02, 3, Q.quint8)
    assert isinstance(codes, torch.Tensor) and codes.dtype == torch.uint8
    np.testing.assert_array_equal(codes.numpy(), Q.quantize(x.numpy(), 0.02, 3, Q.quint8))
    # torch's own quantizer gives the same codes
    reference = torch.quantize_per_tensor(x, 0.02, 3, torch.quint8).int_repr()
    assert torch.equal(codes, reference)
    back = Q.dequantize(codes, 0.02, 3)
    assert isinstance(back, torch.Tensor) and back.dtype == torch.float32
    assert torch.equal(back, torch.quantize_per_tensor(x, 0.02, 3, torch.quint8).dequantize())
    scale, zp = Q.calculate_qparams(x.min(), x.max(), Q.per_tensor_affine, Q.quint8)
    assert scale.dtype == torch.float32 and zp.dtype == torch.int64 and scale.dim() == 0
    qp = Q.calculate_qparams(float(x.min()), float(x.max()), Q.per_tensor_affine, Q.quint8)
    assert scale.item() == float(qp.scale[0]) and zp.item() == int(qp.zero_point[0])


@needs_torch
def test_torch_per_channel_codes_match_torch(rng):
    x = torch.from_numpy(rng.normal(size=(4, 5)).astype(np.float32))
    scale = torch.tensor([0.01, 0.02, 0.04, 0.03, 0.05])
    zp = torch.tensor([0, 1, -2, 3, 0])
    codes = Q.quantize(x, scale, zp, Q.qint8, ch_axis=1)
    reference = torch.quantize_per_channel(x, scale.double(), zp, 1, torch.qint8).int_repr()
    assert codes.dtype == torch.int8 and torch.equal(codes, reference)


@needs_torch
def test_torch_fake_quantize_is_differentiable_like_torch(rng):
    x = torch.from_numpy(rng.normal(size=(6, 5)).astype(np.float32) * 2).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    y = Q.fake_quantize(x, 0.05, 10, 0, 255)
    y_ref = torch.fake_quantize_per_tensor_affine(x_ref, 0.05, 10, 0, 255)
    assert torch.equal(y, y_ref)
    grad = torch.from_numpy(rng.normal(size=(6, 5)).astype(np.float32))
    y.backward(grad)
    y_ref.backward(grad)
    assert torch.equal(x.grad, x_ref.grad)


@needs_torch
def test_torch_non_float_input_is_refused():
    with pytest.raises(ValueError, match="torch.int64"):
        Q.quantize(torch.arange(4), 0.1, 0, Q.qint8)
    with pytest.raises(ValueError, match="expected integer codes"):
        Q.dequantize(torch.ones(3), 0.1, 0)


@needs_torch
def test_torch_fake_quantize_qparams_form(rng):
    x = torch.from_numpy(rng.normal(size=(4, 3)).astype(np.float32)).requires_grad_()
    qp = Q.QParams.per_tensor(0.02, 3, Q.quint8)
    y = Q.fake_quantize(x, qp)
    assert isinstance(y, torch.Tensor)
    np.testing.assert_array_equal(y.detach().numpy(), Q.fake_quantize(x.detach().numpy(), qp))
    out, mask = Q.fake_quantize(x, qparams=qp, return_mask=True)
    assert torch.equal(out, y.detach()) and mask.dtype == torch.bool
    y.sum().backward()
    assert torch.equal(x.grad, mask.float())
