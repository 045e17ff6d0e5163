"""Graph mode (prepare_fx / convert_fx) on unmodified float models, against torch.ao's FX mode.

torchvision's float models (weights=None, fixed seed, BatchNorm statistics set from the
calibration batches, 64 × 64 inputs) go through lucidq's prepare_fx → calibrate →
convert_fx and torch.ao's, both with get_default_qconfig_mapping("onednn") and the same
data: lucidq's SQNR against float is at most 1 dB below torch.ao's. Smaller models check
the graph (fusion, add_relu, cat, scalar ops, float boundaries, dynamic entries), codes
equal to eager mode on the same fused model, the errors, and accuracy on the digits.
"""

import copy
import operator

import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
torchvision = pytest.importorskip("torchvision", reason="needs torchvision (python3-torchvision)")
from torch import nn  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402
from torch.ao.quantization import quantize_fx as tqfx  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from test_workflow_torchvision import calibrate, set_batch_norm_statistics, sqnr  # noqa: E402

import lucidq  # noqa: E402
from lucidq.workflow import qat as LWQAT  # noqa: E402
from lucidq.workflow import quantized as LWQ  # noqa: E402
from lucidq.workflow.fx.rewrite import Functional  # noqa: E402
from lucidq.workflow.fx.trace import _Proxy  # noqa: E402

if "onednn" not in torch.backends.quantized.supported_engines:
    pytest.skip("torch was built without the onednn engine", allow_module_level=True)

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0",
          "regnet_x_400mf"]
# torch.ao 1.13's tracer fails on these under Python 3.11 (tuple unpacking of a proxy,
# "Proxy object cannot be iterated"); lucidq's tracer unpacks by byte offset. The torch.ao
# reference for them runs with that one fix patched into torch.fx.Proxy.
BEYOND_TORCH_AO = ["shufflenet_v2_x0_5", "vit_small"]


KEEP_GRID = ("torch:MaxPool2d", "torch:AdaptiveAvgPool2d", "flatten", "Tensor.view",
             "transpose", "Tensor.contiguous", "torch:Dropout")


def build_model(name):
    if name == "vit_small":  # a small ViT: 4 × 4 patches of 16, two encoder layers
        model = torchvision.models.VisionTransformer(
            image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128)
        nn.init.normal_(model.heads.head.weight, std=0.02)  # zeros by default
        return model
    return getattr(torchvision.models, name)(weights=None)


def torch_ao_fx(model, example, batches, fix_proxy=False):
    previous = torch.backends.quantized.engine, torch.fx.Proxy.__iter__
    torch.backends.quantized.engine = "onednn"
    if fix_proxy:
        torch.fx.Proxy.__iter__ = _Proxy.__iter__
    try:
        prepared = tqfx.prepare_fx(copy.deepcopy(model), tq.get_default_qconfig_mapping("onednn"),
                                   (example,))
    finally:
        torch.backends.quantized.engine, torch.fx.Proxy.__iter__ = previous
    calibrate(prepared, batches)
    return tqfx.convert_fx(prepared)


def lucidq_fx(model, example, batches, mapping=None):
    mapping = lucidq.get_default_qconfig_mapping("onednn") if mapping is None else mapping
    prepared = lucidq.prepare_fx(model, mapping, (example,))
    calibrate(prepared, batches)
    return lucidq.convert_fx(prepared)


def compare(model, batches, test, fix_proxy=False):
    """(lucidq's SQNR, torch.ao's SQNR, lucidq's summary, torch.ao's summary) on `test`."""
    with torch.no_grad():
        reference = model(test)
    ours_model = lucidq_fx(model, batches[0], batches)
    theirs_model = torch_ao_fx(model, batches[0], batches, fix_proxy)
    with torch.no_grad():
        ours, theirs = sqnr(reference, ours_model(test)), sqnr(reference, theirs_model(test))
    return ours, theirs, lucidq.summary(ours_model, (test,)), lucidq.summary(theirs_model, (test,))


