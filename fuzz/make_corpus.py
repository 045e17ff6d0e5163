#!/usr/bin/python3
"""Writes the seed corpus for fuzz_safetensors: small valid and invalid safetensors files.

Usage: /usr/bin/python3 fuzz/make_corpus.py [OUTPUT_DIR]   (default: fuzz/corpus/safetensors)
Deterministic; rerun after changing it and commit the files it writes.
"""
import json
import pathlib
import struct
import sys

SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
         "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}


def raw(header_text, data=b"", declared=None, pad=True):
    """An 8-byte length, the header (padded to a multiple of 8 when asked) and the data."""
    header = header_text.encode("utf-8") if isinstance(header_text, str) else header_text
    if pad:
        header += b" " * ((8 - len(header) % 8) % 8)
    length = len(header) if declared is None else declared
    return struct.pack("<Q", length) + header + data


def valid(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape); data bytes follow in the order given."""
    header, offset, data = {}, 0, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for index, (name, dtype, shape) in enumerate(tensors):
        count = 1
        for dim in shape:
            count *= dim
        size = count * SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        data += bytes((index * 31 + i * 7) & 0xFF for i in range(size))
        offset += size
    return raw(json.dumps(header, separators=(",", ":"), ensure_ascii=False), data, pad=pad)


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def seeds():
    yield "valid-empty", raw("{}")
    yield "valid-metadata-only", valid([], {"format": "pt", "k": "v"})
    for dtype in SIZES:
        yield f"valid-{dtype.lower()}", valid([("t", dtype, [2, 3])], {"test": "a"})
    yield "valid-scalar-and-empty", valid([("s", "F32", []), ("z", "I8", [0, 3]), ("v", "U8", [4])])
    yield "valid-unpadded", valid([("w", "F16", [6])], {"test": "a"}, pad=False)
    yield "valid-unicode-names", valid([("é/ü.weight", "BF16", [1, 2]), ("\u2713", "U8", [1])],
                                       {"note": "\u00e9\u00fc"})
    out_of_order = {"b": entry("U8", [2], 2, 4), "a": entry("U8", [2], 0, 2),
                    "__metadata__": {"x": "y"}}
    yield "valid-out-of-order", raw(json.dumps(out_of_order), b"abcd")
    yield "valid-extra-key", raw(json.dumps({"w": dict(entry("U8", [1], 0, 1), extra=[1])}), b"x")

    yield "invalid-truncated", b"\x05\x00\x00"
    yield "invalid-length-past-end", raw("{}", declared=64)
    yield "invalid-length-over-100mb", raw("{}", declared=100_000_001)
    yield "invalid-json", raw('{"w": {"dtype": "F32",')
    yield "invalid-utf8", raw(b'{"w\xff":{}}')
    yield "invalid-not-object", raw("[1, 2, 3]")
    yield "invalid-unknown-dtype", raw(json.dumps({"w": entry("F8_E4M3", [2], 0, 2)}), b"ab")
    yield "invalid-size-mismatch", raw(json.dumps({"w": entry("F32", [2, 2], 0, 12)}), bytes(12))
    yield "invalid-overlap", raw(json.dumps({"a": entry("U8", [8], 0, 8),
                                             "b": entry("U8", [8], 4, 12)}), bytes(12))
    yield "invalid-hole", raw(json.dumps({"a": entry("U8", [4], 0, 4),
                                          "b": entry("U8", [4], 8, 12)}), bytes(12))
    yield "invalid-trailing-bytes", raw(json.dumps({"a": entry("U8", [4], 0, 4)}), bytes(6))
    yield "invalid-duplicate-name", raw('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                        '"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}',
                                        b"ab")
    yield "invalid-past-end", raw(json.dumps({"w": entry("F32", [2], 0, 8)}), bytes(4))
    yield "invalid-shape-overflow", raw(json.dumps({"w": entry("U8", [2**32, 2**32], 0, 0)}))
    yield "invalid-negative-dim", raw(json.dumps({"w": entry("U8", [2, -1], 0, 0)}))
    yield "invalid-metadata-not-strings", raw(json.dumps({"__metadata__": {"k": 1}}))
    # Deep nesting: refused past 127 levels while parsing, and quoted shortly below that.
    yield "invalid-deep-arrays", raw("[" * 10_000 + "]" * 10_000)
    yield "invalid-deep-entry", raw('{"w":' + "[" * 10_000 + "]" * 10_000 + "}")
    yield "invalid-deep-objects", raw('{"__metadata__":' + '{"k":' * 5_000 + "1" + "}" * 5_001)
    yield "invalid-nested-below-limit", raw('{"w":' + "[" * 120 + "]" * 120 + "}")
    # The header rule: JSON whitespace may pad the header, a NUL byte or a byte-order mark not.
    yield "invalid-nul-padding", raw(json.dumps({"a": entry("U8", [4], 0, 4)}).encode() + b"\0" * 6,
                                     bytes(4), pad=False)
    yield "invalid-byte-order-mark", raw(b"\xef\xbb\xbf" + json.dumps({}).encode())
    yield "valid-whitespace-padding", raw(b"\n\t " + json.dumps({"a": entry("U8", [4], 0, 4)})
                                          .encode() + b" \r\n\t", bytes(4), pad=False)


def main():
    here = pathlib.Path(__file__).resolve().parent
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here / "corpus" / "safetensors"
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, data in seeds():
        (out / f"{name}.safetensors").write_bytes(data)
        count += 1
    print(f"make_corpus: wrote {count} files to {out}")


if __name__ == "__main__":
    main()
