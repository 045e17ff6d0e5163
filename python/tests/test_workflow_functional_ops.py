"""FloatFunctional -> QFunctional and torch ops between quantized modules.

QFunctional's add / add_relu / mul / cat / add_scalar / mul_scalar are checked against an
exact float64 reference written here (0 mismatches) and against torch's qnnpack quantized
ops on the same input codes (codes within 1, output grids equal). Ops that a model applies
between two lucidq modules run on torch's quantized tensors.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
from torch import nn  # noqa: E402
import torch.ao.nn.quantized as tnq  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import lucidq  # noqa: E402
from lucidq.workflow.quantized import QFunctional  # noqa: E402
from lucidq.workflow.qtensor import codes_of, wrap_codes  # noqa: E402

if "qnnpack" not in torch.backends.quantized.supported_engines:
    pytest.skip("torch was built without the qnnpack engine", allow_module_level=True)



def random_q(generator, shape, scale, zero_point, dtype=torch.quint8):
    x = torch.randn(*shape, generator=generator) * 2
    return torch.quantize_per_tensor(x, scale, zero_point, dtype)


def reference(op, a, b, scale, zero_point, relu=False):
    """clamp(round_half_even(f(deq a, deq b) / s) + z): float64, as docs/numerics.md states."""
    x = a.q_scale() * (a.int_repr().numpy().astype(np.float64) - a.q_zero_point())
    y = b.q_scale() * (b.int_repr().numpy().astype(np.float64) - b.q_zero_point())
    values = x * y if op == "mul" else x + y
    codes = np.rint(values / scale) + zero_point
    return np.clip(codes, zero_point if relu else 0, 255).astype(np.uint8)


@pytest.mark.parametrize("op", ["add", "add_relu", "mul"])
def test_binary_ops_exact_and_within_one_of_qnnpack(op, seed, qnnpack):
    generator = torch.Generator().manual_seed(seed)
    a = random_q(generator, (4, 8, 5, 5), 0.02, 120)
    b = random_q(generator, (4, 8, 5, 5), 0.035, 131)
    scale, zero_point = 0.05, 127
    ours = getattr(QFunctional(scale, zero_point), op)(a, b)
    assert ours.is_quantized and ours.dtype == torch.quint8
    assert (ours.q_scale(), ours.q_zero_point()) == (scale, zero_point)
    codes = ours.int_repr().numpy()
    expected = reference(op, a, b, scale, zero_point, relu=op == "add_relu")
    assert int((codes != expected).sum()) == 0
    torch_fn = {"add": torch.ops.quantized.add, "add_relu": torch.ops.quantized.add_relu,
                "mul": torch.ops.quantized.mul}[op]
    theirs = torch_fn(a, b, scale, zero_point).int_repr().numpy()
    difference = np.abs(codes.astype(int) - theirs.astype(int)).max()
    print(f"{op}: max code difference to qnnpack {difference}")
    assert difference <= 1


def test_binary_ops_broadcast_and_refuse_other_shapes(seed):
    generator = torch.Generator().manual_seed(seed)
    a = random_q(generator, (2, 3, 4), 0.02, 128)
    b = random_q(generator, (1, 3, 1), 0.02, 128)
    out = QFunctional(0.04, 128).add(a, b)
    assert tuple(out.shape) == (2, 3, 4)
    expected = reference("add", a, b.expand(2, 3, 4), 0.04, 128)
    assert int((out.int_repr().numpy() != expected).sum()) == 0
    with pytest.raises(lucidq.Error, match=r"add of shapes \(2, 3, 4\) and \(5,\)"):
        QFunctional(0.04, 128).add(a, random_q(generator, (5,), 0.02, 128))


@pytest.mark.parametrize("c", [0.3, -2.0, 5.0, 0.0])
def test_scalar_ops_choose_torchs_output_grid(c, seed, qnnpack):
    generator = torch.Generator().manual_seed(seed)
    x = random_q(generator, (3, 17), 0.01, 128)
    for name in ("add_scalar", "mul_scalar"):
        ours = getattr(QFunctional(), name)(x, c)
        theirs = getattr(torch.ops.quantized, name)(x, c)
        assert ours.q_scale() == pytest.approx(theirs.q_scale(), rel=1e-12)
        assert ours.q_zero_point() == theirs.q_zero_point()
        difference = np.abs(ours.int_repr().numpy().astype(int)
                            - theirs.int_repr().numpy().astype(int)).max()
        print(f"{name}({c}): max code difference to torch {difference}")
        assert difference <= 1


def test_cat_requantizes_each_input_onto_the_output_grid(seed, qnnpack):
    generator = torch.Generator().manual_seed(seed)
    a = random_q(generator, (2, 3, 4), 0.02, 128)
    b = random_q(generator, (2, 5, 4), 0.05, 100)
    ours = QFunctional(0.05, 100).cat([a, b], dim=1)
    theirs = torch.ops.quantized.cat([a, b], dim=1, scale=0.05, zero_point=100)
    difference = np.abs(ours.int_repr().numpy().astype(int)
                        - theirs.int_repr().numpy().astype(int)).max()
    assert difference <= 1
    # b is already on the output grid: its codes are copied as they are
    assert torch.equal(ours.int_repr()[:, 3:], b.int_repr())


class Residual(nn.Module):
    """A CNN written for torch.ao: its stubs, FloatFunctional, and torch ops between modules."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.skip = tnq.FloatFunctional()
        self.cat = tnq.FloatFunctional()
        self.pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(16 * 2 * 2, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.relu1(self.conv1(self.quant(x)))
        y = self.skip.add_relu(self.conv2(x), x)
        y = self.cat.cat([y, F.max_pool2d(x, 3, 1, 1)], 1)
        y = F.adaptive_avg_pool2d(self.pool(y), 2)
        y = torch.flatten(y.permute(0, 1, 3, 2).contiguous(), 1)
        return self.dequant(self.fc(y))


def test_torch_ao_model_converts_unchanged_and_matches_torch_ao(seed):
    torch.manual_seed(seed)
    model = Residual().eval()
    batches = [torch.randn(4, 3, 8, 8) for _ in range(3)]
    test = torch.randn(8, 3, 8, 8)
    qconfig = tq.get_default_qconfig("qnnpack")  # a torch QConfig object, as the argument
    prepared = lucidq.prepare(model, qconfig)
    assert not isinstance(prepared.skip.activation_post_process, nn.Identity)
    with torch.no_grad():
        for batch in batches:
            prepared(batch)
        reference = model(test)
        ours = lucidq.convert(prepared)(test)
    assert isinstance(lucidq.convert(prepared).skip, QFunctional)
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = "qnnpack"
    try:
        model.qconfig = qconfig
        theirs_prepared = tq.prepare(model)
        with torch.no_grad():
            for batch in batches:
                theirs_prepared(batch)
            theirs = tq.convert(theirs_prepared)(test)
    finally:
        torch.backends.quantized.engine = previous

    def sqnr(x):
        return 10 * np.log10(float((reference ** 2).sum() / ((reference - x) ** 2).sum()))

    print(f"SQNR lucidq {sqnr(ours):.2f} dB, torch.ao {sqnr(theirs):.2f} dB")
    assert sqnr(ours) >= sqnr(theirs) - 1.0


def test_prepare_without_any_qconfig_uses_the_default_mapping(seed, caplog):
    torch.manual_seed(seed)
    model = nn.Sequential(lucidq.QuantStub(), nn.Linear(4, 3), lucidq.DeQuantStub()).eval()
    with caplog.at_level("INFO", logger="lucidq"):
        prepared = lucidq.prepare(model)
    assert "get_default_qconfig_mapping" in caplog.text
    prepared(torch.randn(5, 4))
    converted = lucidq.convert(prepared)
    assert type(converted[1]).__name__ == "Linear" and converted[1].__module__.startswith(
        "lucidq")
    assert converted(torch.randn(2, 4)).dtype == torch.float32


OPS_BETWEEN_MODULES = {
    "view": lambda x: x.view(2, -1),
    "reshape": lambda x: x.reshape(4, 3, 4, 8),
    "flatten": lambda x: torch.flatten(x, 1),
    "permute": lambda x: x.permute(0, 2, 3, 1),
    "transpose+contiguous": lambda x: x.transpose(1, 2).contiguous(),
    "squeeze/unsqueeze": lambda x: x.unsqueeze(0).squeeze(0),
    "indexing": lambda x: x[:, 1:3, ::2],
    "chunk": lambda x: x.chunk(2, dim=1)[1],
    "split": lambda x: x.split([1, 2], dim=1)[0],
    "cat": lambda x: torch.cat([x, x], 1),
    "stack": lambda x: torch.stack([x, x]),
    "max_pool2d": lambda x: F.max_pool2d(x, 2),
    "avg_pool2d": lambda x: F.avg_pool2d(x, 3, 1, 1),
    "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, 3),
    "mean": lambda x: x.mean([2, 3]),
    "relu": F.relu,
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.5),
    "interpolate nearest": lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
}


