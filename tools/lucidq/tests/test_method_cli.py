#!/usr/bin/env python3
"""CLI tests of `lucidq quantize --method` (rtn, gptq, hqq, weighted-rtn) and --calibration statistics.

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


if __name__ == "__main__":
    base.main()
