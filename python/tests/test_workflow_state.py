"""Converted models' state: state_dict / load_state_dict round trips and load_quantized's checks."""

import io

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
from torch import nn  # noqa: E402
import torch.ao.nn.quantized as torch_quantized  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402

import lucidq as Q  # noqa: E402
import lucidq.workflow as LW  # noqa: E402
import lucidq.workflow.quantize as W  # noqa: E402
import lucidq.workflow.quantized as LWQ  # noqa: E402


class Static(nn.Module):
    """Every static quantized module type: stubs, convs, linears, activations, pooling,
    QFunctional (torch's FloatFunctional) and the embeddings."""

    def __init__(self, hidden=16):
        super().__init__()
        self.quant = W.QuantStub()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.act = nn.Hardswish()
        self.add = torch_quantized.FloatFunctional()
        self.relu3 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv1d = nn.Conv1d(8, 6, 3)
        self.sigmoid = nn.Sigmoid()
        self.fc1 = nn.Linear(6 * 14, hidden)
        self.relu2 = nn.ReLU()
        self.fc2 = nn.Linear(hidden, 10)
        self.relu6 = nn.ReLU6()
        self.gelu = nn.GELU()
        self.dequant = W.DeQuantStub()
        self.emb = nn.Embedding(20, 10)
        self.bag = nn.EmbeddingBag(20, 10, mode="mean")

    def forward(self, x, indices):
        x = self.relu1(self.conv1(self.quant(x)))
        x = self.relu3(self.add.add(x, self.act(self.conv2(x))))
        x = self.sigmoid(self.conv1d(self.pool(x).flatten(2)))
        x = self.relu2(self.fc1(x.flatten(1)))
        x = self.dequant(self.gelu(self.relu6(self.fc2(x))))
        return x + self.emb(indices).sum(1) + self.bag(indices)


def static_model(seed, hidden=16):
    """Static built from seed, fused, calibrated on seed's batches and converted."""
    torch.manual_seed(seed)
    model = W.fuse_modules(Static(hidden).eval(), [["conv1", "relu1"], ["fc1", "relu2"]])
    mapping = (LW.QConfigMapping().set_global(LW.get_default_qconfig())
               .set_module_name("emb", tq.float_qparams_weight_only_qconfig_4bit)
               .set_module_name("bag", tq.float_qparams_weight_only_qconfig))
    prepared = W.prepare(model, mapping)
    with torch.no_grad():
        for x, indices in batches(seed, 3):
            prepared(x, indices)
    return W.convert(prepared)


def batches(seed, count):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 3, 8, 8, generator=generator),
             torch.randint(0, 20, (4, 5), generator=generator)) for _ in range(count)]


def dynamic_model(seed, width=12):
    torch.manual_seed(seed)
    return W.quantize_dynamic(nn.Sequential(nn.Linear(24, width), nn.ReLU(), nn.Linear(width, 5)))


def weight_only_model(seed, width=64):
    torch.manual_seed(seed)
    return W.quantize_weight_only(nn.Sequential(nn.Linear(64, width), nn.GELU(),
                                                nn.Linear(width, 8)), bits=4, group_size=32)


def run(model, kind, seed):
    with torch.no_grad():
        if kind == "static":
            return torch.cat([model(x, i) for x, i in batches(seed + 100, 2)])
        width = 24 if kind == "dynamic" else 64
        x = torch.randn(6, width, generator=torch.Generator().manual_seed(seed + 100))
        return model(x)


MODELS = {"static": static_model, "dynamic": dynamic_model, "weight_only": weight_only_model}


