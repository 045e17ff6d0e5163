"""pytest setup for the lucidq Python suite: finds the built module and provides seeded RNGs.

The module is looked up, in order, in $LUCIDQ_PYTHONPATH, on the existing
sys.path (e.g. PYTHONPATH), and in <repo>/build/release/python. Randomised tests
take the `rng` fixture: seeded from $LUCIDQ_SEED (default DEFAULT_SEED) and
printing the seed, which pytest shows when the test fails.
"""

import importlib
import os
import pathlib
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_BUILD_PYTHON = REPO / "build" / "release" / "python"
DEFAULT_SEED = 20260902


def _import_lucidq():
    explicit = os.environ.get("LUCIDQ_PYTHONPATH")
    if explicit:
        sys.path.insert(0, explicit)
    try:
        importlib.import_module("lucidq")
        return
    except ImportError as first_error:
        if explicit:
            raise ImportError(
                f"lucidq: cannot import the module from LUCIDQ_PYTHONPATH={explicit} "
                f"({first_error}). Build it: cmake --preset release && "
                "cmake --build build/release"
            ) from first_error
    sys.path.insert(0, str(DEFAULT_BUILD_PYTHON))
    try:
        importlib.import_module("lucidq")
    except ImportError as error:
        raise ImportError(
            f"lucidq: the Python module is not built ({error}). Looked on sys.path and in "
            f"{DEFAULT_BUILD_PYTHON}. Build it with: cmake --preset release && "
            "cmake --build build/release (LUCIDQ_BUILD_PYTHON=ON, the default), or point "
            "LUCIDQ_PYTHONPATH at <build>/python. Run the tests with /usr/bin/python3."
        ) from error


_import_lucidq()


@pytest.fixture
def seed():
    """The run's random seed ($LUCIDQ_SEED or DEFAULT_SEED), printed for reproduction."""
    value = int(os.environ.get("LUCIDQ_SEED", DEFAULT_SEED))
    print(f"seed={value} (reproduce with LUCIDQ_SEED={value})")
    return value


@pytest.fixture
def rng(seed):
    """A NumPy Generator seeded with `seed`."""
    return np.random.default_rng(seed)


@pytest.fixture
def qnnpack():
    """torch's quantized engine set to qnnpack for the test (restored after)."""
    import torch

    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = "qnnpack"
    yield
    torch.backends.quantized.engine = before


@pytest.fixture
def module_pythonpath():
    """The folder holding the imported lucidq package (for subprocesses)."""
    import lucidq

    return str(pathlib.Path(lucidq.__file__).resolve().parent.parent)