def no_back_to_back(converted):
    """No DeQuantize whose result feeds a Quantize (dequantize / quantize pairs)."""
    modules = dict(converted.named_modules())
    for node in converted.graph.nodes:
        if node.op == "call_module" and isinstance(modules[node.target], LWQ.DeQuantize):
            for user in node.users:
                if user.op == "call_module" and isinstance(modules[user.target], LWQ.Quantize):
                    return False
    return True


@pytest.mark.parametrize("name", MODELS + BEYOND_TORCH_AO)
def test_torchvision_float_model_within_1_db_of_torch_ao_fx(name, seed):
    torch.manual_seed(seed)
    model = build_model(name)
    generator = torch.Generator().manual_seed(seed + 1)
    batches = [torch.randn(2, 3, 64, 64, generator=generator) for _ in range(2)]
    test = torch.randn(4, 3, 64, 64, generator=generator)
    set_batch_norm_statistics(model, batches)
    model.eval()
    ours, theirs, our_summary, their_summary = compare(model, batches, test,
                                                       name in BEYOND_TORCH_AO)
    print(f"{name}: SQNR lucidq FX {ours:.2f} dB, torch.ao FX {theirs:.2f} dB; nodes giving "
          f"quantized tensors / tensors: lucidq {our_summary.quantized}/{our_summary.tensors}, "
          f"torch.ao {their_summary.quantized}/{their_summary.tensors}")
    assert ours >= theirs - 1.0
    if name != "vit_small":  # LayerNorm and attention stay float in a ViT
        assert our_summary.quantized >= 0.95 * our_summary.tensors
    for row in our_summary:  # ops that keep the grid have no observer of their own
        if row["kernel"] in KEEP_GRID and row["quantized"]:
            assert row["output"] == row["inputs"][0], row


