#!/usr/bin/python3
"""Writes the seed corpus for fuzz_gguf: small valid and invalid GGUF files, built field by field.

Usage: /usr/bin/python3 fuzz/make_gguf_corpus.py OUTPUT_DIR
Deterministic; scripts/run-fuzz.sh runs it into a temporary directory (nothing is committed).
"""
import pathlib
import struct
import sys

# (GGUF value type id, struct format) of the scalar types.
SCALARS = {"u8": (0, "<B"), "i8": (1, "<b"), "u16": (2, "<H"), "i16": (3, "<h"),
           "u32": (4, "<I"), "i32": (5, "<i"), "f32": (6, "<f"), "bool": (7, "<B"),
           "u64": (10, "<Q"), "i64": (11, "<q"), "f64": (12, "<d")}
# ggml type id -> (block size, bytes per block) for the types used here.
TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 8: (32, 34), 12: (256, 144), 30: (1, 2)}


def gstr(text):
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def kv_scalar(key, kind, value):
    type_id, fmt = SCALARS[kind]
    return gstr(key) + struct.pack("<I", type_id) + struct.pack(fmt, value)


def kv_string(key, value):
    return gstr(key) + struct.pack("<I", 8) + gstr(value)


def kv_array(key, kind, values):
    if kind == "str":
        body = b"".join(gstr(v) for v in values)
        type_id = 8
    else:
        type_id, fmt = SCALARS[kind]
        body = b"".join(struct.pack(fmt, v) for v in values)
    return gstr(key) + struct.pack("<IIQ", 9, type_id, len(values)) + body


def pad(data, alignment):
    return data + b"\0" * ((alignment - len(data) % alignment) % alignment)


def gguf(kvs, tensors, alignment=32, version=3):
    """tensors: list of (name, ne, ggml type id); data is a byte pattern per tensor."""
    head = b"GGUF" + struct.pack("<Iqq", version, len(tensors), len(kvs)) + b"".join(kvs)
    infos, data, offset = b"", b"", 0
    for index, (name, ne, type_id) in enumerate(tensors):
        block, size = TYPES[type_id]
        count = 1
        for d in ne:
            count *= d
        nbytes = count // block * size
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", d) for d in ne)
        infos += struct.pack("<IQ", type_id, offset)
        data += pad(bytes((index * 29 + i) & 0xFF for i in range(nbytes)), alignment)
        offset += (nbytes + alignment - 1) // alignment * alignment
    return pad(head + infos, alignment) + data


def seeds():
    every_type = [kv_string("general.architecture", "llama"),
                  kv_scalar("k.u8", "u8", 200), kv_scalar("k.i8", "i8", -5),
                  kv_scalar("k.u16", "u16", 60000), kv_scalar("k.i16", "i16", -3),
                  kv_scalar("k.u32", "u32", 7), kv_scalar("k.i32", "i32", -7),
                  kv_scalar("k.f32", "f32", 0.5), kv_scalar("k.bool", "bool", 1),
                  kv_scalar("k.u64", "u64", 2 ** 63), kv_scalar("k.i64", "i64", -2),
                  kv_scalar("k.f64", "f64", 2.5), kv_string("k.str", "γ✓"),
                  kv_array("k.arr_i32", "i32", [1, -2, 3]), kv_array("k.arr_str", "str", ["a", ""]),
                  kv_array("k.arr_bool", "bool", [1, 0]), kv_array("k.empty", "f32", [])]
    yield "valid-empty", gguf([], [])
    yield "valid-every-value-type", gguf(every_type, [])
    yield "valid-f32", gguf(every_type[:1], [("w", [8, 2], 0)])
    yield "valid-mixed", gguf(every_type[:3], [("a.weight", [64, 2], 8), ("b", [32], 2),
                                               ("c", [256, 1], 12), ("d", [3, 2, 2], 1),
                                               ("e", [5], 30)])
    align64 = [kv_scalar("general.alignment", "u32", 64)]
    yield "valid-align64", gguf(align64, [("a", [32, 3], 2), ("b", [4], 0)], alignment=64)
    yield "valid-tokens", gguf([kv_array("tokenizer.ggml.tokens", "str", [f"t{i}" for i in range(20)]),
                                kv_array("tokenizer.ggml.scores", "f32", [i / 4 for i in range(20)])],
                               [("token_embd.weight", [32, 20], 8)])
    valid = gguf(every_type[:2], [("a", [8], 0), ("b", [4], 0)])
    yield "bad-truncated", valid[:-8]
    yield "bad-magic", b"GGUX" + valid[4:]
    yield "bad-version2", valid[:4] + struct.pack("<I", 2) + valid[8:]
    yield "bad-nested", b"GGUF" + struct.pack("<Iqq", 3, 0, 1) + gstr("k") + struct.pack("<IIQ", 9, 9, 0)
    # Arrays of arrays, nested 1,000 deep: refused at the first level, without recursion.
    yield "bad-nested-deep", (b"GGUF" + struct.pack("<Iqq", 3, 0, 1) + gstr("k") +
                              struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 1000 +
                              struct.pack("<IQ", 4, 1) + struct.pack("<I", 7))
    not_utf8 = struct.pack("<Q", 1) + b"\xff"
    yield "bad-name-not-utf8", gguf([], [("a", [8], 0)]).replace(gstr("a"), not_utf8)
    yield "bad-offset", gguf([], [("a", [8], 0)]).replace(struct.pack("<IQ", 0, 0), struct.pack("<IQ", 0, 8))


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, data in seeds():
        (out / f"{name}.gguf").write_bytes(data)


if __name__ == "__main__":
    main()
