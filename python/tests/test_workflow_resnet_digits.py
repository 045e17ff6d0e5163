"""A small residual CNN written for torch.ao (its stubs, FloatFunctional.add_relu for the skips, BatchNorm, average pooling), trained on scikit-learn's digits, through lucidq's PTQ and QAT.

stem conv3x3(1→16)-bn-relu, two residual blocks (conv-bn-relu, conv-bn, add_relu with the
block input), AvgPool2d(2), flatten, linear(256→10). Limits (points on the 540 test images;
one image = 0.185): static int8 PTQ loses at most 0.5, QAT ends within 0.3 of float.
"""

import copy

import pytest

torch = pytest.importorskip("torch", reason="the model workflow needs torch (python3-torch)")
pytest.importorskip(
    "sklearn.datasets", reason="the digits data set comes with scikit-learn (python3-sklearn)"
)
from torch import nn  # noqa: E402
import torch.ao.nn.quantized as tnq  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402

from digits import accuracy, load_split, report, train, train_float  # noqa: E402

import lucidq  # noqa: E402
from lucidq.workflow import qat as LWQAT  # noqa: E402
from lucidq.workflow import quantized as LWQ  # noqa: E402


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.skip = tnq.FloatFunctional()

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        return self.skip.add_relu(self.bn2(self.conv2(y)), x)


class DigitsResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()
        self.block1 = Block(16)
        self.block2 = Block(16)
        self.pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.relu(self.bn(self.conv(self.quant(x))))
        x = self.pool(self.block2(self.block1(x)))
        return self.dequant(self.fc(torch.flatten(x, 1)))

    def fuse(self, fuse_fn):
        fuse_fn(self, [["conv", "bn", "relu"]], inplace=True)
        for block in (self.block1, self.block2):
            fuse_fn(block, [["conv1", "bn1", "relu"], ["conv2", "bn2"]], inplace=True)
        return self


@pytest.fixture(scope="module")
def data():
    return load_split((1, 8, 8))


@pytest.fixture(scope="module")
def trained(data):
    return train_float(DigitsResNet, data, epochs=5, lr=3e-3, name="ResNet")


def test_ptq_int8(trained, data):
    model, float_score = trained
    fused = copy.deepcopy(model).eval().fuse(tq.fuse_modules)
    prepared = lucidq.prepare(fused, lucidq.get_default_qconfig("onednn"))
    with torch.no_grad():
        prepared(data["train"][0])
    quantized = lucidq.convert(prepared)
    assert isinstance(quantized.block1.skip, LWQ.QFunctional)
    assert report("ResNet static int8 PTQ", accuracy(quantized, data), float_score,
                  0.5) <= 0.5


def test_qat_int8(trained, data):
    model, float_score = trained
    qat_model = copy.deepcopy(model).train().fuse(tq.fuse_modules_qat)
    prepared = lucidq.prepare_qat(qat_model, lucidq.get_default_qat_qconfig("onednn"))
    train(prepared, data, epochs=3, lr=5e-4, seed=1,
          on_epoch=lambda m, epoch: epoch == 2 and m.apply(LWQAT.freeze_bn_stats))
    quantized = lucidq.convert(prepared.eval())
    assert isinstance(quantized.block2.skip, LWQ.QFunctional)
    assert report("ResNet QAT int8", accuracy(quantized, data), float_score, 0.3) <= 0.3