class Functions(nn.Module):
    """Functional forms only: F.relu after a conv, x + y then relu, cat, scalar ops, mean."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = nn.Conv2d(16, 8, 1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = F.relu(self.conv1(x))
        z = torch.relu(self.conv2(y) + y)
        z = self.conv3(torch.cat([z, y], 1)) * 0.5
        return self.fc(z.mean((2, 3)))


def test_functional_forms_fuse_and_quantize(seed):
    torch.manual_seed(seed)
    model = Functions().eval()
    generator = torch.Generator().manual_seed(seed + 1)
    batches = [torch.randn(4, 3, 16, 16, generator=generator) for _ in range(2)]
    ours, theirs, summary, _ = compare(model, batches, batches[1])
    print(f"SQNR lucidq FX {ours:.2f} dB, torch.ao FX {theirs:.2f} dB\n{summary}")
    converted = lucidq_fx(model, batches[0], batches)
    assert isinstance(converted.conv1, LWQ.ConvReLU2d)
    methods = sorted(m.method for m in converted.modules() if isinstance(m, Functional))
    assert methods == ["add_relu", "cat", "mul_scalar"]
    assert all(isinstance(m.op, LWQ.QFunctional) for m in converted.modules()
               if isinstance(m, Functional))
    assert summary.quantized == summary.tensors - 1  # all but the final dequantize
    assert no_back_to_back(converted)
    assert ours >= theirs - 1.0


def test_mapping_none_keeps_nodes_float(seed):
    torch.manual_seed(seed)
    model = Functions().eval()
    x = torch.randn(2, 3, 16, 16)
    mapping = (lucidq.get_default_qconfig_mapping("onednn")
               .set_object_type(operator.add, None).set_module_name("fc", None))
    converted = lucidq_fx(model, x, [x], mapping)
    assert type(converted.fc) is nn.Linear
    adds = [n for n in converted.graph.nodes if n.target is operator.add]
    assert len(adds) == 1
    assert all(isinstance(converted.get_submodule(a.target), LWQ.DeQuantize)
               for a in adds[0].all_input_nodes)
    assert no_back_to_back(converted)
    with torch.no_grad():
        assert sqnr(model(x), converted(x)) > 15.0


def test_torch_qconfig_mapping_is_understood(seed):
    torch.manual_seed(seed)
    model = Functions().eval()
    generator = torch.Generator().manual_seed(seed + 1)
    batches = [torch.randn(4, 3, 16, 16, generator=generator) for _ in range(2)]
    ours = lucidq_fx(model, batches[0], batches)
    theirs_mapping = lucidq_fx(model, batches[0], batches, tq.get_default_qconfig_mapping("onednn"))
    with torch.no_grad():
        reference = model(batches[1])
        quality = sqnr(reference, ours(batches[1])), sqnr(reference, theirs_mapping(batches[1]))
    print(f"SQNR with lucidq's onednn mapping {quality[0]:.2f} dB, torch's {quality[1]:.2f} dB")
    assert abs(quality[0] - quality[1]) < 0.5
    kinds = [[(name, type(m).__name__) for name, m in model.named_modules()]
             for model in (ours, theirs_mapping)]
    assert kinds[0] == kinds[1]


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(8 * 6 * 6, 16)
        self.relu2 = nn.ReLU()
        self.out = nn.Linear(16, 5)

    def forward(self, x):
        x = self.relu(self.bn(self.conv(x)))
        return self.out(self.relu2(self.fc(torch.flatten(x, 1))))


def test_codes_equal_eager_mode_on_the_fused_model(seed):
    torch.manual_seed(seed)
    model = Plain()
    generator = torch.Generator().manual_seed(seed + 1)
    batches = [torch.randn(8, 3, 8, 8, generator=generator) for _ in range(2)]
    set_batch_norm_statistics(model, batches)
    model.eval()
    qconfig = lucidq.get_default_qconfig("onednn")
    graph = lucidq_fx(model, batches[0], batches, lucidq.QConfigMapping().set_global(qconfig))
    fused = lucidq.fuse_modules(model, [["conv", "bn", "relu"], ["fc", "relu2"]])
    eager = lucidq.prepare(lucidq.QuantWrapper(fused), qconfig)
    calibrate(eager, batches)
    eager = lucidq.convert(eager)
    assert isinstance(graph.conv, LWQ.ConvReLU2d) and isinstance(graph.fc, LWQ.LinearReLU)
    with torch.no_grad():
        assert torch.equal(graph(batches[1]), eager(batches[1]))
    folded = lucidq.fuse_fx(model)
    assert isinstance(folded.conv, lucidq.workflow.fused.ConvReLU2d) and not hasattr(folded, "bn")
    assert torch.equal(folded.conv[0].weight, fused.conv[0].weight)
    with torch.no_grad():
        torch.testing.assert_close(folded(batches[1]), model(batches[1]))


class Patterns(nn.Module):
    """Conv1d–BatchNorm1d–relu, Conv3d–ReLU and BatchNorm2d–ReLU (after an add)."""

    def __init__(self):
        super().__init__()
        self.conv1d, self.bn1d = nn.Conv1d(3, 4, 3), nn.BatchNorm1d(4)
        self.conv3d, self.relu3d = nn.Conv3d(3, 4, 3), nn.ReLU()
        self.bn2d, self.relu2d = nn.BatchNorm2d(3), nn.ReLU()

    def forward(self, x):
        a = F.relu(self.bn1d(self.conv1d(x.flatten(2))))
        b = self.relu3d(self.conv3d(x.unsqueeze(2).expand(-1, -1, 3, -1, -1)))
        c = self.relu2d(self.bn2d(x + x))
        return a.mean() + b.mean() + c.mean()


def test_fusion_patterns_in_1d_3d_and_batch_norm_relu(seed):
    torch.manual_seed(seed)
    model = Patterns()
    batches = [torch.randn(4, 3, 6, 6, generator=torch.Generator().manual_seed(seed + 1))]
    model.train()
    with torch.no_grad():
        model(batches[0])  # BatchNorm statistics of the data
    qat = lucidq.prepare_qat_fx(model, lucidq.get_default_qat_qconfig_mapping("onednn"),
                                (batches[0],))
    assert isinstance(qat.conv1d, LWQAT.ConvBnReLU1d) and isinstance(qat.conv3d, LWQAT.ConvReLU3d)
    converted = lucidq_fx(model.eval(), batches[0], batches)
    assert isinstance(converted.conv1d, LWQ.ConvReLU1d)
    assert isinstance(converted.conv3d, LWQ.ConvReLU3d)
    assert isinstance(converted.bn2d, LWQ.BNReLU2d)
    assert not hasattr(converted, "bn1d") and no_back_to_back(converted)


class Gate(nn.Module):
    """Data-dependent control flow: torch.fx cannot trace it."""

    def __init__(self):
        super().__init__()
        self.conv_a = nn.Conv2d(4, 4, 3, padding=1)
        self.conv_b = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        if x.mean() > -100.0:
            return self.conv_a(x)
        return self.conv_b(x)


class Untraceable(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.gate = Gate()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.gate(self.conv(x)).mean((2, 3)))


def test_untraceable_model_names_the_call_and_the_ways_out(seed):
    torch.manual_seed(seed)
    model = Untraceable().eval()
    x = torch.randn(2, 3, 8, 8)
    mapping = lucidq.get_default_qconfig_mapping("onednn")
    with pytest.raises(lucidq.Error, match=r'cannot trace Untraceable .*module "gate" \(Gate\)'
                       r".*`if x.mean\(\) > -100.0:`.*non_traceable_module_name.*"
                       r'untraceable="split"'):
        lucidq.prepare_fx(model, mapping, (x,))
    kept = lucidq.prepare_fx(model, mapping, (x,), {"non_traceable_module_name": ["gate"]})
    split = lucidq.prepare_fx(model, mapping, (x,), untraceable="split")
    for prepared in (kept, split):
        prepared(x)
    kept, split = lucidq.convert_fx(kept), lucidq.convert_fx(split)
    assert type(kept.gate) is Gate and type(kept.gate.conv_a) is nn.Conv2d
    assert isinstance(kept.conv, LWQ.Conv2d) and isinstance(kept.fc, LWQ.Linear)
    assert type(split.gate) is Gate and isinstance(split.gate.conv_a.conv_a, LWQ.Conv2d)
    assert type(split.gate.conv_b) is nn.Conv2d  # never called on the example: float
    with torch.no_grad():
        reference = model(x)
        print(f"SQNR: gate float {sqnr(reference, kept(x)):.2f} dB, split "
              f"{sqnr(reference, split(x)):.2f} dB")
        assert sqnr(reference, kept(x)) > 15.0 and sqnr(reference, split(x)) > 15.0


def test_errors_name_the_module(seed):
    torch.manual_seed(seed)
    model = Plain().eval()
    x = torch.randn(2, 3, 8, 8)
    mapping = lucidq.get_default_qconfig_mapping("onednn")
    with pytest.raises(lucidq.Error, match=r'convert_fx: QuantStub "x_quant".*saw no data'):
        lucidq.convert_fx(lucidq.prepare_fx(model, mapping, (x,)))
    with pytest.raises(lucidq.Error, match=r"'encoder' not found in the model"):
        lucidq.prepare_fx(model, copy.deepcopy(mapping).set_module_name("encoder", None), (x,))
    with pytest.raises(lucidq.Error, match=r"example_inputs is a Tensor"):
        lucidq.prepare_fx(model, mapping, x)
    with pytest.raises(lucidq.Error, match=r"was not prepared by lucidq's prepare_fx"):
        lucidq.convert_fx(torch.fx.symbolic_trace(model))


def test_dynamic_entries_quantize_linears_inside_a_transformer(seed):
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64)
    model = nn.Sequential(nn.TransformerEncoder(layer, 2), nn.Linear(32, 8)).eval()
    x = torch.randn(5, 3, 32, generator=torch.Generator().manual_seed(seed + 1))
    mapping = lucidq.QConfigMapping().set_object_type(nn.Linear, lucidq.default_dynamic_qconfig)
    prepared = lucidq.prepare_fx(model, mapping, (x,))
    converted = lucidq.convert_fx(prepared)
    dynamic = [n for n, m in converted.named_modules() if isinstance(m, LWQ.dynamic.Linear)]
    assert len(dynamic) == 5, dynamic  # linear1, linear2 of both layers and the head
    with torch.no_grad():
        quality = sqnr(model(x), converted(x))
    print(f"dynamic transformer: SQNR {quality:.2f} dB")
    assert quality > 25.0


class DigitsBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class DigitsResNet(nn.Module):
    """The residual digits CNN of test_workflow_resnet_digits, written as a float model:
    no stubs, `x + y` for the skips, torch.flatten."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.block1 = DigitsBlock(16)
        self.block2 = DigitsBlock(16)
        self.pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = self.pool(self.block2(self.block1(x)))
        return self.fc(torch.flatten(x, 1))


