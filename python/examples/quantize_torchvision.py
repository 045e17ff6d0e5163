"""Quantize torchvision's quantizable ResNet-18 exactly as torch.ao's eager-mode tutorial does, on lucidq.

Run from the repository root after building (Debian: python3-torch, python3-torchvision):
    PYTHONPATH=build/release/python /usr/bin/python3 python/examples/quantize_torchvision.py
"""

import torch
from torchvision.models.quantization import resnet18

import lucidq as Q

# The model as published, with torch.ao's QuantStub, DeQuantStub and FloatFunctional skips
# (random weights here: pass weights="DEFAULT" where the pretrained file can be downloaded).
torch.manual_seed(0)
model = resnet18(weights=None, quantize=False).eval()
model.fuse_model()  # torch.ao's Conv+BN+ReLU fusion

prepared = Q.prepare(model, Q.get_default_qconfig("onednn"))  # torch.ao's onednn observers
with torch.no_grad():
    for _ in range(4):  # calibration: use a few hundred real images
        prepared(torch.randn(2, 3, 112, 112))
quantized = Q.convert(prepared)  # lucidq's integer Conv2d, Linear and add_relu

images = torch.randn(4, 3, 112, 112)
with torch.no_grad():
    reference, output = model(images), quantized(images)
sqnr = 10 * torch.log10(reference.pow(2).sum() / (reference - output).pow(2).sum())
print(type(quantized.layer1[0].conv1).__module__, type(quantized.layer1[0].conv1).__name__)
print(f"SQNR of the int8 model against float: {sqnr:.1f} dB")
