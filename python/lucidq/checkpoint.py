"""The checkpoint job from Python: quantize a safetensors file, turn it back into floats, look inside.

The same streaming, atomic C++ code as `lucidq quantize` / `dequantize` / `inspect`
(docs/cli.md, docs/formats.md): one tensor at a time from the memory-mapped input,
written under a temporary name and renamed at the end, so an error or Ctrl-C never
leaves a partial output.

>>> import lucidq, numpy as np, os, tempfile
>>> d = tempfile.mkdtemp()
>>> rng = np.random.default_rng(0)
>>> lucidq.save_safetensors(os.path.join(d, "model.safetensors"), {
...     "fc.weight": rng.normal(size=(64, 32)).astype(np.float32),
...     "fc.bias": np.zeros(64, np.float32)})
>>> report = lucidq.quantize_checkpoint(os.path.join(d, "model.safetensors"),
...                                     os.path.join(d, "model.q8.safetensors"))
>>> [(t["name"], t["action"]) for t in report["tensors"]]
[('fc.weight', 'quantized'), ('fc.bias', 'kept')]
>>> w = lucidq.load_quantized_tensor(os.path.join(d, "model.q8.safetensors"), "fc.weight")
>>> w.qparams.qscheme, w.shape
(<QScheme.PER_CHANNEL_SYMMETRIC: 3>, (64, 32))
"""

import json
import os

from . import _lucidq

__all__ = [
    "quantize_checkpoint",
    "dequantize_checkpoint",
    "inspect_checkpoint",
    "load_quantized_tensor",
    "load_safetensors",
    "save_safetensors",
]


def load_quantized_tensor(path, name):
    """The quantized tensor `name` of the lucidq checkpoint at `path`, as a QuantizedTensor.

    Codes and QParams exactly as stored (docs/formats.md). Raises lucidq.Error naming
    the file and tensor when the file is not a valid lucidq checkpoint or holds no
    quantized tensor of that name.
    """
    return _lucidq._load_quantized_tensor(os.fspath(path), name)


