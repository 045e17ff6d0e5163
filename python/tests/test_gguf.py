"""lucidq.gguf: reading ggml's samples, writing ggml's bytes, ggml block types, the file job."""

import os
import pathlib
import struct

import numpy as np
import pytest

import lucidq
from lucidq import gguf

SAMPLES = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "gguf-samples"
needs_samples = pytest.mark.skipif(
    not SAMPLES.is_dir(),
    reason=f"shared GGUF samples not found at {SAMPLES} (../shared beside the repository)")

SAMPLE_TYPES = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
                "iq4_nl", "f16", "bf16"]


def load_safetensors(path):
    tensors = lucidq.load_safetensors(path)
    return {k: np.asarray(v) for k, v in tensors.items()}


@needs_samples
def test_source_sample_metadata_and_tensors():
    f = gguf.read(SAMPLES / "source.gguf")
    assert f.version == 3 and f.alignment == 32
    assert list(f.metadata)[:4] == ["general.architecture", "general.name", "general.alignment",
                                    "lucidq.sample.type"]
    assert f.metadata["lucidq.test.u64"] == 18446744073709551615
    assert f.value_types["lucidq.test.u64"] == "u64"
    assert f.metadata["lucidq.test.string"] == "hello, GGUF \u03b3\u2713"
    assert f.metadata["lucidq.test.arr_str"] == ["alpha", "", "\u03b3amma"]
    assert f.value_types["lucidq.test.arr_bool"] == "bool" and "lucidq.test.arr_bool" in f.arrays
    assert f.metadata["lucidq.test.arr_empty_i32"] == []
    assert list(f.tensors) == ["lcg.a", "lcg.b", "lcg.c", "big", "special", "stack3d", "w96",
                               "norm.weight"]
    assert f.tensors["stack3d"].shape == (2, 2, 256)
    source = load_safetensors(SAMPLES / "source.safetensors")
    for name in f.tensors:
        np.testing.assert_array_equal(f.tensor(name), source[name])


@needs_samples
@pytest.mark.parametrize("stem", [t.lower() for t in SAMPLE_TYPES])
def test_quantize_and_dequantize_arrays_match_ggml(stem):
    f = gguf.read(SAMPLES / f"{stem}.gguf")
    source = load_safetensors(SAMPLES / "source.safetensors")
    expected = load_safetensors(SAMPLES / f"{stem}.expected.safetensors")
    for name, info in f.tensors.items():
        blocks = gguf.quantize(source[name], info.type)
        assert blocks.tobytes() == f.raw(name).tobytes(), name
        decoded = gguf.dequantize(blocks, info.type, info.shape)
        assert decoded.tobytes() == expected[name].tobytes(), name
        assert f.tensor(name).tobytes() == expected[name].tobytes(), name


@needs_samples
@pytest.mark.parametrize("stem", ["q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "q4_0",
                                  "q4_1", "q5_0", "q5_1"])
def test_imatrix_quantize_matches_ggml(stem):
    weights = np.fromfile(SAMPLES / "imatrix.f32", dtype="<f4")
    f = gguf.read(SAMPLES / f"{stem}.imatrix.gguf")
    source = load_safetensors(SAMPLES / "source.safetensors")
    for name, info in f.tensors.items():
        row = info.shape[-1]
        blocks = gguf.quantize(source[name], info.type, imatrix=weights[:row])
        assert blocks.tobytes() == f.raw(name).tobytes(), name


@needs_samples
@pytest.mark.parametrize("sample", ["q6_k.gguf", "q4_0.align64.gguf", "source.gguf"])
def test_write_reproduces_ggml_bytes(tmp_path, sample):
    f = gguf.read(SAMPLES / sample)
    tensors, types = {}, {}
    for name, info in f.tensors.items():
        if info.type == "f32":
            tensors[name] = f.tensor(name)
        else:
            tensors[name] = f.raw(name)
            types[name] = (info.type, info.shape)
    out = tmp_path / sample
    gguf.write(out, tensors, metadata=f.metadata_values(), types=types)
    assert out.read_bytes() == (SAMPLES / sample).read_bytes()


