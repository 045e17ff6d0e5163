"""lucidq: linear quantization of neural-network tensors (the Python face of lucid::quantization).

The names are the C++ API's names (and Lucid's lucid.quantization's): QScheme with its
lowercase aliases, QDtype and the qint8 / quint8 / ... constants, QParams,
calculate_qparams, quantize, dequantize, fake_quantize, pack_codes, error_metrics.
`import lucid.quantization as Q` is the same module under Lucid's name.
quantize / dequantize / fake_quantize / calculate_qparams also take Lucid's
loose spellings (`Q.quantize(x, 0.02, 3, Q.quint8)` -> codes; `scale, zp =
Q.calculate_qparams(mn, mx, Q.per_tensor_affine, Q.quint8)`) and torch tensors
(lucidq/_functional.py). The PyTorch model workflow (QConfig, prepare, convert,
...) is lucidq.workflow, also reachable as lucidq.<name>; it imports torch on
first use, so `import lucidq` does not need torch.

Conventions of this module:
- Inputs are NumPy arrays. float32 and float16 are used as they are; float64 is
  rounded to float32 first; Python lists and numbers become float32; bfloat16
  travels as its bit patterns in a uint16 array with input_dtype="bfloat16".
  Other dtypes raise ValueError naming the dtype.
- Outputs: dequantize / fake_quantize give float32 arrays; QuantizedTensor.int_repr()
  gives int32 codes for every dtype; storage is the raw bytes (uint8).
- Wherever a QScheme or QDtype is expected its name works too
  ("per_channel_symmetric", "qint8[-127,127]").
- Bad input raises lucidq.Error, a subclass of ValueError, whose message names
  the argument, the value and what was expected.

>>> import lucidq as Q, numpy as np
>>> x = np.array([[191.6, -13.5, 728.6], [92.14, 295.5, -184], [0, 684.6, 245.5]], np.float32)
>>> q = Q.quantize(x, Q.QParams.per_tensor(3.5, -70, Q.qint8))
>>> q.int_repr()[0].tolist()
[-15, -74, 127]
"""

from ._qscheme import QScheme


def _extension_missing():
    """True when no compiled _lucidq module lies beside this file (a folder of Python files only)."""
    import importlib.machinery
    import pathlib

    folder = pathlib.Path(__file__).resolve().parent
    return not any((folder / f"_lucidq{s}").exists() for s in importlib.machinery.EXTENSION_SUFFIXES)


try:
    from . import _lucidq
except ImportError:
    if not _extension_missing():
        raise  # the module is there but does not load: keep the loader's reason
    raise ImportError(
        f"lucidq: the compiled module _lucidq is missing from {__path__[0]} (only the Python files "
        "are there). Build it from the repository root with scripts/demo.sh (or `cmake --preset "
        "release -DLUCIDQ_BUILD_PYTHON=ON && cmake --build build/release --target _lucidq`) and "
        "put build/release/python on PYTHONPATH, or install the package: README.md, \"Installing "
        "the Python package\""
    ) from None

# Every public name of the extension (QDtype, QParams, quantize, ..., and whatever a
# new bind_*.cpp registers) is a name of this package: no list to keep in step.
_native = [name for name in dir(_lucidq) if not name.startswith("_")]
globals().update({name: getattr(_lucidq, name) for name in _native})

__version__ = _lucidq.__version__

# Lucid's spellings of the arithmetic primitives, over the QParams forms above
# (lucidq/_functional.py: both forms are accepted, NumPy arrays and torch tensors).
from ._functional import calculate_qparams, dequantize, fake_quantize, quantize  # noqa: E402

# The pure-Python layers on the int8 GEMM (lucidq/nn.py).
from .nn import DynamicQuantizedLinear, QuantizedLinear  # noqa: E402

# The pure-Python layer on the weight-only low-bit GEMM (lucidq/weight_only.py).
from .weight_only import WeightOnlyLinear  # noqa: E402

from .checkpoint import (  # noqa: E402  (needs _lucidq's names first)
    dequantize_checkpoint,
    inspect_checkpoint,
    load_quantized_tensor,
    load_safetensors,
    quantize_checkpoint,
    save_safetensors,
)
from . import checkpoint as _checkpoint  # noqa: E402
from . import gguf  # noqa: E402,F401  (lucidq.gguf: GGUF files and ggml block types)

# Lowercase aliases: the very same objects as the enum members.
per_tensor_affine = QScheme.PER_TENSOR_AFFINE
per_tensor_symmetric = QScheme.PER_TENSOR_SYMMETRIC
per_channel_affine = QScheme.PER_CHANNEL_AFFINE
per_channel_symmetric = QScheme.PER_CHANNEL_SYMMETRIC

from ._workflow_names import TORCH_MISSING as _TORCH_MISSING  # noqa: E402
from ._workflow_names import WORKFLOW_NAMES as _WORKFLOW_NAMES  # noqa: E402


def _workflow_factory(cls, **keywords):
    """Lucid's `Observer.with_args(**kw)` on a C++ observer class: the factory of its torch-module
    twin in lucidq.workflow (same name and arguments), so QConfigs spelt with lucidq's names work."""
    from . import workflow

    return getattr(workflow, cls.__name__).with_args(**keywords)


# lucidq.MinMaxObserver & co. stay the C++ streaming observers; lucidq.workflow.MinMaxObserver
# is the torch module wrapping one. Both spell a QConfig factory the same way.
for _name in _WORKFLOW_NAMES:
    if _name in _native:
        getattr(_lucidq, _name).with_args = classmethod(_workflow_factory)


def __getattr__(name):
    """lucidq.QConfig, lucidq.prepare, ...: the torch workflow (lucidq.workflow), imported on first use."""
    if name in _WORKFLOW_NAMES:
        from . import workflow

        return getattr(workflow, name)
    raise AttributeError(f"module 'lucidq' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WORKFLOW_NAMES))


__all__ = sorted(
    _native
    + [
        "QScheme",
        "QuantizedLinear",
        "DynamicQuantizedLinear",
        "WeightOnlyLinear",
        "gguf",
        "per_tensor_affine",
        "per_tensor_symmetric",
        "per_channel_affine",
        "per_channel_symmetric",
    ]
    + [name for name in _checkpoint.__all__ if name not in _native]
)
