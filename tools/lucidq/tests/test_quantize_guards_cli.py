#!/usr/bin/env python3
"""CLI tests of `lucidq quantize`'s guard rails: flags the job does not use, output names that
disagree with the format, quantized inputs, patterns that match nothing, 1-D / growing / ragged
plans, and llama-quantize's positional spelling.

Run by ctest (tools/lucidq/tests/CMakeLists.txt) as
    python3 test_quantize_guards_cli.py --lucidq PATH/TO/lucidq [unittest arguments]
Needs only the Python standard library.
"""

import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import unittest

from test_checkpoint_cli import bf16_bits, safetensors_bytes
from test_gguf_cli import seed, tiny_llama

LUCIDQ = None  # set from --lucidq


def small_model(rng):
    """fc.weight F32 [8, 64], fc.bias F32 [8], norm.weight BF16 [64]."""
    weight = struct.pack("<512f", *[rng.gauss(0, 0.1) for _ in range(512)])
    bias = struct.pack("<8f", *[rng.gauss(0, 0.01) for _ in range(8)])
    norm = struct.pack("<64H", *[bf16_bits(1 + rng.gauss(0, 0.05)) for _ in range(64)])
    return safetensors_bytes([("fc.weight", "F32", [8, 64], weight), ("fc.bias", "F32", [8], bias),
                              ("norm.weight", "BF16", [64], norm)])