@pytest.mark.parametrize("name", list(OPS_BETWEEN_MODULES))
def test_ops_between_modules_equal_torch_on_the_same_codes(name, rng):
    """A lucidq module's output (a quantized tensor over the kernel's array) behaves exactly as
    a quantized tensor torch built from the same codes."""
    op = OPS_BETWEEN_MODULES[name]
    codes = rng.integers(0, 256, size=(2, 3, 8, 8), dtype=np.uint8)
    ours = wrap_codes(codes, 0.037, 121, lucidq.quint8)
    theirs = torch._make_per_tensor_quantized_tensor(torch.from_numpy(codes.copy()), 0.037, 121)
    a, b = op(ours), op(theirs)
    assert a.is_quantized and (a.q_scale(), a.q_zero_point()) == (b.q_scale(), b.q_zero_point())
    assert torch.equal(a.int_repr(), b.int_repr())
    # and lucidq's modules read the result in place, views included
    view = codes_of(a, None)
    assert np.array_equal(view.array, b.int_repr().numpy())


def test_codes_of_shares_memory_and_refuses_what_is_not_quantized():
    codes = np.arange(12, dtype=np.uint8).reshape(3, 4)
    q = wrap_codes(codes, 0.5, 3, lucidq.quint8)
    assert codes_of(q, None).array is codes  # no copy between modules
    codes[0, 0] = 200
    assert q.int_repr()[0, 0] == 200
    read_only = np.arange(4, dtype=np.int8)
    read_only.flags.writeable = False
    assert torch.equal(wrap_codes(read_only, 1.0, 0, lucidq.qint8).int_repr(),
                       torch.arange(4, dtype=torch.int8))
    with pytest.raises(lucidq.Error, match=r"input is a torch.float32 tensor \(expected quantized"):
        codes_of(torch.zeros(3), None)
    per_channel = torch.quantize_per_channel(torch.zeros(2, 3), torch.tensor([0.1, 0.2]),
                                             torch.tensor([0, 0]), 0, torch.quint8)
    with pytest.raises(lucidq.Error, match="per_channel_affine"):
        codes_of(per_channel, None)
