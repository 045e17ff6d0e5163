"""A CNN trained in the test on scikit-learn's digits (8x8 images), through PTQ and QAT to int8.

conv3x3(1→16)-bn-relu, conv3x3(16→32)-bn-relu, maxpool 2, linear(512→10). Fixed split
(70/30, stratified, random_state 0) and seeds; float training takes a few seconds. Limits
(points on the 540 test images; one image = 0.185): static int8 PTQ (BatchNorm folded by
fuse_modules) loses at most 0.5; QAT (fuse_modules_qat → ConvBnReLU2d, a few epochs, BatchNorm
statistics frozen for the last one, convert) ends within 0.3 of float. Accuracies are printed.
"""

import copy

import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
pytest.importorskip(
    "sklearn.datasets", reason="the digits data set comes with scikit-learn (python3-sklearn)"
)
from torch import nn  # noqa: E402

from digits import accuracy, load_split, report, train, train_float  # noqa: E402

import lucidq.workflow as LW  # noqa: E402
import lucidq.workflow.quantize as W  # noqa: E402
from lucidq.workflow import qat as LWQAT  # noqa: E402
from lucidq.workflow import quantized as LWQ  # noqa: E402

FUSE = [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"]]


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = W.QuantStub()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 4 * 4, 10)
        self.dequant = W.DeQuantStub()

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(self.quant(x))))
        x = self.pool(self.relu2(self.bn2(self.conv2(x))))
        return self.dequant(self.fc(x.flatten(1)))


@pytest.fixture(scope="module")
def data():
    return load_split((1, 8, 8))


@pytest.fixture(scope="module")
def trained(data):
    return train_float(DigitsCNN, data, epochs=15, lr=3e-3, name="CNN")


def test_ptq_int8(trained, data):
    model, float_score = trained
    fused = W.fuse_modules(copy.deepcopy(model).eval(), FUSE)
    fused.qconfig = LW.get_default_qconfig()
    prepared = W.prepare(fused)
    with torch.no_grad():
        prepared(data["train"][0])  # calibrate on the training images
    quantized = W.convert(prepared)
    assert isinstance(quantized.conv1, LWQ.ConvReLU2d)
    assert isinstance(quantized.pool, LWQ.MaxPool2d) and isinstance(quantized.fc, LWQ.Linear)
    assert report("CNN static int8 PTQ", accuracy(quantized, data), float_score, 0.5) <= 0.5


def test_qat_convbn_int8(trained, data):
    model, float_score = trained
    qat_model = W.fuse_modules_qat(copy.deepcopy(model).train(), FUSE)
    prepared = W.prepare_qat(qat_model, LW.get_default_qat_qconfig())
    assert isinstance(prepared.conv1, LWQAT.ConvBnReLU2d)
    train(prepared, data, epochs=4, lr=5e-4, seed=1,
          on_epoch=lambda m, epoch: epoch == 3 and m.apply(LWQAT.freeze_bn_stats))
    assert prepared.conv1.freeze_bn and not prepared.conv1.bn.training
    quantized = W.convert(prepared.eval())
    assert isinstance(quantized.conv2, LWQ.ConvReLU2d)
    assert report("CNN QAT int8 (ConvBnReLU2d)", accuracy(quantized, data), float_score,
                  0.3) <= 0.3
