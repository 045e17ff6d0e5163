"""lucidq.plot_quantization_errors: the notes' helper, from arrays or a QuantizedTensor."""

import numpy as np
import pytest

import lucidq

NOTES = np.array([[191.6, -13.5, 728.6], [92.14, 295.5, -184], [0, 684.6, 245.5]], np.float32)


def test_from_arrays_like_the_notes_helper(tmp_path):
    q = lucidq.quantize(NOTES, lucidq.QParams.per_tensor(3.5, -70, lucidq.qint8))
    out = tmp_path / "errors.png"
    lucidq.plot_quantization_errors(NOTES, q.int_repr(), lucidq.dequantize(q), str(out))
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert [p.name for p in tmp_path.iterdir()] == ["errors.png"]  # no temporary left


def test_from_a_quantized_tensor_as_svg_and_no_silent_overwrite(tmp_path):
    q = lucidq.quantize(NOTES, lucidq.per_tensor_affine, lucidq.qint8)
    out = tmp_path / "errors.svg"
    lucidq.plot_quantization_errors(NOTES, q, None, str(out))
    assert out.read_text().lstrip().startswith("<?xml")
    with pytest.raises(ValueError, match="exists"):
        lucidq.plot_quantization_errors(NOTES, q, None, str(out))
    lucidq.plot_quantization_errors(NOTES, q, None, str(out), overwrite=True)


def test_bad_extension_is_a_clear_error(tmp_path):
    q = lucidq.quantize(NOTES, lucidq.per_tensor_affine, lucidq.qint8)
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        lucidq.plot_quantization_errors(NOTES, q, None, str(tmp_path / "errors.jpg"))
