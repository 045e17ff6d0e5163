"""The checkpoint job from Python: quantize / dequantize / inspect / load, safetensors I/O, errors."""

import json
import os

import numpy as np
import pytest

import lucidq as Q


@pytest.fixture
def model(tmp_path, rng):
    """A small float checkpoint: two 2-D weights, a bias, a bf16 norm and an int64 buffer."""
    tensors = {
        "layer.0.fc.weight": rng.normal(size=(48, 40)).astype(np.float32),
        "layer.0.fc.bias": rng.normal(size=48).astype(np.float32),
        # bfloat16 bit patterns (the top half of float32's)
        "layer.0.norm.weight": (rng.normal(size=40).astype(np.float32).view(np.uint32) >> 16)
        .astype(np.uint16),
        "head.weight": rng.normal(size=(16, 40)).astype(np.float16),
        "position_ids": np.arange(12, dtype=np.int64),
    }
    path = tmp_path / "model.safetensors"
    Q.save_safetensors(path, tensors, metadata={"source": "test"}, bfloat16=["layer.0.norm.weight"])
    return path, tensors


def test_safetensors_round_trip(model):
    path, tensors = model
    loaded, metadata = Q.load_safetensors(path, with_metadata=True)
    assert metadata == {"source": "test"}
    assert list(loaded) == list(tensors)
    for name, value in tensors.items():
        assert loaded[name].dtype == value.dtype, name
        np.testing.assert_array_equal(loaded[name], value)
    some = Q.load_safetensors(path, ["head.weight"])
    assert list(some) == ["head.weight"]


def test_save_is_atomic_and_refuses_to_replace(model):
    path, _ = model
    before = path.read_bytes()
    with pytest.raises(Q.Error, match="already exists"):
        Q.save_safetensors(path, {"x": np.zeros(3, np.float32)})
    assert path.read_bytes() == before
    Q.save_safetensors(path, {"x": np.zeros(3, np.float32)}, overwrite=True)
    assert list(Q.load_safetensors(path)) == ["x"]


def test_save_errors_name_the_tensor(tmp_path):
    with pytest.raises(Q.Error, match="listed in bfloat16"):
        Q.save_safetensors(tmp_path / "a.safetensors", {"w": np.zeros(2, np.float32)},
                           bfloat16=["w"])
    with pytest.raises(Q.Error, match="not among the tensors"):
        Q.save_safetensors(tmp_path / "a.safetensors", {"w": np.zeros(2, np.float32)},
                           bfloat16=["v"])
    with pytest.raises(Q.Error, match="complex64"):
        Q.save_safetensors(tmp_path / "a.safetensors", {"w": np.zeros(2, np.complex64)})
    assert os.listdir(tmp_path) == []


def test_quantize_default_rule(model, tmp_path):
    path, tensors = model
    out = tmp_path / "model.q8.safetensors"
    report = Q.quantize_checkpoint(path, out)
    actions = {t["name"]: t["action"] for t in report["tensors"]}
    assert actions == {
        "layer.0.fc.weight": "quantized",
        "layer.0.fc.bias": "kept",
        "layer.0.norm.weight": "kept",
        "head.weight": "quantized",
        "position_ids": "kept",
    }
    contents = Q.inspect_checkpoint(out)
    assert contents["format_version"] == "1"
    assert contents["metadata"] == {"source": "test"}
    fc = next(t for t in contents["tensors"] if t["name"] == "layer.0.fc.weight")
    assert fc["shape"] == (48, 40)
    assert fc["quantized"]["qdtype"] == Q.qint8
    assert fc["quantized"]["original_dtype"] == "float32"
    # The stored codes are exactly what Q.quantize gives with per-channel symmetric qparams.
    w = Q.load_quantized_tensor(out, "layer.0.fc.weight")
    x = tensors["layer.0.fc.weight"]
    qparams = Q.calculate_qparams(x.min(axis=1), x.max(axis=1), Q.per_channel_symmetric, Q.qint8)
    np.testing.assert_array_equal(w.int_repr(), Q.quantize(x, qparams).int_repr())
    # Kept tensors are copied bit for bit.
    stored = Q.load_safetensors(out)
    np.testing.assert_array_equal(stored["position_ids"], tensors["position_ids"])
    np.testing.assert_array_equal(stored["layer.0.norm.weight"], tensors["layer.0.norm.weight"])


