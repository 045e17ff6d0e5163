"""torchvision's quantizable models, as published, through lucidq's eager-mode workflow and torch.ao's.

Each model is built with weights=None and a fixed seed, its BatchNorm statistics set from
the calibration batches, fused with its own fuse_model(),
prepared with get_default_qconfig("onednn") (torch.ao's on one copy, lucidq's on another),
calibrated on the same batches and converted. Both quantized models must run, and lucidq's
SQNR against the float model must be at most 1 dB below torch.ao's. Inputs are small
(64 × 64, inception_v3 at 80 × 80) so the suite stays fast.
"""

import copy
import math

import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
tvq = pytest.importorskip(
    "torchvision.models.quantization", reason="needs torchvision (python3-torchvision)")
import torch.ao.quantization as tq  # noqa: E402

import lucidq  # noqa: E402
from lucidq.workflow import stubs as lucidq_stubs  # noqa: E402

if "onednn" not in torch.backends.quantized.supported_engines:
    pytest.skip("torch was built without the onednn engine", allow_module_level=True)

MODELS = {  # name: (constructor arguments, input side)
    "resnet18": ({}, 64),
    "resnet50": ({}, 64),
    "mobilenet_v2": ({}, 64),
    "mobilenet_v3_large": ({}, 64),
    "shufflenet_v2_x0_5": ({}, 64),
    "googlenet": ({"aux_logits": False, "init_weights": True}, 64),
    "inception_v3": ({"aux_logits": False, "init_weights": True}, 80),
}


def build(name, seed):
    arguments, side = MODELS[name]
    torch.manual_seed(seed)
    model = getattr(tvq, name)(weights=None, quantize=False, **arguments)
    generator = torch.Generator().manual_seed(seed + 1)
    batches = [torch.randn(2, 3, side, side, generator=generator) for _ in range(3)]
    test = torch.randn(4, 3, side, side, generator=generator)
    set_batch_norm_statistics(model, batches)
    model.eval().fuse_model()
    return model, batches, test


def set_batch_norm_statistics(model, batches):
    """BatchNorm statistics of the data instead of the initial 0 / 1, as a trained model has:
    with random weights and the initial statistics, activations of the deeper models vanish
    (MobileNetV2's logits are ~1e-9), which would make every SQNR meaningless."""
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None  # cumulative average over the batches
    model.train()
    with torch.no_grad():
        for batch in batches:
            model(batch)


def sqnr(reference, approximation):
    noise = (reference - approximation).double().pow(2).sum().item()
    signal = reference.double().pow(2).sum().item()
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def calibrate(model, batches):
    with torch.no_grad():
        for batch in batches:
            model(batch)


def torch_ao_output(model, batches, test):
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = "onednn"
    try:
        prepared = copy.deepcopy(model)
        prepared.qconfig = tq.get_default_qconfig("onednn")
        tq.prepare(prepared, inplace=True)
        calibrate(prepared, batches)
        converted = tq.convert(prepared)
        with torch.no_grad():
            return converted(test)
    finally:
        torch.backends.quantized.engine = previous


def lucidq_output(model, batches, test):
    prepared = lucidq.prepare(model, lucidq.get_default_qconfig("onednn"))
    calibrate(prepared, batches)
    converted = lucidq.convert(prepared)
    with torch.no_grad():
        return converted(test)


def with_lucidq_stubs(model):
    """The model with torch.ao's QuantStub / DeQuantStub replaced by lucidq's."""
    model = copy.deepcopy(model)
    for parent in model.modules():
        for child_name, child in list(parent.named_children()):
            if type(child) is tq.QuantStub:
                parent._modules[child_name] = lucidq_stubs.QuantStub()
            elif type(child) is tq.DeQuantStub:
                parent._modules[child_name] = lucidq_stubs.DeQuantStub()
    return model


@pytest.mark.parametrize("name", list(MODELS))
def test_quantizable_model_converts_within_1_db_of_torch_ao(name, seed):
    model, batches, test = build(name, seed)
    with torch.no_grad():
        reference = model(test)
    theirs = sqnr(reference, torch_ao_output(model, batches, test))
    ours = sqnr(reference, lucidq_output(model, batches, test))
    ours_stubs = sqnr(reference, lucidq_output(with_lucidq_stubs(model), batches, test))
    print(f"{name}: SQNR lucidq {ours:.2f} dB (lucidq stubs {ours_stubs:.2f} dB), "
          f"torch.ao {theirs:.2f} dB")
    assert ours >= theirs - 1.0
    assert ours_stubs >= theirs - 1.0
