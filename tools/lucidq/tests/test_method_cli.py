#!/usr/bin/env python3
"""CLI tests of `lucidq quantize --method` (rtn, gptq, hqq, weighted-rtn), --calibration statistics,
and llama.cpp importance matrices read in place of statistics (and the reverse, for GGUF output).

Run by ctest as `python3 test_method_cli.py --lucidq PATH/TO/lucidq`; standard library only.
"""

import json
import os
import random
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_checkpoint_cli as base  # noqa: E402  (the shared safetensors helpers and CliCase)
import test_gguf_cli as gguf  # noqa: E402  (the tiny llama GGUF, GGUF strings)

N, K, ROWS = 16, 64, 256


def correlated_rows(rng):
    """ROWS rows of K features, AR(1) with rho 0.9 across features."""
    rows = []
    for _ in range(ROWS):
        prev = rng.gauss(0, 1)
        row = [prev]
        for _ in range(K - 1):
            prev = 0.9 * prev + 0.4359 * rng.gauss(0, 1)
            row.append(prev)
        rows.append(row)
    return rows


def f32(values):
    return struct.pack(f"<{len(values)}f", *values)


def f64(values):
    return struct.pack(f"<{len(values)}d", *values)


def statistics_file(rows, name="w", features=K):
    """The documented calibration format for one tensor `name` from `rows`."""
    rows = [r[:features] for r in rows]
    hessian = [sum(r[a] * r[b] for r in rows) for a in range(features) for b in range(features)]
    tensors = [
        (f"{name}.hessian", "F64", [features, features], f64(hessian)),
        (f"{name}.abs_max", "F32", [features], f32([max(abs(r[j]) for r in rows) for j in range(features)])),
        (f"{name}.abs_sum", "F64", [features], f64([sum(abs(r[j]) for r in rows) for j in range(features)])),
        (f"{name}.square_sum", "F64", [features], f64([sum(r[j] ** 2 for r in rows) for j in range(features)])),
        (f"{name}.rows", "I64", [1], struct.pack("<q", len(rows))),
    ]
    return base.safetensors_bytes(tensors, {"format": "lucidq.calibration", "version": "1"})


def moments_file(means):
    """A calibration file of one row per tensor: square_sum = the given mean squares, rows = 1
    (so square_sum / rows is exactly each value), no Hessian. `means`: {name: [float32 values]}."""
    tensors = []
    for name, values in means.items():
        k = len(values)
        roots = [v ** 0.5 for v in values]
        tensors += [(f"{name}.abs_max", "F32", [k], f32(roots)),
                    (f"{name}.abs_sum", "F64", [k], f64(roots)),
                    (f"{name}.square_sum", "F64", [k], f64(values)),
                    (f"{name}.rows", "I64", [1], struct.pack("<q", 1))]
    return base.safetensors_bytes(tensors, {"format": "lucidq.calibration", "version": "1"})


def legacy_imatrix(entries, ncall=2):
    """llama.cpp's legacy .dat: per tensor ncall and ncall * values (divided back exactly)."""
    out = struct.pack("<i", len(entries))
    for name, values in entries.items():
        out += struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", ncall, len(values))
        out += f32([ncall * v for v in values])
    return out


def gguf_imatrix(entries, count=4.0):
    """llama-imatrix's GGUF format: per tensor W, W.in_sum2 = count * values (ne [K, 1]) and
    W.counts = [count] (ne [1, 1]), so in_sum2 / counts is exactly each value (count a power of 2)."""
    kvs = [gguf.gstr("imatrix.datasets") + struct.pack("<IIQ", 9, 8, 1) + gguf.gstr("calib.txt"),
           gguf.gstr("imatrix.chunk_count") + struct.pack("<II", 4, 10),
           gguf.gstr("imatrix.chunk_size") + struct.pack("<II", 4, 512)]
    tensors = []
    for name, values in entries.items():
        tensors.append((f"{name}.in_sum2", [len(values), 1], [count * v for v in values]))
        tensors.append((f"{name}.counts", [1, 1], [count]))
    head = b"GGUF" + struct.pack("<Iqq", 3, len(tensors), len(kvs)) + b"".join(kvs)
    infos, data = b"", b""
    for name, ne, values in tensors:
        infos += gguf.gstr(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}q", *ne)
        infos += struct.pack("<IQ", 0, len(data))
        blob = f32(values)
        data += blob + b"\0" * (-len(blob) % 32)
    header = head + infos
    return header + b"\0" * (-len(header) % 32) + data