@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("sklearn.datasets", reason="the digits come with scikit-learn")
    from digits import accuracy, load_split, train

    data = load_split((1, 8, 8))
    seed = 0
    print(f"\ntraining seed={seed}")
    torch.manual_seed(seed)
    model = train(DigitsResNet(), data, epochs=5, lr=3e-3, seed=seed).eval()
    score = accuracy(model, data)
    print(f"float ResNet accuracy {score:.2f} %")
    assert score >= 95.0
    return model, score, data


def test_digits_resnet_fx_ptq(digits):
    from digits import accuracy, report

    model, float_score, data = digits
    prepared = lucidq.prepare_fx(model, lucidq.get_default_qconfig_mapping("onednn"),
                                 (data["train"][0][:2],))
    calibrate(prepared, [data["train"][0]])
    quantized = lucidq.convert_fx(prepared)
    assert isinstance(quantized.block1.conv1, LWQ.ConvReLU2d)
    assert [m.method for m in quantized.modules() if isinstance(m, Functional)] == [
        "add_relu", "add_relu"]
    assert report("ResNet FX PTQ int8", accuracy(quantized, data), float_score, 0.5) <= 0.5


def test_digits_resnet_fx_qat(digits):
    from digits import accuracy, report, train

    model, float_score, data = digits
    prepared = lucidq.prepare_qat_fx(copy.deepcopy(model).train(),
                                     lucidq.get_default_qat_qconfig_mapping("onednn"),
                                     (data["train"][0][:2],))
    assert isinstance(prepared.block1.conv1, LWQAT.ConvBnReLU2d)
    train(prepared, data, epochs=3, lr=5e-4, seed=1,
          on_epoch=lambda m, epoch: epoch == 2 and m.apply(LWQAT.freeze_bn_stats))
    quantized = lucidq.convert_fx(prepared.eval())
    assert isinstance(quantized.block2.conv2, LWQ.Conv2d)
    assert report("ResNet FX QAT int8", accuracy(quantized, data), float_score, 0.3) <= 0.3


