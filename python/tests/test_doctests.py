"""Runs the examples in the docstrings of lucidq's pure-Python modules (doctest), so they stay true."""

import doctest
import importlib
import pkgutil

import pytest

import lucidq


def pure_python_modules():
    names = ["lucidq"]
    for info in pkgutil.iter_modules(lucidq.__path__):
        if not info.name.startswith("_lucidq"):
            names.append(f"lucidq.{info.name}")
    return names


@pytest.mark.parametrize("name", pure_python_modules())
def test_docstring_examples(name):
    if name == "lucidq.workflow":
        pytest.importorskip("torch", reason="lucidq.workflow needs torch (apt-get install python3-torch)")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    print(f"{name}: {result.attempted} examples")
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {name}"
