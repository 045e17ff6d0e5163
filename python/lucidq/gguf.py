"""lucidq.gguf: GGUF files (llama.cpp's format) and ggml's block types, from Python.

Read a file (metadata with its GGUF types, tensor infos, tensors decoded exactly as ggml's
``to_float`` does), write one (ggml's bytes: the KV order given, alignment, padding),
quantize a NumPy array to a ggml block type or decode one (lucidq.ggml_quantize /
ggml_dequantize, with the rows kept as rows), and run the whole-file job of
``lucidq quantize --type PRESET`` (llama-quantize's presets and mixture).

>>> import numpy as np
>>> from lucidq import gguf
>>> x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32)
>>> blocks = gguf.quantize(x, "q8_0")
>>> blocks.shape, blocks.dtype.name          # 2 rows of one 34-byte block
((2, 34), 'uint8')
>>> float(abs(gguf.dequantize(blocks, "q8_0", x.shape) - x).max()) < 0.005
True

Shapes are PyTorch's (outermost first): a GGUF tensor of ne = [256, 4] is shape (4, 256);
the last axis is the row the blocks run along, so its length must be a multiple of the
type's block (32, or 256 for the K-quants). Bad input raises lucidq.Error (a ValueError)
naming the file, key or tensor.
"""

import json
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from . import _lucidq

__all__ = ["Value", "TensorInfo", "GgufFile", "read", "write", "quantize", "dequantize",
           "quantize_file", "dequantize_file", "PRESETS"]

#: llama-quantize's presets that quantize_file accepts (aliases Q3_K, Q4_K, Q5_K too).
PRESETS = ("Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M", "Q4_K_S", "Q4_1",
           "Q4_0", "Q3_K_L", "Q3_K_M", "Q3_K_S", "Q2_K", "IQ4_NL", "F16", "BF16", "F32")

_PLAIN = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i8": np.int8,
          "i16": np.int16, "i32": np.int32, "i64": np.int64}


@dataclass(frozen=True)
class Value:
    """A metadata value with an explicit GGUF type: ``Value("u32", 4096)``,
    ``Value("f32", [0.5, 1.0])`` (an array of f32). Types: u8, i8, u16, i16, u32, i32, u64,
    i64, f32, f64, bool, str."""
    type: str
    value: object


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a GGUF file: its ggml type name ("q4_K"), PyTorch shape, byte offset in
    the data section and size in bytes."""
    name: str
    type: str
    shape: tuple
    offset: int
    nbytes: int

    @property
    def bits_per_weight(self):
        count = int(np.prod(self.shape, dtype=np.int64))
        return 8.0 * self.nbytes / count if count else 0.0


@dataclass
class GgufFile:
    """What read() returns. ``metadata`` maps keys to Python values in file order,
    ``value_types`` maps them to their GGUF type (an array's is its element type, with
    ``arrays`` naming the array keys), ``tensors`` maps names to TensorInfo in file order."""
    path: str
    version: int
    alignment: int
    data_offset: int
    metadata: dict = field(default_factory=dict)
    value_types: dict = field(default_factory=dict)
    arrays: frozenset = frozenset()
    tensors: dict = field(default_factory=dict)

    def tensor(self, name):
        """The tensor as NumPy: float32 decoded with ggml's to_float for block, F16 and BF16
        types; F32, F64 and the integer types as they are stored."""
        info = self._info(name)
        if info.type in _PLAIN and info.type != "f16":
            raw = _lucidq._gguf_tensor(self.path, name, False)
            return raw.view(_PLAIN[info.type]).reshape(info.shape)
        return _lucidq._gguf_tensor(self.path, name, True)

    def raw(self, name):
        """The tensor's stored bytes as a uint8 array (ggml blocks for quantized types)."""
        self._info(name)
        return _lucidq._gguf_tensor(self.path, name, False)

    def metadata_values(self):
        """The metadata as {key: Value(type, value)}, ready to pass to write()."""
        return {k: Value(self.value_types[k], v) for k, v in self.metadata.items()}

    def _info(self, name):
        if name not in self.tensors:
            raise _lucidq.Error(f"{self.path}: no tensor named {name!r} (the file holds "
                                f"{len(self.tensors)} tensors)")
        return self.tensors[name]