def test_workflow_doc_graph_mode_example_runs():
    """The ```python block under "## Graph mode" in docs/workflow.md."""
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "workflow.md").read_text()
    section = text[text.index("## Graph mode"):]
    start = section.index("```python") + len("```python")
    exec(compile(section[start:section.index("```\n", start)], "workflow.md", "exec"), {})


def test_readme_graph_mode_example_runs():
    """The ```python block under "### Graph mode" in the README."""
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text[text.index("### Graph mode"):]
    start = section.index("```python") + len("```python")
    scope = {}
    exec(compile(section[start:section.index("```\n", start)], "README.md", "exec"), scope)
    assert isinstance(scope["quantized"].get_submodule("layer1.0.conv1"), LWQ.ConvReLU2d)


def test_weight_only_and_dynamic_entries_in_one_mapping(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 8)).eval()
    x = torch.randn(6, 64, generator=torch.Generator().manual_seed(seed + 1))
    mapping = (lucidq.get_default_qconfig_mapping("onednn")
               .set_module_name("0", lucidq.WeightOnlyConfig(bits=4, group_size=32))
               .set_module_name("2", lucidq.DynamicConfig()))
    prepared = lucidq.prepare_fx(model, mapping, (x,))
    prepared(x)
    converted = lucidq.convert_fx(prepared)
    assert isinstance(converted.get_submodule("0"), LWQ.weight_only.Linear)
    assert isinstance(converted.get_submodule("2"), LWQ.dynamic.Linear)
    assert isinstance(converted.get_submodule("4"), LWQ.Linear)  # static, the global entry
    with torch.no_grad():
        quality = sqnr(model(x), converted(x))
    print(f"weight-only int4 + dynamic + static: SQNR {quality:.2f} dB")
    assert quality > 15.0
    with pytest.raises(lucidq.Error, match=r"module '0' \(Linear\) a WeightOnlyConfig"):
        lucidq.prepare(model, mapping)
