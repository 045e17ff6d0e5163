"""Quantize a PyTorch model: a float MLP trained on scikit-learn's digits, then int8 on lucidq's kernels.

Run from the repository root after building (Debian: python3-torch, python3-sklearn):
    PYTHONPATH=build/release/python /usr/bin/python3 python/examples/quantize_torch_model.py
"""

import os
import tempfile

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

import lucidq as Q


class MLP(nn.Module):
    """8x8 digit images -> 10 classes. QuantStub / DeQuantStub mark where activations
    become 8-bit codes and where they turn back into floats."""

    def __init__(self):
        super().__init__()
        self.quant, self.dequant = Q.QuantStub(), Q.DeQuantStub()
        self.fc1, self.relu1 = nn.Linear(64, 128), nn.ReLU()
        self.fc2, self.relu2 = nn.Linear(128, 64), nn.ReLU()
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.relu2(self.fc2(self.relu1(self.fc1(self.quant(x)))))
        return self.dequant(self.fc3(x))


# 1. Train a float model (about a second).
x, y = load_digits(return_X_y=True)
x_train, x_test, y_train, y_test = (torch.tensor(a) for a in train_test_split(
    (x / 16).astype("float32"), y, test_size=0.3, random_state=0, stratify=y))
torch.manual_seed(0)
model = MLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(40):
    for batch in torch.randperm(len(x_train)).split(64):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x_train[batch]), y_train[batch]).backward()
        optimizer.step()
model.eval()


def accuracy(m):
    with torch.no_grad():
        return 100 * (m(x_test).argmax(1) == y_test).float().mean().item()


# 2. Post-training static quantization, as torch.ao.quantization: fuse, prepare, calibrate, convert.
FUSE = [["fc1", "relu1"], ["fc2", "relu2"]]
prepared = Q.prepare(Q.fuse_modules(model, FUSE), Q.get_default_qconfig())  # output observers
with torch.no_grad():
    prepared(x_train)  # calibration: the observers see the training images
quantized = Q.convert(prepared)  # int8 weights, uint8 activations, integer GEMMs
print(quantized.fc1)
print(f"accuracy: float {accuracy(model):.2f} %, int8 {accuracy(quantized):.2f} %")

# 3. Dynamic (int8 weights, activations quantized per row) and weight-only int4 need no calibration.
dynamic = Q.quantize_dynamic(model, {nn.Linear})
int4 = Q.quantize_weight_only(model, bits=4, group_size=32)
print(f"accuracy: dynamic {accuracy(dynamic):.2f} %, weight-only int4 {accuracy(int4):.2f} %")

# 4. Save as a lucidq checkpoint (`lucidq inspect` reads it) and load it into a fresh model.
path = os.path.join(tempfile.mkdtemp(), "digits.int8.safetensors")
Q.save_quantized(quantized, path)
loaded = Q.load_quantized(path, Q.fuse_modules(MLP().eval(), FUSE))
with torch.no_grad():
    print("reloaded model gives the same outputs:", torch.equal(loaded(x_test), quantized(x_test)))
