"""lucidq.ggml_quantize / ggml_dequantize: ggml's block bytes from NumPy, checked against the
sample files ggml wrote (../shared/testdata/gguf-samples) and against the rounding rules."""
import os
import struct

import numpy as np
import pytest

import lucidq as Q

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "testdata",
                       "gguf-samples")


def _gguf_tensor_bytes(path, name):
    """Test-only: the bytes, ggml type id and ne of one tensor of a GGUF v3 file."""
    data = open(path, "rb").read()
    at = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(kind):
        nonlocal at
        if kind == 8:
            (length,) = struct.unpack_from("<Q", data, at)
            at += 8 + length
        elif kind == 9:
            inner, count = struct.unpack_from("<IQ", data, at)
            at += 12
            for _ in range(count):
                skip(inner)
        else:
            at += sizes[kind]

    alignment = 32
    for _ in range(n_kv):
        (length,) = struct.unpack_from("<Q", data, at)
        key = data[at + 8:at + 8 + length].decode()
        at += 8 + length
        (kind,) = struct.unpack_from("<I", data, at)
        at += 4
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", data, at)
        skip(kind)
    infos = []
    for _ in range(n_tensors):
        (length,) = struct.unpack_from("<Q", data, at)
        tname = data[at + 8:at + 8 + length].decode()
        at += 8 + length
        (dims,) = struct.unpack_from("<I", data, at)
        ne = struct.unpack_from(f"<{dims}Q", data, at + 4)
        at += 4 + 8 * dims
        kind, offset = struct.unpack_from("<IQ", data, at)
        at += 12
        infos.append((tname, ne, kind, offset))
    start = (at + alignment - 1) // alignment * alignment
    for index, (tname, ne, kind, offset) in enumerate(infos):
        if tname == name:
            end = infos[index + 1][3] if index + 1 < len(infos) else len(data) - start
            return data[start + offset:start + end], kind, ne
    raise KeyError(name)


needs_samples = pytest.mark.skipif(
    not os.path.exists(os.path.join(SAMPLES, "source.safetensors")),
    reason="ggml sample files (../shared/testdata/gguf-samples) not found")


@needs_samples
@pytest.mark.parametrize("stem,type_name", [
    ("q8_0", "q8_0"), ("q4_k", "q4_K"), ("q6_k.imatrix", "q6_K"), ("iq4_nl", "iq4_nl"),
    ("q4_1.imatrix", "q4_1"), ("bf16", "bf16")])
def test_quantize_matches_ggmls_bytes_and_decode_matches_ggmls_floats(stem, type_name):
    source, _ = Q._lucidq._load_safetensors(os.path.join(SAMPLES, "source.safetensors"), ["big"])
    x = source["big"]  # [8, 4096]: rows of 4096, with outliers
    imatrix = None
    if stem.endswith(".imatrix"):
        imatrix = np.fromfile(os.path.join(SAMPLES, "imatrix.f32"), dtype="<f4")[:x.shape[1]]
    want, kind, ne = _gguf_tensor_bytes(os.path.join(SAMPLES, stem + ".gguf"), "big")
    got = Q.ggml_quantize(x, type_name, imatrix=imatrix)
    assert got.dtype == np.uint8 and got.ndim == 1
    assert got.tobytes() == want[:got.size]
    expected, _ = Q._lucidq._load_safetensors(
        os.path.join(SAMPLES, stem + ".expected.safetensors"), ["big"])
    decoded = Q.ggml_dequantize(got, kind, x.shape)  # the numeric id works as well as the name
    assert decoded.dtype == np.float32 and decoded.shape == x.shape
    assert decoded.tobytes() == expected["big"].tobytes()
    assert Q.ggml_dequantize(bytes(got), type_name, list(x.shape)).tobytes() == decoded.tobytes()


def test_q8_0_rounds_ties_away_from_zero_and_q4_0_half_up():
    x = np.zeros((1, 32), dtype=np.float32)
    x[0, 0], x[0, 1], x[0, 2] = 127.0, 2.5, -2.5
    q = Q.ggml_quantize(x, "Q8_0")
    assert q[2:5].view(np.int8).tolist() == [127, 3, -3]
    y = np.zeros(32, dtype=np.float32)
    y[0], y[1], y[2] = -8.0, 2.5, -2.5
    decoded = Q.ggml_dequantize(Q.ggml_quantize(y, "q4_0"), "q4_0", [32])
    assert decoded[1] == 3.0 and decoded[2] == -2.0  # (x + 8.5) truncated: ties round up


def test_every_type_round_trips_random_rows(rng):
    x = rng.standard_normal((3, 512)).astype(np.float32)
    for name in ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
                 "iq4_nl", "f16", "bf16", "f32"]:
        blocks = Q.ggml_quantize(x, name)
        back = Q.ggml_dequantize(blocks, name, x.shape)
        error = np.sqrt(np.mean((back - x) ** 2))
        assert error < 0.6, (name, error)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="row length 96 is not a multiple of q4_K.s block size 256"):
        Q.ggml_quantize(np.ones((2, 96), np.float32), "q4_K")
    with pytest.raises(ValueError, match="ggml type \"q9_9\" is unknown"):
        Q.ggml_quantize(np.ones(32, np.float32), "q9_9")
    with pytest.raises(ValueError, match="iq2_xxs is not supported"):
        Q.ggml_quantize(np.ones(256, np.float32), "iq2_xxs")
    with pytest.raises(ValueError, match="column 3 = nan"):
        Q.ggml_quantize(np.array([0, 1, 2, np.nan] + [0] * 28, np.float32), "q8_0")
    with pytest.raises(ValueError, match="imatrix has 3 values"):
        Q.ggml_quantize(np.ones(32, np.float32), "q4_0", imatrix=np.ones(3, np.float32))
    with pytest.raises(ValueError, match="bytes given for q8_0"):
        Q.ggml_dequantize(b"\0" * 33, "q8_0", [32])


def test_the_example_in_docs_formats_md_runs():
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "formats.md")
    text = open(docs, encoding="utf-8").read()
    section = text[text.index("## ggml block types"):]
    code = section[section.index("```python\n") + 10:section.index("```", section.index("```python") + 9)]
    scope = {}
    exec(compile(code, "docs/formats.md", "exec"), scope)
    assert scope["blocks"].shape == (8 * 2304,)
    assert scope["back"].shape == (8, 4096) and scope["back"].dtype == np.float32
    assert np.sqrt(np.mean((scope["back"] - scope["w"]) ** 2)) < 0.15
    assert scope["blocks_i"].shape == scope["blocks"].shape