def test_the_static_model_covers_every_quantized_type(seed):
    kinds = {type(m) for m in static_model(seed).modules()}
    kinds |= {type(m) for m in dynamic_model(seed).modules()}
    kinds |= {type(m) for m in weight_only_model(seed).modules()}
    expected = {LWQ.Quantize, LWQ.ConvReLU2d, LWQ.Conv2d, LWQ.Hardswish, LWQ.QFunctional,
                LWQ.MaxPool2d, LWQ.Conv1d, LWQ.Sigmoid, LWQ.LinearReLU, LWQ.Linear, LWQ.ReLU6,
                LWQ.GELU, LWQ.DeQuantize, LWQ.Embedding, LWQ.EmbeddingBag, LWQ.ReLU,
                LWQ.dynamic.Linear, LWQ.weight_only.Linear}
    assert expected <= kinds, expected - kinds


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_state_dict_round_trip_through_torch_save_gives_the_same_outputs(seed, kind):
    source = MODELS[kind](seed)
    state = source.state_dict()
    print(kind, {key: tuple(v.shape) for key, v in state.items() if torch.is_tensor(v)})
    weights = [key for key in state if key.endswith(".weight")]
    assert weights, f"no weight in the state dict: {sorted(state)}"
    for key in weights:
        assert state[key].dtype in (torch.int8, torch.uint8), (key, state[key].dtype)
        assert state[key].numel() > 0
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert sorted(loaded) == sorted(state)

    target = MODELS[kind](seed + 1)  # other weights and calibration, the same structure
    before = run(target, kind, seed)
    expected = run(source, kind, seed)
    assert not torch.equal(before, expected)
    result = target.load_state_dict(loaded)
    assert not result.missing_keys and not result.unexpected_keys
    assert torch.equal(run(target, kind, seed), expected)
    # and its state dict is the source's, tensor for tensor
    again = target.state_dict()
    for key, value in state.items():
        if torch.is_tensor(value):
            assert torch.equal(again[key], value), key
        else:
            assert again[key] == value, key


def test_state_dict_keys_follow_torch_ao(seed):
    state = static_model(seed).state_dict()
    assert state["fc2.scale"].dtype == torch.float64 and state["fc2.scale"].dim() == 0
    assert state["fc2.zero_point"].dtype == torch.int64
    assert state["fc2.weight"].shape == (10, 16) and state["fc2.weight"].dtype == torch.int8
    assert state["fc2.weight.scale"].shape == (10,) and state["fc2.bias"].shape == (10,)
    assert state["conv1d.weight"].shape == (6, 8, 3)
    assert state["conv2.weight"].shape == (8, 4, 3, 3)
    assert state["fc2._extra_state"]["type"] == "Linear"
    assert state["add._extra_state"]["type"] == "QFunctional"
    assert state["pool._extra_state"]["settings"]["args"]["kernel_size"] == 2
    weight_only = weight_only_model(seed).state_dict()
    assert weight_only["0.weight"].shape == (64, 64)
    assert weight_only["0.weight.scale"].shape == (64, 2)


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_refuses_another_shape_naming_the_key_and_both_shapes(seed, kind,
                                                                                strict):
    build = MODELS[kind]
    other = {"static": 24, "dynamic": 20, "weight_only": 96}[kind]
    target = build(seed + 1, other)
    key = {"static": "fc1.weight", "dynamic": "0.weight", "weight_only": "0.weight"}[kind]
    before = target.state_dict()[key]
    with pytest.raises(RuntimeError) as error:
        target.load_state_dict(build(seed).state_dict(), strict=strict)
    message = str(error.value)
    print(message)
    saved = {"static": [16, 84], "dynamic": [12, 24], "weight_only": [64, 64]}[kind]
    model = {"static": [24, 84], "dynamic": [20, 24], "weight_only": [96, 64]}[kind]
    assert (f"size mismatch for {key}: copying a param with shape torch.Size({saved}) from "
            f"checkpoint, the shape in current model is torch.Size({model})") in message
    assert torch.equal(target.state_dict()[key], before)  # the refused module is unchanged


def test_load_state_dict_refuses_another_module_type(seed):
    state = static_model(seed).state_dict()
    state["fc2._extra_state"] = state["fc1._extra_state"]  # LinearReLU's state for a Linear
    with pytest.raises(RuntimeError, match="fc2: the checkpoint holds a LinearReLU"):
        static_model(seed).load_state_dict(state)


