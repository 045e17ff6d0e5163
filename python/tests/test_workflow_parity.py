"""Parity of the model workflow with torch.ao eager mode 1.13: same model, data and qconfig.

Checked: the calibrated qparams of every observer (scale relative difference <= 1e-6, zero
points equal), the int8 weight codes, and every quantized Linear's output codes within 1 of
torch's on the qnnpack engine (each lucidq layer is fed the very input codes torch's layer got).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
from torch import nn  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402

import lucidq.workflow as LW  # noqa: E402
import lucidq.workflow.quantize as W  # noqa: E402

if "qnnpack" not in torch.backends.quantized.supported_engines:
    pytest.skip("torch was built without the qnnpack engine", allow_module_level=True)


class MLP(nn.Module):
    def __init__(self, quant, dequant):
        super().__init__()
        self.quant = quant()
        self.fc1 = nn.Linear(64, 128)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(128, 64)
        self.relu2 = nn.ReLU()
        self.fc3 = nn.Linear(64, 10)
        self.dequant = dequant()

    def forward(self, x):
        return self.dequant(self.fc3(self.relu2(self.fc2(self.relu1(self.fc1(self.quant(x)))))))


FUSE = [["fc1", "relu1"], ["fc2", "relu2"]]

# (lucidq qconfig, torch qconfig): the same observers on both sides
PRESETS = {
    "onednn": (lambda: LW.get_default_qconfig("onednn"), lambda: tq.get_default_qconfig("onednn")),
    "qnnpack": (lambda: LW.get_default_qconfig("qnnpack"),
                lambda: tq.get_default_qconfig("qnnpack")),
    "minmax": (lambda: LW.default_per_channel_qconfig, lambda: tq.default_per_channel_qconfig),
}



def calibrated_pair(seed, preset):
    """(lucidq-prepared, torch-prepared) copies of one float model after the same calibration."""
    torch.manual_seed(seed)
    ours = MLP(W.QuantStub, W.DeQuantStub).eval()
    theirs = MLP(tq.QuantStub, tq.DeQuantStub).eval()
    theirs.load_state_dict(ours.state_dict())
    ours_qc, theirs_qc = PRESETS[preset]
    ours.qconfig, theirs.qconfig = ours_qc(), theirs_qc()
    ours = W.prepare(W.fuse_modules(ours, FUSE))
    theirs = tq.prepare(tq.fuse_modules(theirs, FUSE))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(32, 64, generator=generator) * 2.0
            ours(x)
            theirs(x)
    return ours, theirs


def observers(model):
    return {name: m.activation_post_process for name, m in model.named_modules()
            if hasattr(m, "activation_post_process")}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_calibrated_qparams_equal_torch(seed, preset):
    ours, theirs = calibrated_pair(seed, preset)
    ours_obs, theirs_obs = observers(ours), observers(theirs)
    assert sorted(ours_obs) == sorted(theirs_obs) == ["fc1", "fc2", "fc3", "quant"]
    for name in sorted(ours_obs):
        s, z = ours_obs[name].calculate_qparams()
        ts, tz = theirs_obs[name].calculate_qparams()
        rel = float((s.double() - ts.double()).abs().max() / ts.double().abs().max())
        print(f"{preset} {name}: scale {float(s):.9g} vs torch {float(ts):.9g} (rel {rel:.2e}), "
              f"zero point {int(z)} vs {int(tz)}")
        assert rel <= 1e-6, name
        assert int(z) == int(tz), name


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_weight_codes_and_layer_outputs_match_torch(seed, preset, qnnpack):
    ours, theirs = calibrated_pair(seed, preset)
    ours, theirs = W.convert(ours), tq.convert(theirs)
    for name in ("fc1", "fc2", "fc3"):
        codes = getattr(ours, name).weight_codes()
        torch_codes = getattr(theirs, name).weight().int_repr().numpy()
        assert np.array_equal(codes, torch_codes), name

    seen = {}

    def capture(name):
        def hook(module, inputs, output):
            seen[name] = (inputs[0], output)
        return hook

    for name in ("fc1", "fc2", "fc3"):
        getattr(theirs, name).register_forward_hook(capture(name))
    generator = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(64, 64, generator=generator) * 2.0
    with torch.no_grad():
        theirs(x)
        for name in ("fc1", "fc2", "fc3"):
            torch_in, torch_out = seen[name]
            out = getattr(ours, name)(torch_in)  # torch's own quantized input codes
            assert (out.q_scale(), out.q_zero_point()) == (torch_out.q_scale(),
                                                           torch_out.q_zero_point())
            diff = (out.int_repr().int() - torch_out.int_repr().int()).abs()
            print(f"{preset} {name}: max code difference {int(diff.max())}, "
                  f"{float((diff > 0).float().mean()) * 100:.2f} % of outputs differ")
            assert int(diff.max()) <= 1, name
        # the input quantizer's codes are torch's exactly
        assert torch.equal(ours.quant(x).int_repr(), theirs.quant(x).int_repr())


def test_torch_observers_work_in_lucidq_prepare(seed, qnnpack):
    """torch's own QConfig objects and fused modules (nni.LinearReLU from torch's
    fuse_modules) drive lucidq's prepare / convert (the adapter path)."""
    torch.manual_seed(seed)
    ours = MLP(W.QuantStub, W.DeQuantStub).eval()
    theirs = MLP(tq.QuantStub, tq.DeQuantStub).eval()
    theirs.load_state_dict(ours.state_dict())
    ours.qconfig = theirs.qconfig = tq.get_default_qconfig("qnnpack")
    ours = W.prepare(tq.fuse_modules(ours, FUSE))
    theirs = tq.prepare(tq.fuse_modules(theirs, FUSE))
    x = torch.randn(128, 64, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        ours(x)
        theirs(x)
        ours, theirs = W.convert(ours), tq.convert(theirs)
        y, ty = ours(x), theirs(x)
    assert type(ours.fc1).__name__ == "LinearReLU" and type(ours.fc1).__module__.startswith(
        "lucidq.workflow.quantized")
    step = theirs.fc3.scale
    print(f"largest output difference {float((y - ty).abs().max()) / step:.2f} output steps")
    assert float((y - ty).abs().max()) <= 1.5 * step + 1e-7


def test_quantize_dynamic_weights_match_torch_per_channel(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(32, 48), nn.ReLU(), nn.Linear(48, 8))
    ours = W.quantize_dynamic(model, {nn.Linear: LW.per_channel_dynamic_qconfig})
    theirs = tq.quantize_dynamic(model, {nn.Linear: tq.per_channel_dynamic_qconfig})
    for index in (0, 2):
        codes = ours[index].layer.packed_weight.unpack()
        assert np.array_equal(codes, theirs[index].weight().int_repr().numpy())
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        y, ty, fy = ours(x), theirs(x), model(x)
    # both approximate the float model; lucidq quantizes each row with its own scale
    print(f"dynamic: |lucidq - float| {float((y - fy).abs().max()):.4f}, "
          f"|torch - float| {float((ty - fy).abs().max()):.4f}")
    assert float((y - fy).abs().max()) <= float((ty - fy).abs().max()) * 1.5 + 1e-3
