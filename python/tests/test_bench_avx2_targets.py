"""bench/avx2_targets.py's scoring: figures from bench_gemm / bench_quantize results, met or not."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import avx2_targets  # noqa: E402


def times(**medians):
    return {name: {"median_s": s, "weight_bytes": 16 << 20} for name, s in medians.items()}


def gemm_results():
    """A made-up run: 1 thread, peak 200 GOP/s at 4 GHz, read 20 GB/s."""
    big = 2 * 256 * 4096 * 4096
    return {
        "machine": {"lucidq_isa": "avx2", "cpu_features": "avx2 fma f16c",
                    "onednn_verification": "INEXACT on this CPU: s32 wrong in 9 of 10 outputs"},
        "peak": [{"threads": 1, "gops": 200.0, "ghz": 4.0, "kernel": "avx2 pair"}],
        "bandwidth": [{"threads": 1, "read_gbs": 20.0, "memcpy_gbs": 30.0}],
        "results": [
            # M = 256 at 70 % of the peak, 1.1x oneDNN, 1.9x OpenBLAS.
            {"m": 256, "n": 4096, "k": 4096, "threads": 1,
             "times": times(lucidq_f32=big / 140e9, onednn_f32=1.1 * big / 140e9,
                            openblas_f32=1.9 * big / 140e9)},
            # M = 1: oneDNN exactly as fast (the lead is not kept); cold int8 GEMV at 0.9 of read.
            {"m": 1, "n": 4096, "k": 4096, "threads": 1,
             "times": times(lucidq_f32=1e-3, onednn_f32=1e-3,
                            lucidq_f32_cold=(16 << 20) / (0.9 * 20e9),
                            lucidq_wo_int4_g128_cold=(16 << 20) / (0.5 * 20e9))},
        ],
    }


def quantize_results():
    return {
        ("memcpy", "256M", 1): (0, 10e9),
        ("quantize_per_group_int4_g128", "256M", 1): (0, 8.6e9),
        ("quantize_per_group_int4", "256M", 1): (0, 8.4e9),
        ("quantize_per_tensor_into", "32K", 1): (16e9, 0),  # 4.0 per cycle at 4 GHz
    }


def by_name(rows, text):
    (row,) = [r for r in rows if r.name.startswith(text)]
    return row


def test_figures_and_verdicts_follow_the_measurements():
    rows = avx2_targets.targets(gemm_results(), quantize_results())
    peak = by_name(rows, "int8 GEMM M=256, 4096x4096: of the int8 peak")
    assert abs(peak.one - 0.70) < 1e-9 and peak.met()
    assert by_name(rows, "int8 GEMM M=256, 4096x4096: speed against oneDNN").met()
    openblas = by_name(rows, "int8 GEMM M=256, 4096x4096: speed against OpenBLAS")
    assert abs(openblas.one - 1.9) < 1e-9 and openblas.met() is False
    assert by_name(rows, "int8 GEMV M=1").met() is False  # equal speed does not keep a lead
    assert by_name(rows, "M=1 cold int8 GEMV").met()
    assert by_name(rows, "M=1 cold int4").met() is False
    assert by_name(rows, "fused per-group quantize int4 g128").met()
    assert by_name(rows, "fused per-group quantize int4 g32").met() is False
    assert by_name(rows, "quantize f32 -> int8").met()  # 4.0 per cycle reaches >= 4


def test_missing_figures_are_not_measured_rather_than_met():
    rows = avx2_targets.targets(gemm_results(), quantize_results())
    for text in ("int8 GEMM M=64", "int8 GEMM M=16", "requantize", "dequantize"):
        for row in rows:
            if row.name.startswith(text):
                assert row.one is None and row.met() is None, row
    report = avx2_targets.render(gemm_results(), quantize_results(),
                                 {"cpu_model": "Test CPU", "pinned": False})
    assert "CPU: Test CPU; features: avx2 fma f16c" in report
    assert "INEXACT on this CPU" in report
    assert "| not measured |" in report
    met = sum(1 for r in rows if r.met())
    assert f"{met} of {len(rows)} targets met" in report


def test_an_unpinned_run_on_another_tier_says_the_targets_are_not_its_own():
    gemm = gemm_results()
    gemm["machine"]["lucidq_isa"] = "avx512"
    report = avx2_targets.render(gemm, quantize_results(), {"cpu_model": "X", "pinned": False})
    assert "lucidq ran its avx512 tier" in report
    pinned = avx2_targets.render(gemm_results(), quantize_results(), {"cpu_model": "X", "pinned": True})
    assert "LUCIDQ_ISA=avx2_base" in pinned


def test_a_stream_copy_much_slower_than_bench_gemms_is_pointed_out():
    # quantize_results' memcpy: 10 GB/s against bench_gemm's 30.
    report = avx2_targets.render(gemm_results(), quantize_results(), {"cpu_model": "X"})
    assert "non-temporal stores" in report
    quant = quantize_results()
    quant[("memcpy", "256M", 1)] = (0, 28e9)
    assert "non-temporal" not in avx2_targets.render(gemm_results(), quant, {"cpu_model": "X"})


def test_quantize_rows_are_the_median_over_processes():
    slow, fast, middle = quantize_results(), quantize_results(), quantize_results()
    slow[("quantize_per_group_int4", "256M", 1)] = (1.0, 5e9)
    fast[("quantize_per_group_int4", "256M", 1)] = (3.0, 9e9)
    middle[("quantize_per_group_int4", "256M", 1)] = (2.0, 7e9)
    del middle[("memcpy", "256M", 1)]  # a key one process lacks: the median of the others
    fast[("memcpy", "256M", 1)] = (0, 14e9)
    quant = avx2_targets.median_over_runs([slow, fast, middle])
    assert quant[("quantize_per_group_int4", "256M", 1)] == (2.0, 7e9)
    assert quant[("memcpy", "256M", 1)] == (0, 12e9)
    report = avx2_targets.render(gemm_results(), quant, {"cpu_model": "X", "quantize_runs": 3})
    assert "the median of 3 bench_quantize processes" in report
    assert "processes" not in avx2_targets.render(gemm_results(), quant, {"cpu_model": "X"})