def read(path):
    """Reads and validates the GGUF file at `path` (memory-mapped; tensors are read on
    demand with GgufFile.tensor / raw)."""
    path = os.fspath(path)
    version, alignment, data_offset, metadata, tensors = _lucidq._gguf_read(path)
    out = GgufFile(path, version, alignment, data_offset)
    arrays = set()
    for key, type_name, is_array, value in metadata:
        out.metadata[key] = value
        out.value_types[key] = type_name
        if is_array:
            arrays.add(key)
    out.arrays = frozenset(arrays)
    for name, type_name, shape, offset, nbytes in tensors:
        out.tensors[name] = TensorInfo(name, type_name, tuple(shape), offset, nbytes)
    return out


def _infer_type(key, value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            return "i32"
        return "i64" if value < 2**63 else "u64"
    if isinstance(value, float):
        return "f32"
    if isinstance(value, str):
        return "str"
    raise _lucidq.Error(f"metadata[{key}]: {value!r} has no GGUF type (expected bool, int, "
                        "float, str, a list of one of them, or lucidq.gguf.Value)")


def _metadata_entries(metadata):
    entries = []
    for key, value in (metadata or {}).items():
        if not isinstance(key, str):
            raise _lucidq.Error(f"metadata: key {key!r} is not a str")
        type_name = value.type if isinstance(value, Value) else None
        raw = value.value if isinstance(value, Value) else value
        if isinstance(raw, np.generic):
            raw = raw.item()
        is_array = isinstance(raw, (list, tuple, np.ndarray))
        if is_array:
            items = [v.item() if isinstance(v, np.generic) else v for v in raw]
            if type_name is None:
                if not items:
                    raise _lucidq.Error(f"metadata[{key}]: an empty list needs "
                                        "lucidq.gguf.Value(type, []) to name its type")
                type_name = _infer_type(key, items[0])
            raw = items
        elif type_name is None:
            type_name = _infer_type(key, raw)
        entries.append((key, type_name, is_array, raw))
    return entries


def write(path, tensors, *, metadata=None, types=None, overwrite=False):
    """Writes a GGUF v3 file atomically (no output on error; an existing file is replaced only
    with overwrite=True).

    `tensors` maps names to NumPy arrays, written in that order. float32 arrays are stored as
    F32 unless `types` names a ggml type for them ("q4_K", "f16", ...), which quantizes them
    (gguf.quantize); float16, float64 and int8/16/32/64 arrays are stored as F16, F64 and
    I8..I64. A uint8 array with a `types` entry is taken as already encoded ggml blocks of
    shape (rows, row bytes); give its logical shape as ``types[name] = (type, shape)``.

    `metadata` maps keys to values in order: bool, int (i32, or i64 when it does not fit),
    float (f32), str, a list of one of those (an array), or Value(type, value) for an exact
    type; "general.alignment" (a u32 power of two) sets the padding.
    """
    types = dict(types or {})
    names, type_names, shapes, blobs = [], [], [], []
    for name, array in tensors.items():
        spec = types.pop(name, None)
        shape = None
        if isinstance(spec, tuple):
            spec, shape = spec
        array = np.asarray(array)
        if spec is not None and array.dtype == np.uint8 and shape is not None:
            blob = np.ascontiguousarray(array)
        elif spec is not None and spec.lower() not in ("f32",):
            if array.dtype not in (np.float32, np.float16, np.float64):
                raise _lucidq.Error(f"tensors[{name!r}]: dtype {array.dtype} cannot be encoded "
                                    f"as {spec} (expected a float array)")
            shape = array.shape
            blob = quantize(array, spec)
        else:
            dtype_names = {np.dtype(v): k for k, v in _PLAIN.items()}
            if array.dtype not in dtype_names:
                raise _lucidq.Error(f"tensors[{name!r}]: dtype {array.dtype} has no GGUF type "
                                    "(expected float32, float16, float64 or int8..int64)")
            spec = dtype_names[array.dtype]
            shape = array.shape
            blob = np.ascontiguousarray(array)
        names.append(name)
        type_names.append(spec)
        shapes.append([int(d) for d in shape])
        blobs.append(blob.reshape(-1).view(np.uint8))
    if types:
        raise _lucidq.Error(f"types: {sorted(types)} are not among the tensors")
    _lucidq._gguf_write(os.fspath(path), _metadata_entries(metadata), names, type_names, shapes,
                        blobs, overwrite)


def quantize(x, type, imatrix=None):
    """Encodes the rows of `x` (float32; float16 / float64 are converted; the last axis is
    the row) as ggml blocks of `type`: a uint8 array of shape (rows, row bytes), exactly
    ggml_quantize_chunk's bytes. `imatrix`: one importance weight per column (llama.cpp's
    imatrix entry), for the types that use one."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if x.ndim == 0:
        raise _lucidq.Error("x: a scalar (expected rows of values, ndim >= 1)")
    w = None if imatrix is None else np.asarray(imatrix, np.float32).ravel()
    blocks = _lucidq.ggml_quantize(x, type, w)
    rows = x.size // x.shape[-1] if x.shape[-1] else 0
    return blocks.reshape(rows, -1) if rows else blocks.reshape(0, 0)


def dequantize(data, type, shape):
    """Decodes ggml blocks of `type` (uint8, as quantize returns them or a GGUF file stores
    them) into a float32 array of `shape`, exactly as ggml's to_float does."""
    data = np.ascontiguousarray(np.asarray(data, dtype=np.uint8)).reshape(-1)
    return _lucidq.ggml_dequantize(data, type, [int(d) for d in shape])


def quantize_file(input, output, *, type="Q8_0", imatrix=None, pure=False,
                  leave_output_tensor=False, output_tensor_type=None, token_embedding_type=None,
                  recipe=None, metadata=None, allow_requantize=False, overwrite=False,
                  progress=None):
    """``lucidq quantize INPUT -o OUTPUT --type TYPE``: a GGUF (or safetensors) file into a GGUF
    file with llama-quantize's preset `type` and per-tensor mixture, an optional llama.cpp
    imatrix file (or lucidq calibration statistics, their per-column mean squares), its flags, recipe rules naming "ggml_type" (first match wins), and, for a
    safetensors input, `metadata` to write (see write()). Returns the report as a dict
    (per tensor: ggml types, bytes, bits per weight, MSE, SQNR, max error)."""
    recipe_json = recipe_path = None
    if isinstance(recipe, (dict, list)):
        recipe_json = json.dumps(recipe if isinstance(recipe, dict) else {"rules": recipe})
    elif recipe is not None:
        recipe_path = os.fspath(recipe)
    if progress is True:
        def progress(done, total, *_):
            print(f"\r{done}/{total} tensors", end="" if done < total else "\n",
                  file=sys.stderr)
    text = _lucidq._gguf_quantize_file(
        os.fspath(input), os.fspath(output), type,
        None if imatrix is None else os.fspath(imatrix), pure, leave_output_tensor,
        output_tensor_type, token_embedding_type, recipe_json, recipe_path,
        _metadata_entries(metadata), allow_requantize, overwrite, progress)
    return json.loads(text)


def dequantize_file(input, output, *, overwrite=False):
    """Decodes every tensor of the GGUF file `input` to float32 (as ggml's to_float) into the
    safetensors file `output`; integer tensors are copied. Returns (decoded, copied) counts."""
    return _lucidq._gguf_dequantize_file(os.fspath(input), os.fspath(output), overwrite)