def test_quantize_with_settings_globs_and_recipe(model, tmp_path):
    path, _ = model
    out = tmp_path / "q4.safetensors"
    report = Q.quantize_checkpoint(path, out, dtype="qint4", group_size=8, exclude="head.*")
    by_name = {t["name"]: t for t in report["tensors"]}
    assert by_name["head.weight"]["action"] == "kept"
    w = Q.load_quantized_tensor(out, "layer.0.fc.weight")
    assert w.qparams.group_size == 8 and w.qparams.ch_axis == 1 and w.qdtype == Q.qint4

    recipe = {"version": 1, "rules": [{"match": "head.*", "dtype": "quint8",
                                       "scheme": "per_tensor_affine"},
                                      {"match": "*", "skip": True}]}
    for given in (recipe, json.dumps(recipe)):
        out2 = tmp_path / "recipe.safetensors"
        report = Q.quantize_checkpoint(path, out2, recipe=given, overwrite=True)
        assert [t["name"] for t in report["tensors"] if t["action"] == "quantized"] == ["head.weight"]
    recipe_file = tmp_path / "recipe.json"
    recipe_file.write_text(json.dumps(recipe))
    report = Q.quantize_checkpoint(path, tmp_path / "r2.safetensors", recipe=recipe_file)
    assert Q.load_quantized_tensor(tmp_path / "r2.safetensors", "head.weight").qdtype == Q.quint8


def test_dequantize_round_trip(model, tmp_path):
    path, tensors = model
    q = tmp_path / "q.safetensors"
    Q.quantize_checkpoint(path, q)
    back = tmp_path / "back.safetensors"
    summary = Q.dequantize_checkpoint(q, back)
    assert summary["dequantized"] == 2 and summary["copied"] == 3
    restored = Q.load_safetensors(back)
    w = Q.load_quantized_tensor(q, "layer.0.fc.weight")
    np.testing.assert_array_equal(restored["layer.0.fc.weight"], Q.dequantize(w))
    original = Q.dequantize_checkpoint(q, tmp_path / "orig.safetensors", dtype=None)
    assert original["dequantized"] == 2
    assert Q.load_safetensors(tmp_path / "orig.safetensors")["head.weight"].dtype == np.float16


def test_progress_callback_and_abort_leaves_nothing(model, tmp_path):
    path, _ = model
    seen = []
    Q.quantize_checkpoint(path, tmp_path / "a.safetensors",
                          progress=lambda *args: seen.append(args))
    assert [s[0] for s in seen] == [1, 2, 3, 4, 5] and all(s[1] == 5 for s in seen)
    assert seen[-1][2] == seen[-1][3]

    def stop(done, *_):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Q.quantize_checkpoint(path, tmp_path / "b.safetensors", progress=stop)
    assert sorted(os.listdir(tmp_path)) == ["a.safetensors", "model.safetensors"]


def test_errors_name_the_file_and_leave_outputs_alone(model, tmp_path):
    path, _ = model
    out = tmp_path / "q.safetensors"
    out.write_bytes(b"keep me")
    with pytest.raises(Q.Error, match="already exists"):
        Q.quantize_checkpoint(path, out)
    assert out.read_bytes() == b"keep me"
    with pytest.raises(Q.Error, match="missing.safetensors"):
        Q.quantize_checkpoint(tmp_path / "missing.safetensors", tmp_path / "x.safetensors")
    with pytest.raises(Q.Error, match="qint3"):
        Q.quantize_checkpoint(path, tmp_path / "x.safetensors", dtype="qint3")
    with pytest.raises(Q.Error, match="rules"):
        Q.quantize_checkpoint(path, tmp_path / "x.safetensors", recipe={"version": 1})
    with pytest.raises(Q.Error, match="progress"):
        Q.quantize_checkpoint(path, tmp_path / "x.safetensors", progress=3)
    with pytest.raises(Q.Error, match="no quantized tensor named"):
        Q.load_quantized_tensor(path, "layer.0.fc.weight")
    assert not (tmp_path / "x.safetensors").exists()
