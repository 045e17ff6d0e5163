"""python/examples/quantize_torch_model.py runs, and the README's "Quantize a PyTorch model" shows it verbatim."""

import pathlib
import re

import pytest

pytest.importorskip("torch", reason="the example needs torch (python3-torch)")
pytest.importorskip("sklearn", reason="the example trains on scikit-learn's digits (python3-sklearn)")

from test_examples import EXAMPLES, run_example  # noqa: E402

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_quantize_torch_model_example(module_pythonpath):
    lines = run_example("quantize_torch_model.py", module_pythonpath)
    print("\n".join(lines))
    assert lines[0].startswith("LinearReLU(in_features=64, out_features=128, scale=")
    float_score, int8 = map(float, re.fullmatch(
        r"accuracy: float ([\d.]+) %, int8 ([\d.]+) %", lines[1]).groups())
    dynamic, int4 = map(float, re.fullmatch(
        r"accuracy: dynamic ([\d.]+) %, weight-only int4 ([\d.]+) %", lines[2]).groups())
    assert float_score >= 95 and float_score - int8 <= 0.5
    assert float_score - dynamic <= 0.3 and float_score - int4 <= 2
    assert lines[3] == "reloaded model gives the same outputs: True"
    assert len(lines) == 4


def test_readme_shows_the_example():
    text = README.read_text()
    section = text.split("## Quantize a PyTorch model", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert block == (EXAMPLES / "quantize_torch_model.py").read_text()
    # it is the README's first Python example
    assert text.index("```python") > text.index("## Quantize a PyTorch model")


def test_quantize_torchvision_example(module_pythonpath):
    pytest.importorskip("torchvision", reason="the example needs python3-torchvision")
    lines = run_example("quantize_torchvision.py", module_pythonpath)
    print("\n".join(lines))
    assert lines[0] == "lucidq.workflow.quantized.conv ConvReLU2d"
    sqnr = float(re.fullmatch(r"SQNR of the int8 model against float: ([\d.]+) dB",
                              lines[1]).group(1))
    assert sqnr >= 15
    assert len(lines) == 2


def test_readme_shows_the_torchvision_example():
    section = README.read_text().split("### torchvision's models as published", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert block == (EXAMPLES / "quantize_torchvision.py").read_text()
