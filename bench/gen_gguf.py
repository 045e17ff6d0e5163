#!/usr/bin/env python3
"""Writes an F16 GGUF model with Llama-7B shapes, for bench/gguf_bench.sh.

    gen_gguf.py OUT.gguf [--layers N] [--hidden 4096] [--intermediate 11008] [--seed S]

Each layer is a llama decoder block under llama.cpp's names: attn_q/k/v/output [hidden,
hidden], ffn_gate/up [intermediate, hidden], ffn_down [hidden, intermediate] (F16), and the
attn_norm / ffn_norm weights [hidden] (F32). Metadata: general.architecture "llama" and its
u32 hparams. Weights are normal with per-row magnitudes spread over a factor of 20. 5 layers
make 2.02 GB. Written field by field (independent of lucidq's writer). Needs NumPy.
"""

import argparse
import struct

import numpy as np

ALIGN = 32


def gstr(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def kv_u32(key, value):
    return gstr(key) + struct.pack("<II", 4, value)


def tensors(layers, hidden, intermediate):
    for i in range(layers):
        b = f"blk.{i}."
        yield b + "attn_norm.weight", (hidden,), 0
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            yield b + name + ".weight", (hidden, hidden), 1
        yield b + "ffn_norm.weight", (hidden,), 0
        yield b + "ffn_gate.weight", (intermediate, hidden), 1
        yield b + "ffn_up.weight", (intermediate, hidden), 1
        yield b + "ffn_down.weight", (hidden, intermediate), 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=11008)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    specs = list(tensors(args.layers, args.hidden, args.intermediate))
    kvs = [gstr("general.architecture") + struct.pack("<I", 8) + gstr("llama"),
           kv_u32("llama.block_count", args.layers),
           kv_u32("llama.embedding_length", args.hidden),
           kv_u32("llama.feed_forward_length", args.intermediate),
           kv_u32("llama.attention.head_count", 32),
           kv_u32("llama.attention.head_count_kv", 32),
           kv_u32("general.file_type", 1)]
    header = b"GGUF" + struct.pack("<Iqq", 3, len(specs), len(kvs)) + b"".join(kvs)
    offset = 0
    for name, shape, type_id in specs:
        ne = list(reversed(shape))
        header += gstr(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}q", *ne)
        header += struct.pack("<IQ", type_id, offset)
        nbytes = int(np.prod(shape)) * (4 if type_id == 0 else 2)
        offset += -(-nbytes // ALIGN) * ALIGN
    header += b"\0" * (-len(header) % ALIGN)
    rng = np.random.default_rng(args.seed)
    with open(args.out, "wb") as f:
        f.write(header)
        for name, shape, type_id in specs:
            if type_id == 0:
                data = (1 + rng.standard_normal(shape, np.float32) / 8).astype("<f4")
            else:
                rows = shape[0]
                scale = np.exp(np.linspace(0, np.log(20), rows, dtype=np.float32)) * 0.01
                data = (rng.standard_normal(shape, np.float32) * scale[:, None]).astype("<f2")
            blob = data.tobytes()
            f.write(blob + b"\0" * (-len(blob) % ALIGN))


if __name__ == "__main__":
    main()
