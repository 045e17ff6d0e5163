#!/usr/bin/python3
"""Measures the AVX2 tier's performance targets (docs/performance.md) in one run and
prints a scorecard: each target's measured figure, its threshold, and whether it is met.

    python3 bench/avx2_targets.py [--build build/bench] [--keep DIR] [--pin]
    python3 bench/avx2_targets.py --from DIR          # score a kept run again, no timing

It runs bench/gemm_compare.py --quick --threads 1,2 (bench_gemm: lucidq, oneDNN, OpenBLAS, the
int8 peak and the memory bandwidth, then PyTorch) and bench_quantize at 32K and 256M, 1 thread,
in --quantize-runs processes (default 3) whose medians are taken.
Targets are 1-thread figures; the GEMM rows show 2 threads too. Every ratio is within this run:
oneDNN, OpenBLAS, memcpy and the read bandwidth are measured by the same binaries at the same
time. "Per core cycle" divides by the clock the int8 peak loop measured (a dependency chain of
known latency), not the TSC. The run takes 3-5 minutes on 2 cores.

The targets are for CPUs without AVX-512 (AMD Zen 3, Intel before Ice Lake). On a CPU with
AVX-512 or AVX-VNNI the tier is not the one the targets are about; --pin runs the children with
LUCIDQ_ISA=avx2_base, ONEDNN_MAX_CPU_ISA=AVX2 and OPENBLAS_CORETYPE=Haswell, which measures the
same code on a different core (the scorecard says so). The exit status is 0 whether or not the
targets are met: this is a benchmark, not a test; it is 1 only when a run fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (bench_quantize's JSON reader)

PIN = {"LUCIDQ_ISA": "avx2_base", "ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell"}
QUANTIZE_OPS = ("memcpy", "quantize_per_tensor_into", "dequantize_into",
                "fake_quantize_per_tensor_into", "requantize", "quantize_per_group_int4",
                "quantize_per_group_int4_g128")
L1_SIZE, STREAM_SIZE = "32K", "256M"


def gemm_row(gemm, m, n, k, threads):
    """The bench_gemm result of one shape and thread count, or None."""
    for r in gemm.get("results", []):
        if (r["m"], r["n"], r["k"], r["threads"]) == (m, n, k, threads):
            return r
    return None


def per_thread(gemm, key):
    """{threads: entry} of gemm[key] (the peak or the bandwidth list)."""
    return {e["threads"]: e for e in gemm.get(key, [])}


def seconds(row, name):
    t = (row or {}).get("times", {}).get(name)
    return t["median_s"] if t else None


def gemm_figure(gemm, shape, threads, what):
    """One GEMM figure: 'onednn' / 'openblas' (their time / lucidq's), 'peak' (of the int8 peak),
    'cold_int8' / 'cold_int4' (cold M = 1 weight bytes/s over the read bandwidth); None if the
    run lacks it."""
    row = gemm_row(gemm, *shape, threads)
    ours = seconds(row, "lucidq_f32")
    if row is None or ours is None:
        return None
    if what in ("onednn", "openblas"):
        theirs = seconds(row, f"{what}_f32")
        return theirs / ours if theirs else None
    if what == "peak":
        peak = per_thread(gemm, "peak").get(threads)
        m, n, k = shape
        return 2 * m * n * k / ours / 1e9 / peak["gops"] if peak else None
    name = {"cold_int8": "lucidq_f32_cold", "cold_int4": "lucidq_wo_int4_g128_cold"}[what]
    t = row["times"].get(name)
    read = per_thread(gemm, "bandwidth").get(threads, {}).get("read_gbs")
    if not t or not read:
        return None
    return t["weight_bytes"] / t["median_s"] / 1e9 / read


def memcpy_ratio(quant, op, size):
    """op's bytes/s over memcpy's at `size`, 1 thread; None if either is missing."""
    ours, base = quant.get((op, size, 1)), quant.get(("memcpy", size, 1))
    return ours[1] / base[1] if ours and base and base[1] else None


def l1_per_cycle(quant, gemm):
    """f32 -> int8 elements per core cycle at 32K, 1 thread (clock of the int8 peak loop)."""
    rate = quant.get(("quantize_per_tensor_into", L1_SIZE, 1))
    peak = per_thread(gemm, "peak").get(1)
    return rate[0] / (peak["ghz"] * 1e9) if rate and peak and peak.get("ghz") else None


@dataclass
class Target:
    """One target: its figures (higher is better; None when the run did not measure them) and
    the threshold the 1-thread figure must reach (strict: exceed)."""
    name: str
    one: float | None
    two: float | None
    threshold: float
    unit: str  # "x" (speed ratio), "of peak", "of read", "x memcpy" or "per cycle"
    strict: bool = False

    def met(self):
        if self.one is None:
            return None
        return self.one > self.threshold if self.strict else self.one >= self.threshold


def targets(gemm, quant):
    """The AVX2 targets of docs/performance.md, measured in this run: [Target]."""
    big, mid, small = (256, 4096, 4096), (64, 1024, 1024), (16, 4096, 4096)
    gemv = (1, 4096, 4096)

    def gemm_target(name, shape, what, threshold, unit, strict=False):
        return Target(name, gemm_figure(gemm, shape, 1, what), gemm_figure(gemm, shape, 2, what),
                      threshold, unit, strict)

    rows = []
    for shape in (big, mid):
        label = f"int8 GEMM M={shape[0]}, {shape[1]}x{shape[2]}"
        rows.append(gemm_target(f"{label}: speed against oneDNN", shape, "onednn", 1.0, "x"))
        rows.append(gemm_target(f"{label}: of the int8 peak", shape, "peak", 0.65, "of peak"))
        rows.append(gemm_target(f"{label}: speed against OpenBLAS sgemm", shape, "openblas", 2.0,
                                "x"))
    rows.append(gemm_target("int8 GEMM M=16, 4096x4096: speed against oneDNN", small, "onednn",
                            1.0, "x"))
    rows.append(gemm_target("int8 GEMV M=1, 4096x4096: speed against oneDNN (keep the lead)", gemv,
                            "onednn", 1.0, "x", strict=True))
    rows.append(gemm_target("M=1 cold int8 GEMV, 4096x4096: of the read bandwidth", gemv,
                            "cold_int8", 0.85, "of read"))
    rows.append(gemm_target("M=1 cold int4 g128 weight-only, 4096x4096: of the read bandwidth",
                            gemv, "cold_int4", 0.85, "of read"))
    for op, label in (("quantize_per_group_int4_g128", "fused per-group quantize int4 g128"),
                      ("quantize_per_group_int4", "fused per-group quantize int4 g32"),
                      ("requantize", "requantize int32 -> int8")):
        rows.append(Target(f"{label}, {STREAM_SIZE}B", memcpy_ratio(quant, op, STREAM_SIZE), None,
                           0.85, "x memcpy"))
    rows.append(Target(f"quantize f32 -> int8, {L1_SIZE}B (L1): elements per core cycle",
                       l1_per_cycle(quant, gemm), None, 4.0, "per cycle"))
    for op, label in (("quantize_per_tensor_into", "quantize per tensor"),
                      ("dequantize_into", "dequantize"),
                      ("fake_quantize_per_tensor_into", "fake_quantize")):
        rows.append(Target(f"{label}, {STREAM_SIZE}B (keep)", memcpy_ratio(quant, op, STREAM_SIZE),
                           None, 0.9, "x memcpy"))
    return rows


def cell(value, unit):
    if value is None:
        return "not measured"
    return f"{100 * value:.0f} %" if unit == "of peak" else f"{value:.2f}"


def threshold_text(target):
    sign = ">" if target.strict else ">="
    if target.unit == "of peak":
        return f"{sign} {100 * target.threshold:.0f} %"
    return f"{sign} {target.threshold:g}" + ("x" if target.unit.startswith("x") else f" {target.unit}")


def verdict(target):
    met = target.met()
    return "not measured" if met is None else ("**met**" if met else "not met")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def render(gemm, quant, context):
    """The scorecard as markdown; context is bench_quantize's (plus cpu_model and pinned)."""
    machine = gemm.get("machine", {})
    peak = per_thread(gemm, "peak").get(1, {})
    bw = per_thread(gemm, "bandwidth").get(1, {})
    nan = float("nan")
    tier = machine.get("lucidq_isa") or context.get("lucidq_isa", "?")
    features = machine.get("cpu_features") or context.get("lucidq_cpu_features", "?")
    pinned = context.get("pinned", False)
    pin_text = " (pinned: " + ", ".join(f"{k}={v}" for k, v in PIN.items()) + \
        "; the AVX2 code on a core that has more)" if pinned else ""
    lines = [f"CPU: {context.get('cpu_model', '?')}; features: {features}",
             f"lucidq tier: {tier}{pin_text}",
             f"oneDNN: {machine.get('onednn', '?')}; its results: "
             f"{machine.get('onednn_verification', 'not reported')}",
             f"1 thread: int8 peak {peak.get('gops', nan):.1f} GOP/s ({peak.get('kernel', '?')}) at "
             f"{peak.get('ghz', nan):.2f} GHz; bench_gemm memcpy (256 MiB) "
             f"{bw.get('memcpy_gbs', nan):.1f} GB/s, read "
             f"{bw.get('read_gbs', nan):.1f} GB/s"]
    if context.get("quantize_runs", 1) > 1:
        lines.append(f"quantize rows: the median of {context['quantize_runs']} bench_quantize "
                     "processes")
    stream_copy = quant.get(("memcpy", STREAM_SIZE, 1), (0, 0))[1] / 1e9
    if stream_copy and bw.get("memcpy_gbs") and stream_copy < 0.75 * bw["memcpy_gbs"]:
        lines.append(f"note: bench_quantize's memcpy at {STREAM_SIZE}B ({stream_copy:.1f} GB/s, the "
                     f"x memcpy baseline) is slower than bench_gemm's 256 MiB copy "
                     f"({bw['memcpy_gbs']:.1f} GB/s): glibc's memcpy takes non-temporal stores "
                     "only above a size set by the L3, so the two copies stream differently here "
                     "(docs/performance.md, \"The reference machine\")")
    if not pinned and "avx2" not in tier:
        lines.append(f"note: lucidq ran its {tier} tier; these are the AVX2 tier's targets "
                     "(--pin measures the AVX2 code here)")
    lines += ["", "| target | 1 thread | 2 threads | threshold (1 thread) | met |",
              "|---|---|---|---|---|"]
    rows = targets(gemm, quant)
    for t in rows:
        two = cell(t.two, t.unit) if t.two is not None else ""
        lines.append(f"| {t.name} | {cell(t.one, t.unit)} | {two} | {threshold_text(t)} | "
                     f"{verdict(t)} |")
    met = sum(1 for t in rows if t.met())
    unmeasured = sum(1 for t in rows if t.met() is None)
    lines += ["", f"{met} of {len(rows)} targets met ({unmeasured} not measured)."]
    return "\n".join(lines)


def run(args, out_dir, env):
    gemm_json = os.path.join(out_dir, "gemm.json")
    cmd = [sys.executable, os.path.join(HERE, "gemm_compare.py"), "--quick", "--threads", "1,2",
           "--bench", os.path.join(args.build, "bench", "bench_gemm"), "--json", gemm_json]
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    with open(os.path.join(out_dir, "gemm.md"), "w") as report:
        subprocess.run(cmd, check=True, env=env, stdout=report)
    bench = os.path.join(args.build, "bench", "bench_quantize")
    runs = []
    for i in range(args.quantize_runs):
        print(f"$ {bench} --sizes={L1_SIZE},{STREAM_SIZE} --threads=1   "
              f"(process {i + 1} of {args.quantize_runs})", file=sys.stderr, flush=True)
        runs.append(compare.run_ours(bench, f"{L1_SIZE},{STREAM_SIZE}", "1", 5, 0.2,
                                     benchmark_filter="^(" + "|".join(QUANTIZE_OPS) + ")/",
                                     env=env))
    quant = median_over_runs([results for results, _ in runs])
    context = dict(runs[0][1], cpu_model=cpu_model(), pinned=args.pin,
                   quantize_runs=args.quantize_runs)
    with open(os.path.join(out_dir, "quantize.json"), "w") as f:
        json.dump({"context": context, "results": [[*k, *v] for k, v in quant.items()]}, f, indent=1)


def median_over_runs(runs):
    """{key: (elements/s, bytes/s)}: per key, the medians over the runs (bench_quantize processes)
    that measured it. One process's figures move together (its pages, its clock), so on a noisy
    machine the median of a few processes is steadier than any one (docs/performance.md)."""
    keys = {k for results in runs for k in results}
    return {k: tuple(statistics.median(r[k][i] for r in runs if k in r) for i in (0, 1))
            for k in keys}


def load(out_dir):
    """The kept results of a run in out_dir: (gemm, quant, context)."""
    for name in ("gemm.json", "quantize.json"):
        if not os.path.exists(os.path.join(out_dir, name)):
            sys.exit(f"avx2_targets: {out_dir}/{name} not found (expected a folder written by --keep)")
    with open(os.path.join(out_dir, "gemm.json")) as f:
        gemm = json.load(f)
    with open(os.path.join(out_dir, "quantize.json")) as f:
        saved = json.load(f)
    quant = {(op, ws, thr): (items, bps) for op, ws, thr, items, bps in saved["results"]}
    return gemm, quant, saved["context"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(HERE, "..", "build", "bench"),
                   help="the build with -DLUCIDQ_BUILD_BENCH=ON (default: build/bench)")
    p.add_argument("--keep", metavar="DIR", help="keep the raw results (gemm.json, gemm.md, quantize.json) here")
    p.add_argument("--from", dest="from_dir", metavar="DIR", help="score the results kept in DIR")
    p.add_argument("--quantize-runs", type=int, default=3, metavar="N",
                   help="bench_quantize processes whose medians are taken (default 3; the "
                        "per-group rows at 256M move by a third between processes on a VM)")
    p.add_argument("--pin", action="store_true",
                   help="pin lucidq, oneDNN and OpenBLAS to their AVX2 code on a CPU that has more")
    args = p.parse_args()
    if args.quantize_runs < 1:
        p.error(f"--quantize-runs {args.quantize_runs}: expected at least 1")
    if args.from_dir:
        print(render(*load(args.from_dir)))
        return 0
    for binary in ("bench_gemm", "bench_quantize"):
        if not os.path.exists(os.path.join(args.build, "bench", binary)):
            sys.exit(f"avx2_targets: {binary} not found in {args.build}/bench (expected a build "
                     "with -DLUCIDQ_BUILD_BENCH=ON; see bench/README.md)")
    env = dict(os.environ, **(PIN if args.pin else {}))
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        try:
            run(args, out_dir, env)
        except subprocess.CalledProcessError as e:
            print(f"avx2_targets: {' '.join(map(str, e.cmd))} failed with exit status {e.returncode}",
                  file=sys.stderr)
            return 1
        print(render(*load(out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
