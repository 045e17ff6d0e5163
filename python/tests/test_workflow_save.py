"""save_quantized / load_quantized: converted models as lucidq checkpoints (docs/formats.md, format 1)."""

import pathlib
import shutil
import subprocess

import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
from torch import nn  # noqa: E402

import lucidq as Q  # noqa: E402
import lucidq.workflow as LW  # noqa: E402
import lucidq.workflow.quantize as W  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = W.QuantStub()
        self.fc1 = nn.Linear(16, 32)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 64)
        self.act = nn.Hardswish()
        self.norm = nn.LayerNorm(64)  # left float: saved as float tensors
        self.fc3 = nn.Linear(64, 8)
        self.dequant = W.DeQuantStub()

    def forward(self, x):
        x = self.act(self.fc2(self.relu(self.fc1(self.quant(x)))))
        x = self.fc3(self.quant2(self.norm(self.dequant2(x))))
        return self.dequant(x)


def make(seed):
    torch.manual_seed(seed)
    model = Net()
    model.dequant2 = W.DeQuantStub()
    model.quant2 = W.QuantStub()
    with torch.no_grad():
        model.norm.weight.uniform_(0.5, 1.5)
    return W.fuse_modules(model.eval(), [["fc1", "relu"]])


def static_model(seed):
    mapping = LW.QConfigMapping().set_global(LW.get_default_qconfig()).set_module_name("norm", None)
    prepared = W.prepare(make(seed), mapping)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(3):
            prepared(torch.randn(16, 16, generator=generator))
    return W.convert(prepared)


@pytest.mark.parametrize("scheme", ["static", "dynamic", "weight_only"])
def test_saved_model_loads_back_with_the_same_outputs(tmp_path, seed, scheme):
    if scheme == "static":
        model = static_model(seed)
    elif scheme == "dynamic":
        model = W.quantize_dynamic(nn.Sequential(make(seed).fc2, nn.ReLU(), nn.Linear(64, 3)))
    else:
        model = W.quantize_weight_only(nn.Sequential(nn.Linear(64, 96), nn.GELU(),
                                                     nn.Linear(96, 8)), bits=4, group_size=32)
    path = tmp_path / f"{scheme}.safetensors"
    W.save_quantized(model, path)
    fresh = make(seed + 1) if scheme == "static" else (
        nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 3)) if scheme == "dynamic"
        else nn.Sequential(nn.Linear(64, 96), nn.GELU(), nn.Linear(96, 8)))
    loaded = W.load_quantized(path, fresh)
    width = {"static": 16, "dynamic": 32, "weight_only": 64}[scheme]
    x = torch.randn(5, width, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        assert torch.equal(model(x), loaded(x))

    report = Q.inspect_checkpoint(path)
    quantized = {t["name"]: t["quantized"] for t in report["tensors"] if t["quantized"]}
    print(scheme, {name: (str(q["qdtype"]), q["group_size"]) for name, q in quantized.items()})
    expected = {"static": ["fc1.weight", "fc2.weight", "fc3.weight"],
                "dynamic": ["0.weight", "2.weight"], "weight_only": ["0.weight", "2.weight"]}
    assert sorted(quantized) == expected[scheme]
    for info in quantized.values():
        if scheme == "weight_only":
            assert (info["qdtype"].name, info["group_size"], info["axis"]) == ("qint4", 32, 1)
        else:
            assert (info["qdtype"].name, info["group_size"], info["axis"]) == ("qint8", 0, 0)
    if scheme == "static":
        assert "norm.weight" in {t["name"] for t in report["tensors"]}


def test_lucidq_inspect_reads_it(tmp_path, seed):
    cli = REPO / "build" / "release" / "tools" / "lucidq" / "lucidq"
    if not cli.exists():
        cli = shutil.which("lucidq")
        if cli is None:
            pytest.skip("the lucidq CLI is not built (cmake --build build/release --target lucidq)")
    path = tmp_path / "model.safetensors"
    W.save_quantized(static_model(seed), path)
    done = subprocess.run([str(cli), "inspect", str(path)], capture_output=True, text=True)
    print(done.stdout)
    assert done.returncode == 0, done.stderr
    for name in ("fc1.weight", "fc2.weight", "fc3.weight", "norm.weight"):
        assert name in done.stdout


def test_load_names_a_module_the_model_lacks(tmp_path, seed):
    path = tmp_path / "model.safetensors"
    W.save_quantized(static_model(seed), path)
    with pytest.raises(ValueError, match="module 'quant'"):
        W.load_quantized(path, nn.Sequential(nn.Linear(2, 2)))
    with pytest.raises(ValueError, match="no lucidq quantized module"):
        W.save_quantized(nn.Sequential(nn.Linear(2, 2)), tmp_path / "float.safetensors")