def _patterns(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    patterns = list(value)
    if not all(isinstance(p, str) for p in patterns):
        raise _lucidq.Error(f"{what}: expected a glob pattern or a list of them, got {value!r}")
    return patterns


def _progress(progress):
    """None, True (a one-line progress report on stderr) or a callable."""
    if progress is None or progress is False:
        return None
    if progress is True:
        import sys

        def report(done, total, bytes_done, bytes_total, tensor):
            end = "\n" if done == total else ""
            sys.stderr.write(f"\r{done}/{total} tensors, {bytes_done / 2**20:.1f} of "
                             f"{bytes_total / 2**20:.1f} MiB  {tensor[:40]:<40}{end}")
            sys.stderr.flush()

        return report
    if not callable(progress):
        raise _lucidq.Error(f"progress: expected None, True or a callable, got {progress!r}")
    return progress


def quantize_checkpoint(input, output, *, scheme="per_channel_symmetric", dtype="qint8",
                        group_size=0, axis=None, include=None, exclude=None, recipe=None,
                        overwrite=False, strict=False, progress=None):
    """Quantize the safetensors file `input` into the lucidq checkpoint `output`.

    Which tensors, and how, follows `lucidq quantize`: `exclude` globs are kept as
    they are; then the `recipe` rules (a dict / list in the recipe format of
    docs/formats.md, JSON text, or a path to a .json file), first match wins; then
    the default rule, which quantizes floating-point tensors of 2 or more
    dimensions (narrowed by `include` globs) with `scheme`, `dtype`, `axis`
    (default 0, or -1 with a group size) and `group_size` (0: per channel).
    Everything else is copied bit for bit.

    `progress` may be True (a line on stderr) or a callable
    ``progress(tensors_done, tensor_count, bytes_done, bytes_total, tensor_name)``;
    an exception it raises (or Ctrl-C) aborts the job and leaves no output.

    Returns the report as a dict (docs/formats.md, "Quantization report"): per
    tensor the settings, bytes, MSE, SQNR, max error, saturation and non-finite
    count, and the totals. Raises lucidq.Error naming the file and tensor on bad
    input; an existing `output` is replaced only with overwrite=True.
    """
    recipe_json = recipe_path = None
    if isinstance(recipe, (dict, list)):
        recipe_json = json.dumps(recipe if isinstance(recipe, dict) else {"rules": recipe})
    elif isinstance(recipe, str) and recipe.lstrip().startswith("{"):
        recipe_json = recipe
    elif recipe is not None:
        recipe_path = os.fspath(recipe)
    if axis is None:
        axis = -1 if group_size else 0
    text = _lucidq._quantize_checkpoint(
        os.fspath(input), os.fspath(output), scheme, dtype, axis, group_size,
        _patterns(include, "include"), _patterns(exclude, "exclude"), recipe_json, recipe_path,
        overwrite, strict, _progress(progress))
    return json.loads(text)


def dequantize_checkpoint(input, output, *, dtype="float32", overwrite=False, progress=None):
    """Turn the lucidq checkpoint `input` back into a plain safetensors file `output`.

    Each quantized tensor W becomes scale * (code - zero_point) in `dtype`
    ("float32", "float16", "bfloat16", or None for each tensor's original dtype),
    with its original shape; other tensors and the user's metadata are copied.
    Returns {"dequantized", "copied", "input_bytes", "output_bytes"}.
    """
    return _lucidq._dequantize_checkpoint(os.fspath(input), os.fspath(output), dtype, overwrite,
                                          _progress(progress))


def inspect_checkpoint(path):
    """What a safetensors file or lucidq checkpoint holds, without reading tensor data.

    Returns {"format_version": str or None, "metadata": {...}, "tensors": [{"name",
    "dtype" (stored, e.g. "I8"), "shape" (logical), "nbytes" (with scale and zero
    point), "quantized": None or {"qscheme", "qdtype", "axis", "group_size",
    "original_dtype"}}]}. The file is validated first (lucidq.Error on bad input).
    """
    return _lucidq._inspect_checkpoint(os.fspath(path))


def load_safetensors(path, names=None, *, with_metadata=False):
    """The tensors of a safetensors file as {name: NumPy array} (copies, in file order).

    bfloat16 tensors come back as uint16 arrays of their bit patterns (NumPy has no
    bfloat16); a lucidq checkpoint gives its stored tensors (codes, W.scale, ...) —
    use load_quantized_tensor for a QuantizedTensor. `names` picks some tensors.
    With with_metadata=True returns (tensors, metadata).
    """
    tensors, metadata = _lucidq._load_safetensors(
        os.fspath(path), None if names is None else list(names))
    return (tensors, metadata) if with_metadata else tensors


def save_safetensors(path, tensors, *, metadata=None, bfloat16=(), overwrite=False):
    """Write {name: array} as a safetensors file, atomically (temporary file, then rename).

    Arrays keep their dtype (float32/16/64, int8 ... uint64, bool); the names in
    `bfloat16` hold uint16 bit patterns to store as BF16. `metadata` is a
    {str: str} dict for __metadata__. An existing file is replaced only with
    overwrite=True; on any error nothing is left behind.
    """
    import numpy as np

    names, types, arrays = [], [], []
    bf16 = set(bfloat16)
    for name, value in tensors.items():
        array = np.asarray(value, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        if name in bf16:
            if array.dtype != np.uint16:
                raise _lucidq.Error(f"tensors[{name!r}]: listed in bfloat16, so expected a uint16 "
                                    f"array of bit patterns, got {array.dtype}")
            dtype = "bfloat16"
            bf16.discard(name)
        else:
            dtype = array.dtype.name
        names.append(name)
        types.append(dtype)
        arrays.append(array)
    if bf16:
        raise _lucidq.Error(f"bfloat16: {sorted(bf16)} are not among the tensors")
    _lucidq._save_safetensors(os.fspath(path), names, types, arrays, dict(metadata or {}),
                              overwrite)
