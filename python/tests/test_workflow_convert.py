"""prepare / convert / fuse / quantized modules: behaviour, hooks, activations, and bad input naming the module."""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
from torch import nn  # noqa: E402

import lucidq as Q  # noqa: E402
import lucidq.workflow as LW  # noqa: E402
import lucidq.workflow.quantize as W  # noqa: E402
from lucidq.workflow import fused as LWF  # noqa: E402
from lucidq.workflow import qat as LWQAT  # noqa: E402
from lucidq.workflow import quantized as LWQ  # noqa: E402
from lucidq.workflow.qtensor import wrap_codes  # noqa: E402


class Net(nn.Module):
    def __init__(self, act=None):
        super().__init__()
        self.quant = W.QuantStub()
        self.fc1 = nn.Linear(16, 32)
        self.act = act if act is not None else nn.ReLU()
        self.fc2 = nn.Linear(32, 8)
        self.dequant = W.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.fc2(self.act(self.fc1(self.quant(x)))))


def calibrated(model, seed, qconfig=None, batches=4):
    model.eval()
    prepared = W.prepare(model, qconfig or LW.get_default_qconfig())
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(batches):
            prepared(torch.randn(8, 16, generator=generator))
    return prepared


def test_prepare_observes_outputs_and_convert_swaps(seed):
    torch.manual_seed(seed)
    prepared = calibrated(Net(), seed)
    observed = sorted(n for n, m in prepared.named_modules() if hasattr(m, "activation_post_process"))
    assert observed == ["fc1", "fc2", "quant"]  # ReLU keeps its input grid, DeQuantStub none
    model = W.convert(prepared)
    assert not model.training
    assert isinstance(model.quant, LWQ.Quantize) and isinstance(model.fc1, LWQ.Linear)
    assert isinstance(model.act, LWQ.ReLU) and isinstance(model.dequant, LWQ.DeQuantize)
    assert not any(hasattr(m, "qconfig") or hasattr(m, "activation_post_process")
                   for m in model.modules())
    x = torch.randn(5, 3, 16, generator=torch.Generator().manual_seed(seed))  # [B, ..., K]
    with torch.no_grad():
        y, fy = model(x), Net.forward(prepared, x)
    assert y.shape == (5, 3, 8) and y.dtype == torch.float32
    assert float((y - fy).abs().max()) < 0.1


def test_user_hooks_are_kept(seed):
    torch.manual_seed(seed)
    model = Net().eval()
    calls = []
    model.fc2.register_forward_hook(lambda m, i, o: calls.append(type(o).__name__))
    model.fc2.register_forward_pre_hook(lambda m, i: calls.append("pre"))
    quantized = W.convert(calibrated(model, seed))
    calls.clear()
    with torch.no_grad():
        quantized(torch.randn(2, 16))
    assert calls == ["pre", "Tensor"]


def test_mapping_precedence_name_over_type_over_global(seed):
    torch.manual_seed(seed)
    mapping = (LW.QConfigMapping().set_global(LW.get_default_qconfig())
               .set_object_type(nn.Linear, None).set_module_name("fc2", LW.get_default_qconfig()))
    prepared = W.prepare(Net().eval(), mapping)
    with torch.no_grad():
        prepared(torch.randn(8, 16))
    model = W.convert(prepared)
    assert type(model.fc1) is nn.Linear  # type entry None: left float
    assert isinstance(model.fc2, LWQ.Linear)  # name entry beats the type entry


def test_linear_output_is_one_integer_pass_of_the_gemm(seed):
    """The module's output codes are exactly lucidq.gemm_requantize's on the same codes."""
    torch.manual_seed(seed)
    model = W.convert(calibrated(Net(), seed))
    x = torch.randn(6, 16, generator=torch.Generator().manual_seed(seed))
    q = model.quant(x)
    out = model.fc1(q)
    expected = Q.gemm_requantize(q.int_repr().numpy(), model.fc1.packed_weight, q.q_scale(),
                                 q.q_zero_point(), out.q_scale(), out.q_zero_point(), Q.quint8,
                                 bias=model.fc1.bias)
    assert np.array_equal(out.int_repr().numpy(), expected)