def test_load_state_dict_reports_missing_and_unexpected_keys(seed):
    state = static_model(seed).state_dict()
    del state["fc2.bias"]
    state["fc2.extra"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as error:
        static_model(seed + 1).load_state_dict(state)
    assert 'Missing key(s) in state_dict: "fc2.bias"' in str(error.value)
    assert 'Unexpected key(s) in state_dict: "fc2.extra"' in str(error.value)
    target = static_model(seed + 1)
    kept = target.fc2.bias.copy()
    result = target.load_state_dict(state, strict=False)
    assert (result.missing_keys, result.unexpected_keys) == (["fc2.bias"], ["fc2.extra"])
    assert (target.fc2.bias == kept).all()  # a missing key keeps the module's value


def test_load_quantized_refuses_other_layer_shapes_naming_the_module(tmp_path, seed):
    path = tmp_path / "model.safetensors"
    W.save_quantized(static_model(seed), path)
    torch.manual_seed(seed)
    wider = W.fuse_modules(Static(hidden=24).eval(), [["conv1", "relu1"], ["fc1", "relu2"]])
    with pytest.raises(Q.Error) as error:
        W.load_quantized(path, wider)
    print(error.value)
    assert "module 'fc1': weight has shape [16, 84] in the checkpoint but [24, 84] in the model" \
        in str(error.value)
    assert isinstance(wider.fc1[0], nn.Linear)  # nothing replaced
    converted = static_model(seed, hidden=24)  # a converted model is checked the same way
    with pytest.raises(Q.Error, match=r"module 'fc1': weight has shape \[16, 84\] in the "
                                      r"checkpoint but \[24, 84\] in the model"):
        W.load_quantized(path, converted)


def test_load_quantized_refuses_another_module_type(tmp_path, seed):
    path = tmp_path / "model.safetensors"
    W.save_quantized(static_model(seed), path)
    torch.manual_seed(seed)
    model = W.fuse_modules(Static().eval(), [["conv1", "relu1"], ["fc1", "relu2"]])
    model.fc2 = nn.Conv1d(16, 10, 1)
    with pytest.raises(Q.Error, match="module 'fc2' is a Linear in the checkpoint but a Conv1d "
                                      "in the model"):
        W.load_quantized(path, model)


def test_load_quantized_names_the_side_that_lacks_a_module(tmp_path, seed):
    path = tmp_path / "model.safetensors"
    W.save_quantized(static_model(seed), path)
    torch.manual_seed(seed)
    fused = [["conv1", "relu1"], ["fc1", "relu2"]]
    model = W.fuse_modules(Static().eval(), fused)
    del model.conv1d
    with pytest.raises(Q.Error, match=r"has module 'conv1d' \(Conv1d\), which the model "
                                      r"\(Static\) lacks"):
        W.load_quantized(path, model)
    model = W.fuse_modules(Static().eval(), fused)
    model.head = nn.Linear(10, 3)
    with pytest.raises(Q.Error, match=r"the model \(Static\) has tensor 'head.bias' \(module "
                                      r"'head'\), which the checkpoint lacks"):
        W.load_quantized(path, model)
    model = W.fuse_modules(Static().eval(), fused)
    loaded = W.load_quantized(path, model)  # the same structure loads
    assert torch.equal(run(loaded, "static", seed), run(static_model(seed), "static", seed))


def test_a_new_module_type_gets_its_state_from_one_declaration(tmp_path, rng):
    from lucidq.workflow.quantized._state import QuantizedState, declare_state

    class ChannelScale(QuantizedState, nn.Module):
        def __init__(self, factors, offset):
            super().__init__()
            self.factors, self.offset = factors, offset

        def forward(self, x):
            return x * torch.from_numpy(self.factors) + self.offset

    declare_state(ChannelScale, lambda m: ({"factors": m.factors}, {"offset": m.offset}),
                  lambda cls, tensors, settings: cls(tensors["factors"], settings["offset"]))
    source = nn.Sequential(ChannelScale(rng.standard_normal(3).astype("float32"), 0.25))
    x = torch.from_numpy(rng.standard_normal((2, 3)).astype("float32"))
    target = nn.Sequential(ChannelScale(np.zeros(3, np.float32), 0.0))
    target.load_state_dict(source.state_dict())
    assert torch.equal(target(x), source(x))
    path = tmp_path / "scale.safetensors"
    W.save_quantized(source, path)
    loaded = W.load_quantized(path, nn.Sequential(ChannelScale(np.zeros(3, np.float32), 0.0)))
    assert torch.equal(loaded(x), source(x))
    with pytest.raises(RuntimeError, match=r"size mismatch for 0.factors: copying a param with "
                                           r"shape torch.Size\(\[3\]\) from checkpoint, the "
                                           r"shape in current model is torch.Size\(\[4\]\)"):
        nn.Sequential(ChannelScale(np.zeros(4, np.float32), 0.0)).load_state_dict(
            source.state_dict())
