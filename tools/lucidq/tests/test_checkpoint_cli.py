#!/usr/bin/env python3
"""CLI tests of the checkpoint subcommands: lucidq quantize / dequantize / inspect / plot / demo.

Run by ctest (tools/lucidq/tests/CMakeLists.txt) as
    python3 test_checkpoint_cli.py --lucidq PATH/TO/lucidq [unittest arguments, e.g. a class name]
Needs only the Python standard library. Every randomised input prints its seed (LUCIDQ_SEED).
"""

import json
import math
import os
import pty
import random
import select
import struct
import subprocess
import sys
import tempfile
import unittest

LUCIDQ = None  # set from --lucidq


def seed():
    value = int(os.environ.get("LUCIDQ_SEED", "20261130"))
    print(f"[ seed ] LUCIDQ_SEED={value}", file=sys.stderr)
    return value


def bf16_bits(x):
    """float32 -> bfloat16 bits, rounding to nearest even (as lucidq does)."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def safetensors_bytes(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, data bytes), written in that order."""
    header, offset, data = {}, 0, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def raw_file(header_text, data=b""):
    """A file from literal header text (for malformed input)."""
    text = header_text.encode() if isinstance(header_text, str) else header_text
    return struct.pack("<Q", len(text)) + text + data


def read_safetensors(path):
    """(header dict without __metadata__, metadata, data bytes)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    metadata = header.pop("__metadata__", {})
    return header, metadata, blob[8 + n:]


def tensor_values(path, name):
    header, _, data = read_safetensors(path)
    entry = header[name]
    begin, end = entry["data_offsets"]
    raw = data[begin:end]
    if entry["dtype"] == "F32":
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if entry["dtype"] == "BF16":
        return [bf16_value(b) for b in struct.unpack(f"<{len(raw) // 2}H", raw)]
    raise ValueError(entry["dtype"])


def small_model(rng):
    """A BF16 weight [6, 16] with spread rows, an F32 bias [6], an I64 tensor [3]."""
    weight = [rng.gauss(0, 0.02 * (r + 1)) for r in range(6) for _ in range(16)]
    bias = [rng.gauss(0, 0.01) for _ in range(6)]
    tensors = [
        ("fc.weight", "BF16", [6, 16], struct.pack("<96H", *[bf16_bits(x) for x in weight])),
        ("fc.bias", "F32", [6], struct.pack("<6f", *bias)),
        ("ids", "I64", [3], struct.pack("<3q", 0, 1, 2)),
    ]
    return tensors, [bf16_value(bf16_bits(x)) for x in weight]


class CliCase(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="lucidq-cli-")
        self.dir = self._dir.name
        self.weight = None

    def tearDown(self):
        self._dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, blob):
        with open(self.path(name), "wb") as f:
            f.write(blob)
        return self.path(name)

    def model(self, name="model.safetensors", metadata=None):
        tensors, self.weight = small_model(random.Random(seed()))
        return self.write(name, safetensors_bytes(tensors, metadata or {"format": "pt"}))

    def run_lucidq(self, *args, expect=0):
        result = subprocess.run([LUCIDQ, *args], capture_output=True, text=True, cwd=self.dir)
        self.assertEqual(result.returncode, expect,
                         f"lucidq {' '.join(args)}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        return result

    def files(self):
        return sorted(os.listdir(self.dir))


class Quantize(CliCase):
    def test_default_report_and_output(self):
        model = self.model()
        r = self.run_lucidq("quantize", model, "-o", self.path("q.safetensors"))
        self.assertEqual(r.stderr, "")  # not a terminal: no progress bar
        out = r.stdout
        self.assertRegex(out, r"tensor +shape +scheme +dtype +before +after +MSE +SQNR dB +max \|err\| +saturated +non-finite")
        self.assertRegex(out, r"fc\.weight +\[6, 16\] +per_channel_symmetric axis 0 +BF16 -> qint8 +192 B +120 B +\S+e-\d\d +\d+\.\d\d ")
        self.assertRegex(out, r"fc\.bias +\[6\] +kept: 1-D; default needs 2-D\+ +F32 +24 B +24 B")
        self.assertRegex(out, r"ids +\[3\] +kept: I64 is not floating point +I64")
        self.assertRegex(out, r"total +1 of 3 tensors quantized +240 B +168 B")
        self.assertIn("compression 1.43x", out)
        self.assertIn("wrote " + self.path("q.safetensors"), out)
        header, metadata, _ = read_safetensors(self.path("q.safetensors"))
        self.assertEqual(list(header), ["fc.weight", "fc.weight.scale", "fc.bias", "ids"])
        self.assertEqual(header["fc.weight"]["dtype"], "I8")
        self.assertEqual(metadata["format"], "pt")
        self.assertEqual(metadata["lucidq.format"], "1")
        self.assertEqual(json.loads(metadata["lucidq.tensor.fc.weight"])["original_dtype"], "BF16")

    def test_json_report_file_and_stdout(self):
        model = self.model()
        r = self.run_lucidq("quantize", model, "-o", "q.safetensors", "--json", "report.json")
        self.assertIn("wrote report.json", r.stdout)
        with open(self.path("report.json")) as f:
            report = json.load(f)
        self.assertEqual(report["lucidq_report"], 1)
        self.assertEqual([t["action"] for t in report["tensors"]], ["quantized", "kept", "kept"])
        self.assertEqual(report["tensors"][0]["qdtype"], "qint8")
        self.assertGreater(report["tensors"][0]["sqnr_db"], 30)
        self.assertEqual(report["totals"]["bytes_after"], 168)
        r = self.run_lucidq("quantize", model, "-o", "q2.safetensors", "--json", "-")
        self.assertEqual(json.loads(r.stdout)["totals"]["quantized"], 1)  # only JSON on stdout

    def test_quiet_prints_nothing(self):
        r = self.run_lucidq("quantize", self.model(), "-o", "q.safetensors", "--quiet")
        self.assertEqual((r.stdout, r.stderr), ("", ""))
        self.assertIn("q.safetensors", self.files())

    def test_existing_output_needs_force(self):
        model = self.model()
        self.write("q.safetensors", b"precious")
        r = self.run_lucidq("quantize", model, "-o", "q.safetensors", expect=1)
        self.assertEqual(r.stderr,
                         "lucidq: error: q.safetensors: already exists (expected a new path, or "
                         "--force to replace it)\n")
        with open(self.path("q.safetensors"), "rb") as f:
            self.assertEqual(f.read(), b"precious")
        self.run_lucidq("quantize", model, "-o", "q.safetensors", "--force")
        self.assertEqual(read_safetensors(self.path("q.safetensors"))[1]["lucidq.format"], "1")

    def test_flags_recipe_include_exclude(self):
        model = self.model()
        self.run_lucidq("quantize", model, "-o", "q4.safetensors", "--dtype", "uint4",
                        "--scheme", "per_channel_affine", "--group-size", "8")
        header, metadata, _ = read_safetensors(self.path("q4.safetensors"))
        self.assertEqual(header["fc.weight"], {"dtype": "U8", "shape": [48], "data_offsets": [0, 48]})
        self.assertEqual(header["fc.weight.scale"]["shape"], [6, 2])
        self.assertEqual(header["fc.weight.zero_point"]["dtype"], "U8")
        described = json.loads(metadata["lucidq.tensor.fc.weight"])
        self.assertEqual((described["dtype"], described["axis"], described["group_size"]), ("quint4", 1, 8))

        self.run_lucidq("quantize", model, "-o", "ex.safetensors", "--exclude", "fc.*")
        self.assertNotIn("lucidq.tensor.fc.weight", read_safetensors(self.path("ex.safetensors"))[1])
        self.run_lucidq("quantize", model, "-o", "in.safetensors", "--include", "other.*")
        self.assertNotIn("lucidq.tensor.fc.weight", read_safetensors(self.path("in.safetensors"))[1])

        self.write("recipe.json", json.dumps({"rules": [
            {"match": "*.bias", "scheme": "per_tensor_affine", "dtype": "quint8"},
            {"match": "*", "skip": True}]}).encode())
        r = self.run_lucidq("quantize", model, "-o", "r.safetensors", "--recipe", "recipe.json")
        self.assertRegex(r.stdout, r"fc\.weight +\[6, 16\] +kept: recipe\.json rules\[1\]")
        self.assertRegex(r.stdout, r"fc\.bias +\[6\] +per_tensor_affine +F32 -> quint8")
        header, _, _ = read_safetensors(self.path("r.safetensors"))
        self.assertEqual(header["fc.bias.scale"]["shape"], [])
        self.assertEqual(header["fc.weight"]["dtype"], "BF16")

    def test_dry_run_writes_nothing(self):
        model = self.model()
        r = self.run_lucidq("quantize", model, "--dry-run", "--exclude", "*.bias")
        self.assertRegex(r.stdout, r"fc\.weight +\[6, 16\] +BF16 +qint8 per_channel_symmetric axis 0 +default")
        self.assertRegex(r.stdout, r"fc\.bias +\[6\] +F32 +keep +--exclude \*\.bias")
        self.assertEqual(self.files(), ["model.safetensors"])

    def test_nonfinite_counted_and_strict(self):
        values = [1.0, float("nan"), -2.0, float("inf"), 0.5, 0.25]
        model = self.write("nan.safetensors", safetensors_bytes(
            [("w", "F32", [2, 3], struct.pack("<6f", *values))]))
        r = self.run_lucidq("quantize", model, "-o", "q.safetensors")
        self.assertRegex(r.stdout, r"w +\[2, 3\] .* 2\n")
        self.assertRegex(r.stdout, r"total .* 2\n")
        r = self.run_lucidq("quantize", model, "-o", "q2.safetensors", "--strict", expect=1)
        self.assertTrue(r.stderr.startswith(f"lucidq: error: {model}: tensor \"w\": 2 non-finite values"), r.stderr)
        self.assertNotIn("q2.safetensors", self.files())

    def test_bad_flags_and_recipes(self):
        model = self.model()
        cases = [
            (["--dtype", "int3"], "lucidq: error: --dtype: qdtype \"int3\" is unknown"),
            (["--scheme", "per_row"], "lucidq: error: --scheme: qscheme \"per_row\" is unknown"),
            (["--scheme", "per_tensor_affine", "--group-size", "8"],
             "lucidq: error: --group-size = 8 with --scheme per_tensor_affine"),
            (["--group-size", "-1"], "lucidq: error: --group-size = -1"),
            (["--axis", "2"], f"lucidq: error: {model}: tensor \"fc.weight\": default: axis = 2"),
            (["--recipe", "missing.json"], "lucidq: error: missing.json: not a readable file"),
        ]
        self.write("bad.json", b'{"rules": [{"match": "*", "dtpye": "qint4"}]}')
        cases.append((["--recipe", "bad.json"], 'lucidq: error: bad.json: rules[0]: "dtpye": unknown key'))
        for extra, message in cases:
            with self.subTest(extra=extra):
                r = self.run_lucidq("quantize", model, "-o", "q.safetensors", *extra, expect=1)
                self.assertTrue(r.stderr.startswith(message), r.stderr)
                self.assertNotIn("q.safetensors", self.files())
        r = self.run_lucidq("quantize", model, expect=1)
        self.assertIn("--output is required", r.stderr)


GOOD_HEADER = ('{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},'
               '"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}')


def bad_inputs():
    """(what, file bytes, message piece, tensor named or None)."""
    good = raw_file(GOOD_HEADER, bytes(24))
    past_end = b"\xff" + good[1:]
    return [
        ("truncated", good[:-5], "run past the end", "b"),
        ("header length past the end", past_end, "header length 255 runs past the end", None),
        ("header over 100 MB", struct.pack("<Q", 100_000_001) + b"{}", "exceeds the limit", None),
        ("invalid JSON", raw_file('{"a":', bytes(8)), "header is not valid JSON", None),
        ("invalid UTF-8", raw_file(b'{"\xff":{}}', bytes(8)), "header is not valid UTF-8", None),
        ("unknown dtype", raw_file('{"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}', bytes(2)),
         'unknown dtype "F8_E4M3"', "a"),
        ("size differs from offsets",
         raw_file('{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}', bytes(12)), "needs 16", "a"),
        ("overlap", raw_file('{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},'
                             '"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}', bytes(16)),
         "overlap tensor", "b"),
        ("out of order", raw_file('{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}', bytes(8)),
         "end before they begin", "a"),
        ("hole", raw_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                          '"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}}', bytes(20)),
         "leave a hole", "b"),
        ("duplicate names", raw_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                                     '"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}', bytes(16)),
         "appears twice", "a"),
        ("offsets past the end", raw_file('{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}', bytes(24)),
         "run past the end of the file", "a"),
        ("shape overflows", raw_file('{"a":{"dtype":"F32","shape":[4294967296,4294967296],'
                                     '"data_offsets":[0,8]}}', bytes(8)),
         "more elements than 2^63 - 1", "a"),
    ]


class BadInput(CliCase):
    def test_each_bad_file_exits_1_with_one_clear_error_and_no_output(self):
        for what, blob, message, tensor in bad_inputs():
            for command in (["quantize"], ["dequantize"], ["inspect"]):
                with self.subTest(what=what, command=command[0]):
                    model = self.write("model.safetensors", blob)
                    self.write("existing.safetensors", b"keep me")
                    args = command + [model]
                    if command[0] != "inspect":
                        args += ["-o", "out.safetensors"]
                    r = self.run_lucidq(*args, expect=1)
                    lines = r.stderr.splitlines()
                    self.assertEqual(len(lines), 1, r.stderr)
                    self.assertTrue(lines[0].startswith(f"lucidq: error: {model}: "), r.stderr)
                    self.assertIn(message, lines[0])
                    if tensor:
                        self.assertIn(f'tensor "{tensor}"', lines[0])
                    self.assertEqual(r.stdout, "")
                    self.assertEqual(self.files(), ["existing.safetensors", "model.safetensors"])
                    if command[0] == "quantize":  # even with --force, an existing output stays
                        self.run_lucidq("quantize", model, "-o", "existing.safetensors", "--force",
                                        expect=1)
                        with open(self.path("existing.safetensors"), "rb") as f:
                            self.assertEqual(f.read(), b"keep me")

    def test_missing_input(self):
        r = self.run_lucidq("quantize", "nope.safetensors", "-o", "q.safetensors", expect=1)
        self.assertTrue(r.stderr.startswith("lucidq: error: nope.safetensors: cannot open"), r.stderr)


class Dequantize(CliCase):
    def test_round_trip_within_half_a_step(self):
        model = self.model()
        self.run_lucidq("quantize", model, "-o", "q.safetensors")
        r = self.run_lucidq("dequantize", "q.safetensors", "-o", "f.safetensors")
        self.assertIn("dequantized 1 tensor to float32, copied 2 as they were", r.stdout)
        header, metadata, _ = read_safetensors(self.path("f.safetensors"))
        self.assertEqual(metadata, {"format": "pt"})
        self.assertEqual(header["fc.weight"]["dtype"], "F32")
        self.assertEqual(header["fc.weight"]["shape"], [6, 16])
        scales = tensor_values(self.path("q.safetensors"), "fc.weight.scale")
        x_hat = tensor_values(self.path("f.safetensors"), "fc.weight")
        for i, (x, y) in enumerate(zip(self.weight, x_hat)):
            # docs/numerics.md, "Bound": half a step plus float32 rounding of x_hat.
            self.assertLessEqual(abs(x - y), scales[i // 16] / 2 + abs(y) * 2.0**-23)
        self.assertEqual(tensor_values(self.path("f.safetensors"), "fc.bias"),
                         tensor_values(model, "fc.bias"))

    def test_dtypes(self):
        self.run_lucidq("quantize", self.model(), "-o", "q.safetensors")
        for flag, dtype in (("bfloat16", "BF16"), ("float16", "F16"), ("original", "BF16")):
            with self.subTest(flag=flag):
                self.run_lucidq("dequantize", "q.safetensors", "-o", f"{flag}.safetensors", "--dtype", flag)
                self.assertEqual(read_safetensors(self.path(f"{flag}.safetensors"))[0]["fc.weight"]["dtype"], dtype)
        r = self.run_lucidq("dequantize", "q.safetensors", "-o", "x.safetensors", "--dtype", "int8", expect=1)
        self.assertIn('--dtype = "int8" (expected float32, bfloat16, float16 or original)', r.stderr)

    def test_inconsistent_metadata_is_an_error(self):
        self.run_lucidq("quantize", self.model(), "-o", "q.safetensors")
        header, metadata, data = read_safetensors(self.path("q.safetensors"))
        metadata["lucidq.format"] = "2"
        tensors = [(name, e["dtype"], e["shape"], data[e["data_offsets"][0]:e["data_offsets"][1]])
                   for name, e in header.items()]
        self.write("v2.safetensors", safetensors_bytes(tensors, metadata))
        r = self.run_lucidq("dequantize", "v2.safetensors", "-o", "f.safetensors", expect=1)
        self.assertIn('v2.safetensors: lucidq checkpoint format "2" (expected "1"', r.stderr)
        self.assertNotIn("f.safetensors", self.files())


class Inspect(CliCase):
    def test_table_and_json(self):
        self.model()
        self.run_lucidq("quantize", "model.safetensors", "-o", "q.safetensors", "--dtype", "qint4",
                        "--group-size", "8")
        r = self.run_lucidq("inspect", "q.safetensors")
        self.assertRegex(r.stdout, r"^q\.safetensors: lucidq checkpoint \(format 1\), 3 tensors, ")
        self.assertIn("metadata format = pt", r.stdout)
        self.assertRegex(r.stdout, r"fc\.weight +\[6, 16\] +U8 \[48\] \+ scale +96 B +qint4 "
                                   r"per_channel_symmetric group 8 axis 1, from BF16")
        self.assertRegex(r.stdout, r"ids +\[3\] +I64 +24 B +-")
        info = json.loads(self.run_lucidq("inspect", "q.safetensors", "--json").stdout)
        self.assertEqual(info["format"], "1")
        self.assertEqual([t["name"] for t in info["tensors"]], ["fc.weight", "fc.bias", "ids"])
        self.assertEqual(info["tensors"][0]["quantization"]["group_size"], 8)
        self.assertIsNone(info["tensors"][1]["quantization"])
        plain = json.loads(self.run_lucidq("inspect", "model.safetensors", "--json").stdout)
        self.assertIsNone(plain["format"])


class Plot(CliCase):
    def test_plot_png_and_svg(self):
        self.model()
        r = self.run_lucidq("plot", "model.safetensors", "--tensor", "fc.weight", "-o", "w.png",
                            "--report", "w.report.png")
        self.assertIn("wrote w.png (fc.weight [6, 16] as qint8 per_channel_symmetric axis 0)", r.stdout)
        with open(self.path("w.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertIn("w.report.png", self.files())
        self.run_lucidq("plot", "model.safetensors", "--tensor", "fc.weight", "--rows", "0:4",
                        "--cols", "2:10", "--dtype", "qint4", "--group-size", "4", "-o", "w.svg")
        with open(self.path("w.svg")) as f:
            self.assertIn("<svg", f.read(500))
        r = self.run_lucidq("plot", "model.safetensors", "--tensor", "fc.weight", "-o", "w.png", expect=1)
        self.assertIn("w.png: already exists", r.stderr)

    def test_plot_errors(self):
        self.model()
        self.run_lucidq("quantize", "model.safetensors", "-o", "q.safetensors")
        cases = [
            (["model.safetensors", "--tensor", "nope"], 'no tensor named "nope"'),
            (["model.safetensors", "--tensor", "ids"], 'tensor "ids" is I64'),
            (["q.safetensors", "--tensor", "fc.weight"], "is a lucidq checkpoint"),
            (["model.safetensors", "--tensor", "fc.weight", "--rows", "5:3"], "--rows"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                r = self.run_lucidq("plot", *args, "-o", "x.png", expect=1)
                self.assertIn(message, r.stderr)
                self.assertNotIn("x.png", self.files())

    def test_quantize_plots_directory(self):
        self.model()
        r = self.run_lucidq("quantize", "model.safetensors", "-o", "q.safetensors", "--plots", "plots")
        self.assertIn("wrote 2 plots to plots", r.stdout)
        self.assertEqual(sorted(os.listdir(self.path("plots"))),
                         ["fc.weight.errors.png", "fc.weight.report.png"])
        r = self.run_lucidq("quantize", "model.safetensors", "-o", "q2.safetensors", "--plots", "plots",
                            expect=1)
        self.assertIn("fc.weight.errors.png: already exists", r.stderr)
        self.assertNotIn("q2.safetensors", self.files())


class Demo(CliCase):
    def test_checkpoint_demo_writes_and_rewrites_its_directory(self):
        for _ in range(2):  # the second run replaces the demo's own files
            r = self.run_lucidq("demo", "--section", "checkpoint", "--out", "d")
            self.assertIn("5. The main job: quantize a checkpoint", r.stdout)
            self.assertRegex(r.stdout, r"blk\.0\.ffn_up\.weight +\[512, 256\] +"
                                       r"per_channel_symmetric axis 0 +BF16 -> qint8")
            self.assertIn("Files in d:", r.stdout)
        self.assertEqual(sorted(os.listdir(self.path("d"))),
                         [".lucidq-demo", "model.q4.safetensors", "model.q8.json",
                          "model.q8.safetensors", "model.safetensors", "plots"])
        self.assertEqual(sorted(os.listdir(self.path("d/plots"))),
                         sorted(f"{n}.{kind}.png" for n in ("blk.0.attn_v.weight", "blk.0.ffn_up.weight",
                                                            "output.weight") for kind in ("errors", "report")))
        os.mkdir(self.path("mine"))
        self.write("mine/notes.txt", b"mine")
        r = self.run_lucidq("demo", "--section", "checkpoint", "--out", "mine", expect=1)
        self.assertIn("mine: exists and was not made by lucidq demo", r.stderr)
        self.assertEqual(os.listdir(self.path("mine")), ["notes.txt"])

    def test_demo_model_gets_llama_quantizes_k_quant_mixture(self):
        # The README's GGUF example: rows of 256 and llama's names give real K-quants (q6_K
        # where llama-quantize's Q4_K_M mixture asks for more bits), no legacy fallbacks.
        self.run_lucidq("demo", "--section", "checkpoint", "--out", "work")
        self.run_lucidq("quantize", "work/model.safetensors", "-o", "work/model-f16.gguf", "--type",
                        "F16", "--metadata", "general.architecture=str:llama", "--quiet")
        r = self.run_lucidq("quantize", "work/model-f16.gguf", "-o", "work/model-Q4_K_M.gguf",
                            "--type", "Q4_K_M")
        self.assertEqual(r.stderr, "")
        info = json.loads(self.run_lucidq("inspect", "work/model-Q4_K_M.gguf", "--json").stdout)
        types = {t["name"]: t["type"] for t in info["tensors"]}
        self.assertEqual(types["blk.0.attn_v.weight"], "q6_K")
        self.assertEqual(types["blk.0.ffn_down.weight"], "q6_K")
        self.assertEqual(types["output.weight"], "q6_K")
        for name in ("token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight"):
            self.assertEqual(types[name], "q4_K", name)
        two_d = [t for t in info["tensors"] if len(t["shape"]) == 2]
        self.assertEqual(len(two_d), 9)
        self.assertTrue(all(t["type"] in ("q4_K", "q6_K") for t in two_d), types)
        self.run_lucidq("quantize", "work/model-f16.gguf", "-o", "work/model-Q4_0.gguf", "--type",
                        "Q4_0", "--quiet")


class Progress(CliCase):
    def run_on_terminal(self, *args):
        """Runs lucidq with stderr on a pseudo-terminal; returns (exit code, what it drew)."""
        leader, follower = pty.openpty()
        process = subprocess.Popen([LUCIDQ, *args], cwd=self.dir, stdout=subprocess.DEVNULL,
                                   stderr=follower)
        os.close(follower)
        drawn = b""
        while True:
            ready, _, _ = select.select([leader], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed
                break
            if not chunk:
                break
            drawn += chunk
        os.close(leader)
        return process.wait(), drawn

    def test_bar_on_a_terminal_only_and_not_with_quiet(self):
        self.model()
        code, drawn = self.run_on_terminal("quantize", "model.safetensors", "-o", "q.safetensors")
        self.assertEqual(code, 0)
        self.assertIn(b"100%", drawn)
        self.assertIn(b"[##############################]", drawn)
        self.assertTrue(drawn.endswith(b"\r\x1b[2K"), drawn)  # the line is cleared at the end
        code, drawn = self.run_on_terminal("quantize", "model.safetensors", "-o", "q2.safetensors", "-q")
        self.assertEqual((code, drawn), (0, b""))


def main():
    global LUCIDQ
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--lucidq":
        sys.exit("usage: test_checkpoint_cli.py --lucidq PATH [unittest arguments]")
    LUCIDQ = os.path.abspath(args[1])
    unittest.main(argv=[sys.argv[0], *args[2:]], verbosity=2)


if __name__ == "__main__":
    main()