class Guards(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="lucidq-guards-cli-")
        self.dir = self._dir.name
        rng = random.Random(seed())
        self.model = self.write("model.safetensors", small_model(rng))
        self.gguf = self.write("tiny.gguf", tiny_llama(rng))

    def tearDown(self):
        self._dir.cleanup()

    def write(self, name, blob):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(blob)
        return path

    def run_lucidq(self, *args, expect=0):
        result = subprocess.run([LUCIDQ, *args], capture_output=True, text=True, cwd=self.dir)
        self.assertEqual(result.returncode, expect,
                         f"lucidq {' '.join(args)}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        return result

    def check_error(self, args, *needles):
        before = sorted(os.listdir(self.dir))
        result = self.run_lucidq(*args, expect=1)
        lines = result.stderr.strip().splitlines()
        self.assertTrue(lines and lines[0].startswith("lucidq: error: "), result.stderr)
        for needle in needles:
            self.assertIn(needle, lines[0])
        self.assertEqual(sorted(os.listdir(self.dir)), before)  # nothing written
        return lines[0]

    def warnings(self, *args):
        """Runs a command that must succeed; returns its warning lines."""
        result = self.run_lucidq(*args)
        return [line for line in result.stderr.splitlines() if line.startswith("lucidq: warning: ")]

    def test_gguf_flags_are_refused_for_a_lucidq_checkpoint(self):
        for flag in (["--imatrix", "missing.dat"], ["--pure"], ["--leave-output-tensor"],
                     ["--output-tensor-type", "q8_0"], ["--metadata", "a=u8:1"]):
            with self.subTest(flag[0]):
                self.check_error(["quantize", "model.safetensors", "-o", "q.safetensors", *flag],
                                 f"{flag[0]} is for GGUF output; this run writes a lucidq checkpoint, "
                                 "chosen by the output suffix .safetensors")
        self.check_error(["quantize", "model.safetensors", "-o", "q.safetensors", "--imatrix", "x"],
                         "--method weighted-rtn --calibration FILE")

    def test_checkpoint_flags_are_refused_for_gguf_output(self):
        for flag in (["--dtype", "qint4"], ["--group-size", "32"], ["--method", "gptq"],
                     ["--scheme", "per_channel_affine"], ["--axis", "1"], ["--include", "x"]):
            with self.subTest(flag[0]):
                self.check_error(["quantize", "tiny.gguf", "-o", "q.gguf", "--type", "Q4_K_M", *flag],
                                 f"{flag[0]} is for lucidq checkpoints; this run writes GGUF output, "
                                 "chosen by --type Q4_K_M")
        self.check_error(["quantize", "model.safetensors", "-o", "q.gguf", "--dtype", "qint4"],
                         "GGUF output, chosen by the output suffix .gguf")
        self.check_error(["quantize", "tiny.gguf", "-o", "q.gguf", "--group-size", "32"],
                         "GGUF output, chosen by the output suffix .gguf")

    def test_output_name_must_match_the_format(self):
        self.check_error(["quantize", "model.safetensors", "-o", "x.safetensors", "--type", "Q4_K_M"],
                         "-o x.safetensors: this run writes GGUF output, chosen by --type Q4_K_M",
                         "expected -o OUT.gguf")
        self.check_error(["quantize", "tiny.gguf", "-o", "x.safetensors"],
                         "GGUF output, chosen by the GGUF input", "lucidq dequantize")

    def test_a_lucidq_checkpoint_is_refused_as_gguf_input_as_for_a_checkpoint(self):
        self.run_lucidq("quantize", "model.safetensors", "-o", "q8.safetensors", "--quiet")
        for out in (["-o", "again.safetensors"], ["-o", "q8.gguf", "--type", "Q8_0"]):
            with self.subTest(out[1]):
                self.check_error(["quantize", "q8.safetensors", *out],
                                 "q8.safetensors: already a lucidq checkpoint",
                                 "dequantize it first")

    def test_patterns_that_match_nothing_warn_and_fail_with_strict(self):
        warned = self.warnings("quantize", "model.safetensors", "-o", "q.safetensors",
                               "--include", "nomatch*", "--quiet")
        self.assertEqual(warned, ["lucidq: warning: --include nomatch*: pattern 'nomatch*' matches "
                                  "no tensor of model.safetensors (expected a name such as "
                                  "'fc.weight'; --dry-run lists them)"])
        self.check_error(["quantize", "model.safetensors", "-o", "q2.safetensors", "--include",
                          "nomatch*", "--strict"], "matches no tensor", "(an error with --strict)")
        warned = self.warnings("quantize", "tiny.gguf", "-o", "q.gguf", "--exclude", "lm_head.*",
                               "--quiet")
        self.assertEqual(len(warned), 1)
        self.assertIn("--exclude lm_head.*: pattern 'lm_head.*' matches no tensor of tiny.gguf", warned[0])
        # Patterns that match stay silent.
        self.assertEqual(self.warnings("quantize", "model.safetensors", "-o", "q3.safetensors",
                                       "--include", "fc.*", "--exclude", "norm.*", "--quiet"), [])

    def test_quantizing_1d_tensors_and_growing_tensors_warn(self):
        recipe = self.write("all.json", json.dumps(
            {"rules": [{"match": "*", "scheme": "per_channel_symmetric", "dtype": "qint8"}]}).encode())
        warned = self.warnings("quantize", "model.safetensors", "-o", "q.safetensors", "--recipe",
                               recipe, "--quiet")
        text = "\n".join(warned)
        self.assertIn('tensor "fc.bias" [8]: ' + recipe + " rules[0] quantizes a 1-D tensor", text)
        self.assertIn('tensor "norm.weight" [64]: ' + recipe + " rules[0] quantizes a 1-D tensor", text)
        # 64 bf16 values (128 B) become 64 int8 codes and 64 float32 scales (320 B).
        self.assertIn('tensor "norm.weight" [64]: ' + recipe + " rules[0] makes it 320 bytes from 128", text)
        self.assertNotIn("fc.weight", text)
        self.assertEqual(len(warned), 4)  # fc.bias: 1-D and 8 codes + 8 scales = 40 B from 32
        self.check_error(["quantize", "model.safetensors", "-o", "q2.safetensors", "--recipe", recipe,
                          "--strict"], "quantizes a 1-D tensor")

    def test_ragged_groups_warn(self):
        warned = self.warnings("quantize", "model.safetensors", "-o", "q48.safetensors", "--dtype",
                               "qint4", "--group-size", "48", "--quiet")
        self.assertEqual(warned, ['lucidq: warning: model.safetensors: tensor "fc.weight" [8, 64]: '
                                  "default: group size 48 does not divide its 64 elements along "
                                  "axis 1: a last group of 16 (expected a divisor of 64)"])
        warned = self.warnings("quantize", "model.safetensors", "-o", "q128.safetensors", "--dtype",
                               "qint4", "--group-size", "128", "--dry-run")
        self.assertEqual(len(warned), 1)
        self.assertIn("group size 128 is longer than its 64 elements along axis 1: one group of 64",
                      warned[0])
        self.assertEqual(self.warnings("quantize", "model.safetensors", "-o", "q32.safetensors",
                                       "--dtype", "qint4", "--group-size", "32", "--quiet"), [])

    def test_llama_quantize_positional_form_gets_the_spelling(self):
        line = self.check_error(["quantize", "tiny.gguf", "out.gguf", "Q4_K_M"],
                                "lucidq quantize tiny.gguf -o out.gguf --type Q4_K_M")
        self.assertIn("llama-quantize", line)


def main():
    global LUCIDQ
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--lucidq":
        sys.exit("usage: test_quantize_guards_cli.py --lucidq PATH [unittest arguments]")
    LUCIDQ = os.path.abspath(args[1])
    unittest.main(argv=[sys.argv[0], *args[2:]], verbosity=2)


if __name__ == "__main__":
    main()