def float32_means(rng, k):
    """k positive mean squares, exactly representable in float32 (a 16-bit mantissa)."""
    return [rng.randint(1, 1 << 16) / (1 << 12) for _ in range(k)]


class Method(base.CliCase):
    def setUp(self):
        super().setUp()
        rng = random.Random(base.seed())
        weight = [rng.gauss(0, 0.05) for _ in range(N * K)]
        self.write("model.safetensors", base.safetensors_bytes([("w", "F32", [N, K], f32(weight))]))
        self.write("stats.safetensors", statistics_file(correlated_rows(rng)))

    def quantize(self, *extra, expect=0):
        return self.run_lucidq("quantize", "model.safetensors", "-o", "q.safetensors", "-f",
                               "--dtype", "quint4", "--scheme", "per_channel_affine",
                               "--group-size", "32", "--json", "-", "-q", *extra, expect=expect)

    def report(self, *extra):
        return json.loads(self.quantize(*extra).stdout)["tensors"][0]

    def test_gptq_lowers_the_output_error_proxy_below_rtn(self):
        rtn = self.report("--calibration", "stats.safetensors")
        gptq = self.report("--method", "gptq", "--calibration", "stats.safetensors")
        self.assertNotIn("method", rtn)
        self.assertEqual(gptq["method"], "gptq")
        print(f"[ cli ] tr(dW H dW^T): RTN {rtn['output_error_proxy']:.4g}, "
              f"GPTQ {gptq['output_error_proxy']:.4g}", file=sys.stderr)
        self.assertLess(gptq["output_error_proxy"], 0.5 * rtn["output_error_proxy"])
        self.assertGreater(gptq["mse"], rtn["mse"])  # GPTQ trades weight error for output error
        text = self.run_lucidq("quantize", "model.safetensors", "-o", "t.safetensors", "--method",
                               "gptq", "--calibration", "stats.safetensors").stdout
        self.assertIn("tr(dW H dW^T)", text)
        self.assertIn("(gptq)", text)

    def test_hqq_and_rtn_need_no_data(self):
        self.assertEqual(self.report("--method", "hqq")["method"], "hqq")
        rtn = self.report("--method", "rtn")
        self.assertNotIn("output_error_proxy", rtn)

    def test_weighted_rtn_uses_the_second_moments(self):
        r = self.report("--method", "weighted-rtn", "--calibration", "stats.safetensors")
        self.assertEqual(r["method"], "weighted-rtn")

    def test_bad_method_and_statistics_give_one_clear_error(self):
        cases = [
            (("--method", "gptq"), "needs calibration statistics"),
            (("--method", "nope"), "method 'nope' is not known"),
            (("--method", "gptq", "--calibration", "model.safetensors"), "expected 'lucidq.calibration'"),
        ]
        rng = random.Random(base.seed())
        self.write("other.safetensors", statistics_file(correlated_rows(rng), name="v"))
        cases.append((("--method", "gptq", "--calibration", "other.safetensors"),
                      "has no statistics for tensor w"))
        self.write("narrow.safetensors", statistics_file(correlated_rows(rng), features=32))
        cases.append((("--method", "gptq", "--calibration", "narrow.safetensors"),
                      "statistics for 32 input features"))
        for extra, message in cases:
            with self.subTest(extra=extra):
                result = self.quantize(*extra, expect=1)
                self.assertRegex(result.stderr, "^lucidq: error: ")
                self.assertIn(message, result.stderr)
                self.assertNotIn("q.safetensors", self.files())