@pytest.mark.parametrize("act", [nn.Sigmoid(), nn.Tanh(), nn.Hardswish(), nn.ELU(0.5),
                                 nn.LeakyReLU(0.1), nn.GELU(), nn.ReLU6()],
                         ids=lambda m: type(m).__name__)
def test_activations_map_codes_onto_their_output_grid(seed, act):
    torch.manual_seed(seed)
    model = W.convert(calibrated(Net(act), seed))
    q = model.fc1(model.quant(torch.randn(16, 16, generator=torch.Generator().manual_seed(seed))))
    out = model.act(q)
    # reference: float function of the dequantized input, quantized onto the output grid
    expected = torch.quantize_per_tensor(copy.deepcopy(act)(q.dequantize()), out.q_scale(),
                                         out.q_zero_point(), torch.quint8).int_repr()
    assert (out.int_repr().int() - expected.int()).abs().max() <= 1
    if isinstance(act, nn.Sigmoid):
        assert (out.q_scale(), out.q_zero_point()) == (1 / 256, 0)
    if isinstance(act, nn.Tanh):
        assert (out.q_scale(), out.q_zero_point()) == (2 / 256, 128)


def test_fuse_modules_folds_batch_norm(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 12), nn.BatchNorm1d(12), nn.ReLU(),
                          nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    for bn in (model[1], model[4]):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.data.uniform_(0.5, 1.5)
    model.eval()
    fused = W.fuse_modules(model, [["0", "1"], ["3", "4", "5"]])
    assert type(fused[0]) is nn.Linear and isinstance(fused[1], nn.Identity)
    assert isinstance(fused[3], LWF.ConvReLU2d)
    x = torch.randn(4, 8)
    image = torch.randn(2, 3, 6, 6)
    with torch.no_grad():
        assert torch.allclose(fused[0](x), model[1](model[0](x)), atol=1e-5)
        assert torch.allclose(fused[3](image), model[5](model[4](model[3](image))), atol=1e-5)


def test_fuse_modules_needs_eval_for_batch_norm_and_names_bad_groups():
    model = nn.Sequential(nn.Linear(8, 12), nn.BatchNorm1d(12), nn.Sigmoid())
    with pytest.raises(ValueError, match="eval mode"):
        W.fuse_modules(model.train(), [["0", "1"]])
    with pytest.raises(ValueError, match=r"no submodule 'fc9'"):
        W.fuse_modules(model.eval(), [["0", "fc9"]])
    with pytest.raises(ValueError, match="Linear\\+Sigmoid"):
        W.fuse_modules(model.eval(), [["0", "2"]])