def test_write_infers_metadata_types_and_quantizes(tmp_path, rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    out = tmp_path / "m.gguf"
    gguf.write(out, {"w": x, "h": x.astype(np.float16), "ids": np.arange(3, dtype=np.int32)},
               metadata={"general.architecture": "llama", "n": 7, "big": 2**40, "f": 0.5,
                         "ok": True, "l": [1, 2], "c": gguf.Value("u32", 9),
                         "e": gguf.Value("str", [])},
               types={"w": "q4_0"})
    f = gguf.read(out)
    assert f.value_types == {"general.architecture": "str", "n": "i32", "big": "i64",
                             "f": "f32", "ok": "bool", "l": "i32", "c": "u32", "e": "str"}
    assert f.metadata["l"] == [1, 2] and f.metadata["e"] == []
    assert [t.type for t in f.tensors.values()] == ["q4_0", "f16", "i32"]
    assert f.tensors["w"].bits_per_weight == 4.5
    np.testing.assert_array_equal(f.tensor("ids"), [0, 1, 2])
    np.testing.assert_array_equal(f.tensor("w"), gguf.dequantize(gguf.quantize(x, "q4_0"),
                                                                 "q4_0", x.shape))


def test_errors_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="ggml type \"q9_9\" is unknown"):
        gguf.quantize(np.zeros((1, 32), np.float32), "q9_9")
    with pytest.raises(ValueError, match="not a multiple of q4_K's block size 256"):
        gguf.quantize(np.zeros((1, 96), np.float32), "q4_K")
    with pytest.raises(ValueError, match="imatrix has 3 values"):
        gguf.quantize(np.zeros((1, 32), np.float32), "q4_0", imatrix=[1, 2, 3])
    with pytest.raises(ValueError, match="10 bytes given"):
        gguf.dequantize(np.zeros(10, np.uint8), "q8_0", (1, 32))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + struct.pack("<I", 2) + bytes(16))
    with pytest.raises(lucidq.Error, match="GGUF version 2 \\(expected 3"):
        gguf.read(bad)
    with pytest.raises(ValueError, match="has no GGUF type"):
        gguf.write(tmp_path / "x.gguf", {}, metadata={"k": object()})
    with pytest.raises(ValueError, match="does not fit"):
        gguf.write(tmp_path / "x.gguf", {}, metadata={"k": gguf.Value("u8", 300)})
    with pytest.raises(ValueError, match="too long"):
        gguf.write(tmp_path / "x.gguf", {"n" * 64: np.zeros(4, np.float32)})
    assert sorted(os.listdir(tmp_path)) == ["bad.gguf"]


def test_quantize_file_llama_mixture_and_dequantize_file(tmp_path, rng):
    tensors = {"token_embd.weight": rng.standard_normal((8, 256)).astype(np.float32),
               "blk.0.attn_norm.weight": np.ones(256, np.float32),
               "blk.0.attn_v.weight": rng.standard_normal((32, 256)).astype(np.float32),
               "blk.0.ffn_down.weight": rng.standard_normal((32, 256)).astype(np.float32),
               "output.weight": rng.standard_normal((8, 256)).astype(np.float32)}
    model = tmp_path / "tiny.gguf"
    gguf.write(model, tensors, metadata={"general.architecture": "llama",
                                         "llama.block_count": gguf.Value("u32", 1)})
    out = tmp_path / "tiny-Q4_K_M.gguf"
    report = gguf.quantize_file(model, out, type="Q4_K_M")
    types = {t["name"]: t.get("ggml_type") for t in report["tensors"]}
    assert types == {"output.weight": "q6_K", "token_embd.weight": "q4_K",
                     "blk.0.attn_norm.weight": None, "blk.0.attn_v.weight": "q6_K",
                     "blk.0.ffn_down.weight": "q6_K"}
    f = gguf.read(out)
    assert f.metadata["general.file_type"] == 15 and f.value_types["general.file_type"] == "u32"
    assert gguf.quantize_file(model, tmp_path / "p.gguf", type="Q4_K_M", pure=True,
                              leave_output_tensor=True)["tensors"][0].get("ggml_type") is None
    decoded, copied = gguf.dequantize_file(out, tmp_path / "back.safetensors")
    assert (decoded, copied) == (4, 1)
    back = load_safetensors(tmp_path / "back.safetensors")
    np.testing.assert_array_equal(back["blk.0.attn_v.weight"], f.tensor("blk.0.attn_v.weight"))
    with pytest.raises(ValueError, match="is not a preset"):
        gguf.quantize_file(model, tmp_path / "z.gguf", type="Q7_K")
    assert not (tmp_path / "z.gguf").exists()
