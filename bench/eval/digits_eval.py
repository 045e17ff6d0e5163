"""The digits MLP beside the LM: test accuracy of each weight method (python/tests/digits.py's split and training)."""

import os
import sys
import time

import torch
from torch import nn

import methods

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python", "tests"))
import digits  # noqa: E402

SEED, EPOCHS, LR = 0, 30, 1e-3


class DigitsMLP(nn.Sequential):
    """64 -> 256 -> 256 -> 10 with ReLUs; awq_groups() folds each hidden Linear's scales into the
    Linear before it (through the ReLU); the first Linear's input has nothing to fold into."""

    def __init__(self):
        super().__init__(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))

    def awq_groups(self):
        return [(None, ["0"]), ("0", ["2"]), ("2", ["4"])]


def evaluate(method_names, settings, fake_quant, log=print):
    """{"float": accuracy, "rows": [{"setting", "method", "accuracy"}]} in percent."""
    start = time.time()
    data = digits.load_split()
    torch.manual_seed(SEED)
    model = digits.train(DigitsMLP(), data, EPOCHS, LR, SEED).eval()
    float_acc = digits.accuracy(model, data)
    x_train = data["train"][0]
    calibration = [x_train[i:i + 128] for i in range(0, len(x_train), 128)]
    stats = methods.float_statistics(model, calibration)
    rows = []
    for setting in settings:
        for method in method_names:
            qmodel, results = methods.quantize_model(model, method, setting, calibration, stats)
            if not fake_quant:
                methods.to_weight_only_modules(qmodel, results)
            rows.append({"setting": setting, "method": method,
                         "accuracy": digits.accuracy(qmodel, data)})
    log(f"digits MLP: float {float_acc:.2f} %, {len(rows)} quantized models in "
        f"{time.time() - start:.0f} s")
    return {"float": float_acc, "rows": rows, "test_samples": len(data["test"][1])}


def markdown_table(result):
    settings = list(dict.fromkeys(r["setting"] for r in result["rows"]))
    names = list(dict.fromkeys(r["method"] for r in result["rows"]))
    acc = {(r["setting"], r["method"]): r["accuracy"] for r in result["rows"]}
    lines = [f"## Digits MLP test accuracy, % ({result['test_samples']} test images; float "
             f"{result['float']:.2f} %)", "", "| setting | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for s in settings:
        lines.append(f"| {s} | " + " | ".join(f"{acc[(s, m)]:.2f}" for m in names) + " |")
    return "\n".join(lines)