def test_qat_linear_bn_trains_and_converts(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(W.QuantStub(), nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(),
                          nn.Linear(16, 4), W.DeQuantStub())
    fused = W.fuse_modules_qat(model.train(), [["1", "2"]])
    prepared = W.prepare_qat(fused, LW.get_default_qat_qconfig())
    assert isinstance(prepared[1], LWQAT.LinearBn1d) and isinstance(prepared[4], LWQAT.Linear)
    optimizer = torch.optim.SGD(prepared.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(20):
        x = torch.randn(32, 8, generator=generator)
        optimizer.zero_grad()
        prepared(x).pow(2).mean().backward()
        optimizer.step()
    prepared.eval()
    quantized = W.convert(prepared)
    assert isinstance(quantized[1], LWQ.Linear)
    x = torch.randn(8, 8, generator=generator)
    with torch.no_grad():
        y, fy = quantized(x), prepared(x)
    assert float((y - fy).abs().max()) < 0.05 * float(fy.abs().max()) + 0.05


def test_quantize_dynamic_set_and_dict_forms(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Sequential(nn.Linear(16, 4)))
    by_set = W.quantize_dynamic(model, {nn.Linear})
    assert isinstance(by_set[0], LWQ.dynamic.Linear) and isinstance(by_set[2][0], LWQ.dynamic.Linear)
    by_name = W.quantize_dynamic(model, {"2"})  # children inherit a named parent's config
    assert type(by_name[0]) is nn.Linear and isinstance(by_name[2][0], LWQ.dynamic.Linear)
    by_dict = W.quantize_dynamic(model, {nn.Linear: W.DynamicConfig(per_row=False), "0": None})
    assert type(by_dict[0]) is nn.Linear and not by_dict[2][0].layer.per_row
    with pytest.raises(ValueError, match="dtype"):
        W.quantize_dynamic(model, dtype=Q.quint8)


# --- bad input names the module path ---------------------------------------------------------

def test_nothing_to_quantize_warns_and_leaves_the_model_unchanged():
    model = Net().eval()
    model.qconfig = None  # set, and None everywhere: nothing is quantized
    before = copy.deepcopy(model.state_dict())
    with pytest.warns(UserWarning, match="nothing to quantize in Net"):
        prepared = W.prepare(model)
    assert not any(hasattr(m, "activation_post_process") or m.__dict__.get("qconfig")
                   or m._forward_hooks for m in prepared.modules())
    assert all(torch.equal(before[k], v) for k, v in prepared.state_dict().items())
    with pytest.warns(UserWarning, match="nothing to quantize"):
        W.quantize_dynamic(nn.Sequential(nn.ReLU()))


def test_convert_before_calibration_says_the_observer_saw_no_data():
    prepared = W.prepare(Net().eval(), LW.get_default_qconfig())
    with pytest.raises(ValueError, match=r'QuantStub "quant".*saw no data'):
        W.convert(prepared)


def test_non_float_input_to_quant_stub():
    prepared = W.prepare(Net().eval(), LW.get_default_qconfig())
    with pytest.raises(ValueError, match=r'QuantStub "quant": input is a torch.int64 tensor'):
        prepared(torch.ones(2, 16, dtype=torch.int64))
    with torch.no_grad():
        prepared(torch.randn(4, 16))
    model = W.convert(prepared)
    with pytest.raises(ValueError, match=r'Quantize "quant": input is a torch.int32 tensor'):
        model(torch.ones(2, 16, dtype=torch.int32))
    with pytest.raises(ValueError, match=r'Linear "fc1": input is a torch.float32 tensor'):
        model.fc1(torch.randn(2, 16))  # float where quantized codes are expected


def test_shape_mismatch_names_the_module():
    prepared = W.prepare(Net().eval(), LW.get_default_qconfig())
    with pytest.raises(ValueError, match=r'Linear "fc1": input has shape \(4, 15\).*16'):
        prepared(torch.randn(4, 15))
    with pytest.raises(ValueError, match=r'Linear "fc1": input has shape \(2, 9\)'):
        W.prepare(Net().eval(), LW.get_default_qconfig(), example_inputs=(torch.randn(2, 9),))
    with torch.no_grad():
        prepared(torch.randn(4, 16))
    model = W.convert(prepared)
    with pytest.raises(ValueError, match=r'Linear "fc1": input has shape \(3, 12\)'):
        model(torch.randn(3, 12))
    dynamic = W.quantize_dynamic(nn.Sequential(nn.Linear(16, 4)))
    with pytest.raises(ValueError, match=r'Linear "0": input has shape \(1, 3\)'):
        dynamic(torch.randn(1, 3))


def test_unknown_name_in_a_mapping():
    mapping = LW.QConfigMapping().set_module_name("fc9", LW.get_default_qconfig())
    with pytest.raises(ValueError, match="fc9"):
        W.prepare(Net().eval(), mapping)
    with pytest.raises(ValueError, match=r"names module 'fc9'"):
        W.quantize_dynamic(Net(), {"fc9"})


def test_prepare_qat_needs_train_mode():
    with pytest.raises(ValueError, match="eval mode"):
        W.prepare_qat(Net().eval(), LW.get_default_qat_qconfig())


def test_dequantize_is_lucidq_dequantize_bit_for_bit(rng):
    for qdtype, dtype in ((Q.quint8, np.uint8), (Q.qint8, np.int8)):
        for _ in range(20):
            scale = float(np.float32(rng.uniform(1e-4, 2.0)))
            zero_point = int(rng.integers(qdtype.quant_min, qdtype.quant_max + 1))
            codes = rng.integers(qdtype.quant_min, qdtype.quant_max + 1, size=(7, 33)).astype(dtype)
            q = wrap_codes(codes, scale, zero_point, qdtype)
            dequantized = LWQ.DeQuantize()(q)
            reference = Q._lucidq.dequantize(Q._lucidq.QuantizedTensor(
                codes.shape, Q.QParams.per_tensor(scale, zero_point, qdtype), codes.view(np.uint8)))
            assert np.array_equal(dequantized.numpy().view(np.uint32), reference.view(np.uint32))


def test_quant_wrapper_and_quantized_tensor_views(seed):
    torch.manual_seed(seed)
    inner = nn.Sequential(nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 4)).eval()
    wrapped = W.QuantWrapper(inner)
    prepared = W.prepare(wrapped, LW.get_default_qconfig())
    with torch.no_grad():
        prepared(torch.randn(32, 16, generator=torch.Generator().manual_seed(seed)))
    model = W.convert(prepared)
    assert isinstance(model.quant, LWQ.Quantize) and isinstance(model.module[0], LWQ.Linear)
    q = model.quant(torch.randn(2, 3, 16))
    assert q.reshape(6, 16).shape == (6, 16) and q.flatten(0, 1).shape == (6, 16)
    assert q.int_repr().dtype == torch.uint8 and q.int_repr().shape == (2, 3, 16)
    assert model(torch.randn(2, 3, 16)).shape == (2, 3, 4)


def test_qat_with_learnable_fake_quantizers_converts(seed):
    """LSQ (LearnableFakeQuantize): convert takes the learned scales; the integer model
    tracks the fake-quantized one to about one output step."""
    torch.manual_seed(seed)
    model = nn.Sequential(W.QuantStub(), nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4),
                          W.DeQuantStub()).train()
    lsq = LW.LearnableFakeQuantize.with_args
    qconfig = LW.QConfig(
        activation=lsq(observer=LW.MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                       dtype=Q.quint8, qscheme=Q.per_tensor_affine),
        weight=lsq(observer=LW.MovingAverageMinMaxObserver, quant_min=-8, quant_max=7,
                   dtype=Q.qint8, qscheme=Q.per_tensor_symmetric))
    prepared = W.prepare_qat(model, qconfig)
    optimizer = torch.optim.SGD(prepared.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(10):
        optimizer.zero_grad()
        prepared(torch.randn(32, 8, generator=generator)).pow(2).mean().backward()
        optimizer.step()
    prepared.eval()
    quantized = W.convert(prepared)
    learned = float(prepared[3].activation_post_process.scale)
    assert quantized[3].scale == pytest.approx(learned, rel=1e-6)
    x = torch.randn(16, 8, generator=generator)
    with torch.no_grad():
        assert float((quantized(x) - prepared(x)).abs().max()) <= 2.5 * quantized[3].scale


def test_registered_mapping_plugs_in_a_new_module_family(seed):
    """What the convolution issue does: register a float type and its quantized counterpart."""
    from lucidq.workflow import mappings

    class Scale(nn.Module):  # a float module type the tables do not know
        def forward(self, x):
            return 2 * x

    class QuantizedScale(nn.Module):
        OBSERVES_OUTPUT = True

        def __init__(self, scale, zero_point):
            super().__init__()
            self.scale, self.zero_point = scale, zero_point

        @classmethod
        def from_float(cls, mod):
            s, z = mod.activation_post_process.calculate_qparams()
            return cls(float(s), int(z))

        def forward(self, q):
            return torch.quantize_per_tensor(2 * q.dequantize(), self.scale, self.zero_point,
                                             torch.quint8)

    before = mappings.static_mapping()
    mappings.register_static(Scale, QuantizedScale)
    try:
        model = nn.Sequential(W.QuantStub(), Scale(), W.DeQuantStub()).eval()
        prepared = W.prepare(model, LW.get_default_qconfig())
        assert hasattr(prepared[1], "activation_post_process")
        with torch.no_grad():
            prepared(torch.rand(16, 4, generator=torch.Generator().manual_seed(seed)))
        converted = W.convert(prepared)
        assert isinstance(converted[1], QuantizedScale)
        x = torch.rand(3, 4)
        assert float((converted(x) - 2 * x).abs().max()) < 0.02
    finally:
        mappings._STATIC.clear()
        mappings._STATIC.update(before)
