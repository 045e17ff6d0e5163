#!/usr/bin/env python3
"""Writes a bf16 safetensors checkpoint with LLM-like shapes, for bench/checkpoint_bench.sh.

    gen_checkpoint.py OUT.safetensors [--layers N] [--hidden 4096] [--intermediate 11008] [--seed S]

Each layer is a Llama-style decoder block: q/k/v/o projections [hidden, hidden], gate/up
[intermediate, hidden], down [hidden, intermediate], two RMSNorm weights [hidden]. Weights are
normal with per-row magnitudes spread over a factor of 20 and a few outlier input features.
5 layers of the 7B shapes make 2.02 GB. Needs NumPy (Debian's python3-numpy).
"""

import argparse
import json
import struct
import sys

import numpy as np


def to_bf16(x):
    """float32 array -> bfloat16 bits (uint16), rounding to nearest even."""
    bits = x.view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def tensors(layers, hidden, intermediate):
    for i in range(layers):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (hidden,)
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            yield p + f"self_attn.{name}.weight", (hidden, hidden)
        yield p + "post_attention_layernorm.weight", (hidden,)
        yield p + "mlp.gate_proj.weight", (intermediate, hidden)
        yield p + "mlp.up_proj.weight", (intermediate, hidden)
        yield p + "mlp.down_proj.weight", (hidden, intermediate)


def values(shape, rng):
    if len(shape) == 1:
        return (1.0 + 0.05 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
    rows, cols = shape
    w = rng.standard_normal(shape, dtype=np.float32)
    w *= (0.02 * np.exp(rng.uniform(-1.5, 1.5, size=(rows, 1)))).astype(np.float32)
    w[:, rng.choice(cols, size=4, replace=False)] *= 6.0  # outlier input features
    return w


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=11008)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()

    specs = list(tensors(args.layers, args.hidden, args.intermediate))
    header, offset = {"__metadata__": {"format": "pt", "source": "bench/gen_checkpoint.py"}}, 0
    for name, shape in specs:
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    rng = np.random.default_rng(args.seed)
    with open(args.out, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in specs:
            f.write(to_bf16(values(shape, rng)).tobytes())
    print(f"{args.out}: {len(specs)} tensors, {offset / 1e9:.2f} GB of bf16", file=sys.stderr)


if __name__ == "__main__":
    main()