class Importance(base.CliCase):
    """weighted-rtn from llama.cpp imatrix files, and lucidq statistics as GGUF's imatrix."""

    def setUp(self):
        super().setUp()
        self.rng = random.Random(base.seed())
        weight = [self.rng.gauss(0, 0.05) for _ in range(N * K)]
        self.write("model.safetensors", base.safetensors_bytes([("w", "F32", [N, K], f32(weight))]))
        self.means = float32_means(self.rng, K)

    def quantize(self, calibration, out="q.safetensors", expect=0, method="weighted-rtn"):
        return self.run_lucidq("quantize", "model.safetensors", "-o", out, "--dtype", "qint4",
                               "--group-size", "32", "--method", method, "--calibration",
                               calibration, "-q", expect=expect)

    def weight_bytes(self, path):
        header, _, data = base.read_safetensors(self.path(path))
        return {name: data[e["data_offsets"][0]:e["data_offsets"][1]] for name, e in header.items()}

    def test_every_file_kind_gives_the_same_weighted_rtn_codes(self):
        self.write("stats.safetensors", moments_file({"w": self.means}))
        self.write("imatrix.dat", legacy_imatrix({"w": self.means}))
        self.write("imatrix.gguf", gguf_imatrix({"w": self.means}))
        self.write("flat.dat", legacy_imatrix({"w": [1.0] * K}))
        outputs = {}
        for calibration in ["stats.safetensors", "imatrix.dat", "imatrix.gguf", "flat.dat"]:
            out = calibration.replace(".", "_") + ".q.safetensors"
            self.quantize(calibration, out)
            outputs[calibration] = self.weight_bytes(out)
        self.assertEqual(outputs["imatrix.dat"], outputs["stats.safetensors"])
        self.assertEqual(outputs["imatrix.gguf"], outputs["stats.safetensors"])
        # The importance matters: uneven weights choose other scales than flat ones.
        self.assertNotEqual(outputs["flat.dat"], outputs["stats.safetensors"])

    def test_imatrix_errors_name_the_tensor_size_and_method(self):
        self.write("other.dat", legacy_imatrix({"v": self.means, "u": self.means}))
        self.write("narrow.gguf", gguf_imatrix({"w": self.means[:32]}))
        self.write("imatrix.dat", legacy_imatrix({"w": self.means}))
        self.write("junk.dat", b"\x05\x00\x00\x00abc")
        cases = [
            ("other.dat", "weighted-rtn", "has no entry for tensor w"),
            ("other.dat", "weighted-rtn", "2 entries, the first 'u'"),
            ("narrow.gguf", "weighted-rtn", "the imatrix entry for tensor w holds 32 values; "
                                            "expected 64, one per input column of its shape [16, 64]"),
            ("imatrix.dat", "gptq", "only --method weighted-rtn uses; expected lucidq calibration "
                                    "statistics with the Hessian"),
            ("imatrix.dat", "rtn", "only --method weighted-rtn uses"),
            ("junk.dat", "weighted-rtn", "junk.dat: legacy imatrix ends at byte 7"),
            ("junk.dat", "weighted-rtn", "is neither safetensors nor GGUF, so it was read as a "
                                         "legacy llama.cpp imatrix"),
        ]
        for calibration, method, message in cases:
            with self.subTest(calibration=calibration, method=method):
                result = self.quantize(calibration, expect=1, method=method)
                self.assertRegex(result.stderr, "^lucidq: error: ")
                self.assertIn(message, result.stderr)
                self.assertNotIn("q.safetensors", self.files())

    def test_gguf_quantize_takes_lucidq_statistics_as_its_imatrix(self):
        model = self.write("tiny.gguf", gguf.tiny_llama(self.rng))
        names = ["token_embd.weight", "blk.0.attn_v.weight", "blk.0.ffn_down.weight", "output.weight"]
        means = {name: float32_means(self.rng, 256) for name in names}
        self.write("stats.safetensors", moments_file(means))
        self.write("imatrix.dat", legacy_imatrix(means))
        data = {}
        for imatrix in ["imatrix.dat", "stats.safetensors", None]:
            out = f"{imatrix}.gguf"
            extra = ["--imatrix", imatrix] if imatrix else []
            result = self.run_lucidq("quantize", model, "-o", out, "--type", "Q4_K_M", *extra)
            if imatrix:
                self.assertIn("; imatrix", result.stdout)
            info = json.loads(self.run_lucidq("inspect", out, "--json").stdout)
            with open(self.path(out), "rb") as f:
                data[imatrix] = f.read()[info["data_offset"]:]
            if imatrix == "stats.safetensors":
                keys = {m["key"]: m["value"] for m in info["metadata"]}
                self.assertEqual(keys["quantize.imatrix.file"], "stats.safetensors")
                self.assertEqual(keys["quantize.imatrix.entries_count"], 4)
        self.assertEqual(data["stats.safetensors"], data["imatrix.dat"])
        self.assertNotEqual(data["stats.safetensors"], data[None])


if __name__ == "__main__":
    base.main()
