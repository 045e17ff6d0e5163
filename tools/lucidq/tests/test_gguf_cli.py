#!/usr/bin/env python3
"""CLI tests of the GGUF side of lucidq: quantize (GGUF / safetensors -> GGUF), inspect, dequantize.

Run by ctest (tools/lucidq/tests/CMakeLists.txt) as
    python3 test_gguf_cli.py --lucidq PATH/TO/lucidq --shared PATH/TO/shared [unittest arguments]
Needs only the Python standard library. The sample checks skip when ../shared is absent.
"""

import json
import os
import re
import random
import struct
import subprocess
import sys
import tempfile
import unittest

LUCIDQ = None  # set from --lucidq
SAMPLES = None  # shared/testdata/gguf-samples, or None when absent


def seed():
    value = int(os.environ.get("LUCIDQ_SEED", "20261201"))
    print(f"[ seed ] LUCIDQ_SEED={value}", file=sys.stderr)
    return value


def gstr(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def tiny_llama(rng):
    """A 1-layer llama-named GGUF: F32 tensors of width 256, u32 hparams, a token list."""
    kvs = [gstr("general.architecture") + struct.pack("<I", 8) + gstr("llama"),
           gstr("llama.block_count") + struct.pack("<II", 4, 1),
           gstr("llama.attention.head_count") + struct.pack("<II", 4, 4),
           gstr("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2) + gstr("<s>") + gstr("b")]
    shapes = [("token_embd.weight", [256, 8]), ("blk.0.attn_norm.weight", [256]),
              ("blk.0.attn_v.weight", [256, 32]), ("blk.0.ffn_down.weight", [256, 32]),
              ("output.weight", [256, 8])]
    head = b"GGUF" + struct.pack("<Iqq", 3, len(shapes), len(kvs)) + b"".join(kvs)
    infos, data, offset = b"", b"", 0
    for name, ne in shapes:
        count = 1
        for d in ne:
            count *= d
        infos += gstr(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}q", *ne)
        infos += struct.pack("<IQ", 0, offset)
        blob = struct.pack(f"<{count}f", *[rng.gauss(0, 0.05) for _ in range(count)])
        blob += b"\0" * (-len(blob) % 32)
        data += blob
        offset += len(blob)
    header = head + infos
    return header + b"\0" * (-len(header) % 32) + data


def legacy_imatrix(names_and_rows, weights):
    """A legacy .dat: per tensor the first `row` weights (times the matrix count), ncall 1."""
    out = struct.pack("<i", len(names_and_rows))
    for name, row, matrices in names_and_rows:
        values = weights[:row] * matrices
        out += struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", 1, len(values))
        out += struct.pack(f"<{len(values)}f", *values)
    return out


class CliCase(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="lucidq-gguf-cli-")
        self.dir = self._dir.name

    def tearDown(self):
        self._dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, blob):
        with open(self.path(name), "wb") as f:
            f.write(blob)
        return self.path(name)

    def run_lucidq(self, *args, expect=0):
        result = subprocess.run([LUCIDQ, *args], capture_output=True, text=True, cwd=self.dir)
        self.assertEqual(result.returncode, expect,
                         f"lucidq {' '.join(args)}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        return result

    def inspect(self, path):
        return json.loads(self.run_lucidq("inspect", path, "--json").stdout)

    def data_section(self, path):
        info = self.inspect(path)
        with open(path, "rb") as f:
            return f.read()[info["data_offset"]:], info

    def need_samples(self):
        if SAMPLES is None:
            self.skipTest("shared GGUF samples not found (../shared/testdata/gguf-samples)")


class GgufQuantize(CliCase):
    def test_safetensors_to_every_sample_type_gives_ggmls_data(self):
        self.need_samples()
        for stem, preset in [("q8_0", "Q8_0"), ("q4_k", "Q4_K"), ("q6_k", "Q6_K"),
                             ("iq4_nl", "IQ4_NL"), ("q3_k", "Q3_K"), ("bf16", "BF16")]:
            with self.subTest(stem):
                out = self.path(stem + ".gguf")
                self.run_lucidq("quantize", os.path.join(SAMPLES, "source.safetensors"), "-o", out,
                                "--type", preset, "--quiet")
                got, info = self.data_section(out)
                want, want_info = self.data_section(os.path.join(SAMPLES, stem + ".gguf"))
                self.assertEqual(got, want)
                self.assertEqual([(t["name"], t["type"], t["offset"]) for t in info["tensors"]],
                                 [(t["name"], t["type"], t["offset"]) for t in want_info["tensors"]])

    def test_imatrix_flag_gives_ggmls_imatrix_data(self):
        self.need_samples()
        with open(os.path.join(SAMPLES, "imatrix.f32"), "rb") as f:
            weights = list(struct.unpack("<4096f", f.read()))
        rows = [("lcg.a", 256, 1), ("lcg.b", 512, 1), ("lcg.c", 1024, 1), ("big", 4096, 1),
                ("special", 256, 1), ("stack3d", 256, 2), ("w96", 96, 1), ("norm.weight", 256, 1)]
        imatrix = self.write("imatrix.dat", legacy_imatrix(rows, weights))
        out = self.path("q4_k.imatrix.gguf")
        result = self.run_lucidq("quantize", os.path.join(SAMPLES, "source.safetensors"), "-o", out,
                                 "--type", "Q4_K_M", "--imatrix", imatrix)
        self.assertIn("default q4_K; imatrix", result.stdout)
        got, info = self.data_section(out)
        want, _ = self.data_section(os.path.join(SAMPLES, "q4_k.imatrix.gguf"))
        self.assertEqual(got, want)
        keys = {m["key"]: m["value"] for m in info["metadata"]}
        self.assertEqual(keys["quantize.imatrix.file"], imatrix)
        self.assertEqual(keys["quantize.imatrix.entries_count"], 8)

    def test_llama_mixture_report_json_and_dry_run(self):
        model = self.write("tiny.gguf", tiny_llama(random.Random(seed())))
        plan = self.run_lucidq("quantize", model, "--type", "Q4_K_M", "--dry-run").stdout
        self.assertIn("f32 -> q6_K", plan)  # output.weight, and attn_v of the only layer
        self.assertEqual(os.listdir(self.dir), ["tiny.gguf"])
        result = self.run_lucidq("quantize", model, "-o", "tiny-Q4_K_M.gguf", "--type", "Q4_K_M",
                                 "--json", "report.json")
        self.assertIn("bits/w", result.stdout)
        self.assertIn("wrote tiny-Q4_K_M.gguf", result.stdout)
        report = json.load(open(self.path("report.json")))
        types = {t["name"]: t.get("ggml_type") for t in report["tensors"]}
        self.assertEqual(types["output.weight"], "q6_K")
        self.assertEqual(types["blk.0.attn_v.weight"], "q6_K")
        self.assertEqual(types["blk.0.ffn_down.weight"], "q6_K")
        self.assertEqual(types["token_embd.weight"], "q4_K")
        self.assertIsNone(types["blk.0.attn_norm.weight"])
        info = self.inspect(self.path("tiny-Q4_K_M.gguf"))
        keys = [m["key"] for m in info["metadata"]]
        self.assertEqual(keys, ["general.architecture", "llama.block_count",
                                "llama.attention.head_count", "tokenizer.ggml.tokens",
                                "general.quantization_version", "general.file_type"])
        self.assertEqual(info["metadata"][3]["value"], ["<s>", "b"])
        self.assertEqual(info["metadata"][5]["value"], 15)
        self.assertEqual(info["tensors"][0]["name"], "output.weight")

    def test_flags_pure_output_token_embedding_leave_and_recipe(self):
        model = self.write("tiny.gguf", tiny_llama(random.Random(seed())))
        def types(*flags):
            out = self.run_lucidq("quantize", model, "--type", "Q4_K_M", "--dry-run", *flags).stdout
            rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()[2:]]
            return {row[0]: row[2].split() for row in rows}
        pure = types("--pure")
        self.assertEqual(pure["output.weight"][:3], ["f32", "->", "q4_K"])
        flagged = types("--output-tensor-type", "q8_0", "--token-embedding-type", "q5_K")
        self.assertEqual(flagged["output.weight"][2], "q8_0")
        self.assertEqual(flagged["token_embd.weight"][2], "q5_K")
        self.assertEqual(types("--leave-output-tensor")["output.weight"][0], "f32")
        recipe = self.write("r.json", b'{"rules": [{"match": "*ffn_down*", "ggml_type": "q8_0"}]}')
        self.assertEqual(types("--recipe", recipe)["blk.0.ffn_down.weight"][2], "q8_0")
        self.assertEqual(types("--exclude", "token_embd.*")["token_embd.weight"][0], "f32")

    def test_plots_one_figure_per_encoded_tensor(self):
        model = self.write("tiny.gguf", tiny_llama(random.Random(seed())))
        result = self.run_lucidq("quantize", model, "-o", "q.gguf", "--type", "Q8_0", "--plots",
                                 "plots")
        self.assertIn("wrote 4 plots to plots", result.stdout)
        self.assertEqual(sorted(os.listdir(self.path("plots"))),
                         ["blk.0.attn_v.weight.errors.png", "blk.0.ffn_down.weight.errors.png",
                          "output.weight.errors.png", "token_embd.weight.errors.png"])
        with open(self.path("plots/output.weight.errors.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.run_lucidq("quantize", model, "-o", "q2.gguf", "--type", "Q8_0", "--plots", "plots",
                        expect=1)  # the figures exist: --force is needed
        self.assertFalse(os.path.exists(self.path("q2.gguf")))

    def test_inspect_and_dequantize(self):
        self.need_samples()
        table = self.run_lucidq("inspect", os.path.join(SAMPLES, "source.gguf")).stdout
        self.assertIn("lucidq.test.arr_i32 (arr[i32,5]) = [1, -2, 3, -4, 2147483647]", table)
        self.assertIn("lucidq.test.u64 (u64) = 18446744073709551615", table)
        out = self.path("q5_k.f32.safetensors")
        self.run_lucidq("dequantize", os.path.join(SAMPLES, "q5_k.gguf"), "-o", out, "--quiet")
        with open(out, "rb") as f:
            got = f.read()
        with open(os.path.join(SAMPLES, "q5_k.expected.safetensors"), "rb") as f:
            want = f.read()
        (n_got,) = struct.unpack("<Q", got[:8])
        (n_want,) = struct.unpack("<Q", want[:8])
        got_header, want_header = json.loads(got[8:8 + n_got]), json.loads(want[8:8 + n_want])
        for name, entry in want_header.items():
            if name == "__metadata__":
                continue
            a, b = got_header[name]["data_offsets"], entry["data_offsets"]
            self.assertEqual(got[8 + n_got + a[0]:8 + n_got + a[1]],
                             want[8 + n_want + b[0]:8 + n_want + b[1]], name)


class GgufBadInput(CliCase):
    def check_error(self, args, needle):
        result = self.run_lucidq(*args, expect=1)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("lucidq: error: "), result.stderr)
        self.assertIn(needle, lines[0])

    def test_each_bad_file_exits_1_with_one_clear_error_and_no_output(self):
        good = tiny_llama(random.Random(seed()))
        cases = {
            "truncated.gguf": (good[:-8], "truncated"),
            "magic.gguf": (b"GGUX" + good[4:], "magic \"GGUX\" (expected \"GGUF\""),
            "v2.gguf": (good[:4] + struct.pack("<I", 2) + good[8:], "GGUF version 2 (expected 3"),
            "counts.gguf": (good[:8] + struct.pack("<q", 1 << 60) + good[16:], "tensor count"),
            "nested.gguf": (b"GGUF" + struct.pack("<Iqq", 3, 0, 1) + gstr("k") +
                            struct.pack("<IIQ", 9, 9, 0), "array of arrays"),
            "string.gguf": (b"GGUF" + struct.pack("<Iqq", 3, 0, 1) + gstr("k") +
                            struct.pack("<IQ", 8, 1000), "string length 1000"),
        }
        for name, (blob, needle) in cases.items():
            with self.subTest(name):
                path = self.write(name, blob)
                self.check_error(["quantize", path, "-o", "out.gguf", "--type", "Q4_K_M"], needle)
                self.check_error(["inspect", path], needle)
                self.assertFalse(os.path.exists(self.path("out.gguf")))
        self.assertEqual(sorted(os.listdir(self.dir)), sorted(cases))

    def test_bad_flags(self):
        model = self.write("tiny.gguf", tiny_llama(random.Random(seed())))
        self.check_error(["quantize", model, "-o", "o.gguf", "--type", "Q9_K"],
                         "--type = \"Q9_K\" is not a preset")
        self.check_error(["quantize", model, "-o", "o.gguf", "--output-tensor-type", "q7"],
                         "--output-tensor-type = \"q7\" is not a ggml type")
        self.check_error(["quantize", model, "-o", "o.gguf", "--include", "x"],
                         "--include is for lucidq checkpoints")
        self.check_error(["quantize", model, "-o", "o.gguf", "--metadata", "oops"],
                         "expected KEY=TYPE:VALUE")
        self.check_error(["quantize", model, "-o", "o.gguf", "--metadata", "a=u8:300"],
                         "\"300\" is not a valid u8")
        self.check_error(["quantize", model, "-o", "o.gguf", "--imatrix", "missing.dat"],
                         "missing.dat: cannot open")
        self.check_error(["dequantize", model, "-o", "o.safetensors", "--dtype", "bf16"],
                         "for a GGUF input (expected float32")
        self.assertEqual(os.listdir(self.dir), ["tiny.gguf"])


def main():
    global LUCIDQ, SAMPLES
    args = sys.argv[1:]
    if len(args) < 4 or args[0] != "--lucidq" or args[2] != "--shared":
        sys.exit("usage: test_gguf_cli.py --lucidq PATH --shared DIR [unittest arguments]")
    LUCIDQ = os.path.abspath(args[1])
    samples = os.path.join(os.path.abspath(args[3]), "testdata", "gguf-samples")
    SAMPLES = samples if os.path.isdir(samples) else None
    unittest.main(argv=[sys.argv[0], *args[4:]], verbosity=2)


if __name__ == "__main__":
    main()
