#!/usr/bin/python3
"""Runs bench_gemm (lucidq's int8 GEMM, oneDNN matmul, OpenBLAS sgemm, the int8 peak and
memory bandwidth), then PyTorch's quantized linear ops on the same shapes and thread counts,
and prints one markdown report: medians, GOP/s, fraction of the int8 peak and speed ratios.

    python3 bench/gemm_compare.py [--quick] [--shapes FILE] [--threads 1,2] [--reps 5]
        [--min-time 0.2] [--bench PATH] [--json OUT] [--from-json FILE]

PyTorch (Debian's python3-torch 1.13) runs torch.ops.quantized.linear (quint8 activations,
per-channel qint8 weights prepacked once, quint8 output) and linear_dynamic (float32
activations, per-tensor dynamic quantization, float32 output) with the 'onednn' quantized
engine when it has one (else fbgemm, else qnnpack: the report names the engine). They are
compared with lucidq's gemm() to uint8 (requantized) and gemm_dynamic (per-tensor), the same
work. Times: one warm-up call, then --reps samples of >= --min-time s, median per call.
Ratios are speeds: their time / lucidq's time, > 1 when lucidq is faster.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def find_bench(path):
    if path:
        return path
    root = os.path.dirname(HERE)
    for build in ("build/release", "build/h2", "build"):
        candidate = os.path.join(root, build, "bench", "bench_gemm")
        if os.path.exists(candidate):
            return candidate
    sys.exit("gemm_compare: bench_gemm not found; build with -DLUCIDQ_BUILD_BENCH=ON and pass --bench")


def run_cpp(args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench_gemm.json")
        cmd = [find_bench(args.bench), "--json", out, "--threads", args.threads,
               "--reps", str(args.reps)]
        if args.min_time is not None:
            cmd += ["--min-time", str(args.min_time)]
        if args.quick:
            cmd.append("--quick")
        for f in args.shapes or []:
            cmd += ["--shapes", f]
        if args.no_cold:
            cmd.append("--no-cold")
        print("$", " ".join(cmd), file=sys.stderr, flush=True)
        # bench_gemm's own table goes to stderr here, so stdout stays the markdown report.
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        with open(out) as f:
            return json.load(f)


def median_time(fn, reps, min_time):
    """One warm-up call, then reps samples of >= min_time s; median seconds per call."""
    fn()
    samples = []
    for _ in range(reps):
        calls = 0
        start = time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        samples.append(elapsed / calls)
    return statistics.median(samples)


def run_torch(data, reps, min_time):
    """{(m, n, k, threads): {"torch_linear": s, "torch_dynamic": s}} and the engine used."""
    try:
        import torch
    except ImportError:
        print("gemm_compare: no torch; the PyTorch columns stay empty", file=sys.stderr)
        return {}, None
    engines = torch.backends.quantized.supported_engines
    engine = next((e for e in ("onednn", "fbgemm", "qnnpack") if e in engines), None)
    if engine is None:
        return {}, None
    torch.backends.quantized.engine = engine
    gen = torch.Generator().manual_seed(12345)
    results = {}
    shapes = sorted({(r["m"], r["n"], r["k"]) for r in data["results"]},
                    key=lambda s: (s[1], s[2], s[0]))
    threads_list = sorted({r["threads"] for r in data["results"]})
    for m, n, k in shapes:
        w = torch.randint(-127, 128, (n, k), dtype=torch.int8, generator=gen)
        scales = (torch.rand(n, dtype=torch.float64, generator=gen) * 1.5 + 0.5) / 127
        wq = torch._make_per_channel_quantized_tensor(w, scales, torch.zeros(n, dtype=torch.long), 0)
        packed = torch.ops.quantized.linear_prepack(wq, None)
        a = torch.randint(0, 256, (m, k), dtype=torch.uint8, generator=gen)
        xq = torch._make_per_tensor_quantized_tensor(a, 0.05, 128)
        xf = torch.dequantize(xq)
        y = torch.ops.quantized.linear(xq, packed, 1.0, 128)  # output scale from the real range
        out_scale = max(float(torch.dequantize(y).abs().max()), 1e-3) / 127
        for threads in threads_list:
            torch.set_num_threads(threads)
            linear = median_time(lambda: torch.ops.quantized.linear(xq, packed, out_scale, 128),
                                 reps, min_time)
            dynamic = median_time(lambda: torch.ops.quantized.linear_dynamic(xf, packed, False),
                                  reps, min_time)
            results[(m, n, k, threads)] = {"torch_linear": linear, "torch_dynamic": dynamic}
            print(f"torch {engine} {m} {n} {k} threads {threads}: linear {linear * 1e3:.3f} ms, "
                  f"dynamic {dynamic * 1e3:.3f} ms", file=sys.stderr, flush=True)
    return results, f"{engine} (torch {torch.__version__})"


def fmt_ms(t):
    return f"{t * 1e3:.3f}" if t else ""


def ratio(theirs, ours):
    return f"{theirs / ours:.2f}" if theirs and ours else ""


def report(data, torch_times, engine):
    lines = []
    machine = data["machine"]
    lines.append(f"CPU features: {machine.get('cpu_features', '?')}; lucidq tier "
                 f"{machine.get('lucidq_isa', '?')}; L3 {int(float(machine.get('l3_bytes', 0))) >> 20} MiB; "
                 f"oneDNN {machine.get('onednn', 'not built')}; OpenBLAS "
                 f"{machine.get('openblas', 'not built')}; PyTorch quantized engine "
                 f"{engine or 'none'}. Load average at start {machine.get('load_average_start')}, "
                 f"at the end of the C++ part {machine.get('load_average_end')}. "
                 f"{data['reps']} samples of >= {data['min_time_s']} s each, medians"
                 + (f"; every figure the median over {data['runs']} runs." if data.get("runs") else "."))
    verification = machine.get("onednn_verification")
    if verification:
        lines.append("")
        lines.append(f"oneDNN's results against the exact product: {verification}"
                     + ("" if verification == "exact" else
                        " (its columns time wrong results; lucidq's are exact)."))
    lines.append("")
    lines.append("| threads | int8 peak kernel | clock GHz | int8 MAC/cycle/core | peak GOP/s (best) | "
                 "peak GOP/s (median sample) | memcpy GB/s | read GB/s | read GB/s (best) |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    bw = {b["threads"]: b for b in data["bandwidth"]}
    peaks = {p["threads"]: p for p in data["peak"]}
    for t, p in sorted(peaks.items()):
        b = bw.get(t, {})
        lines.append(f"| {t} | {p['kernel']} | {p['ghz']:.2f} | {p['mac_per_cycle']:.1f} | "
                     f"{p['gops']:.0f} | {p.get('median_gops', float('nan')):.0f} | "
                     f"{b.get('memcpy_gbs', 0):.1f} | {b.get('read_gbs', 0):.1f} | "
                     f"{b.get('best_read_gbs', float('nan')):.1f} |")
    lines.append("")
    lines.append("Times in ms (median per call). GOP/s = 2·M·N·K / t of lucidq f32. Speed ratios = "
                 "their time / lucidq's time (> 1: lucidq faster): oneDNN and OpenBLAS against "
                 "lucidq u8×s8→f32, torch linear against lucidq →u8, torch dynamic against "
                 "lucidq gemm_dynamic.")
    lines.append("")
    lines.append("| M | N | K | thr | lucidq f32 | GOP/s | of peak | lucidq s32 | lucidq u8 | lucidq dyn "
                 "| oneDNN f32 | OpenBLAS f32 | torch linear | torch dyn "
                 "| ×oneDNN | ×OpenBLAS | ×torch linear | ×torch dyn |")
    lines.append("|" + "---|" * 18)
    rows = sorted(data["results"], key=lambda r: (r["n"], r["k"], r["m"], r["threads"]))
    for r in rows:
        t = {name: v["median_s"] for name, v in r["times"].items()}
        t.update(torch_times.get((r["m"], r["n"], r["k"], r["threads"]), {}))
        ours = t.get("lucidq_f32")
        gops = 2 * r["m"] * r["n"] * r["k"] / ours / 1e9 if ours else 0
        peak = peaks.get(r["threads"], {}).get("gops", 0)
        lines.append(
            f"| {r['m']} | {r['n']} | {r['k']} | {r['threads']} | {fmt_ms(ours)} | {gops:.1f} | "
            f"{100 * gops / peak:.0f}% | {fmt_ms(t.get('lucidq_s32'))} | {fmt_ms(t.get('lucidq_u8'))} | "
            f"{fmt_ms(t.get('lucidq_dynamic'))} | {fmt_ms(t.get('onednn_f32'))} | "
            f"{fmt_ms(t.get('openblas_f32'))} | {fmt_ms(t.get('torch_linear'))} | "
            f"{fmt_ms(t.get('torch_dynamic'))} | {ratio(t.get('onednn_f32'), ours)} | "
            f"{ratio(t.get('openblas_f32'), ours)} | {ratio(t.get('torch_linear'), t.get('lucidq_u8'))} | "
            f"{ratio(t.get('torch_dynamic'), t.get('lucidq_dynamic'))} |")
    m1 = [r for r in rows if r["m"] == 1]
    if m1:
        wo = any("lucidq_wo_int4_g128" in r["times"] for r in m1)
        lines.append("")
        lines.append("M = 1 (decoding): weight GB/s = bytes of one weight copy as each library "
                     "stores it / median time. hot: one weight reused (L3-resident when it fits in "
                     "L3); cold: a rotation through separately packed copies totalling > 2.5 × L3. "
                     "read = memchr read bandwidth, memcpy = memcpy bandwidth (bytes read + "
                     "written) at that thread count; \"of read\" / \"of memcpy\" = cold weight GB/s "
                     "over them. sgemm / sgemv: OpenBLAS float32 (4 bytes per weight).")
        lines.append("")
        head = ("| N | K | thr | read GB/s | memcpy GB/s | lucidq hot | lucidq cold | cold of read | oneDNN hot | "
                "oneDNN cold | sgemm hot | sgemm cold | sgemv hot | sgemv cold |")
        if wo:
            head += (" wo int4 hot | wo int4 cold | wo int8 hot | wo int8 cold | int4 cold of read | "
                     "int8 cold of read | int4 cold of memcpy | int8 cold of memcpy | "
                     "int4 ×int8 GEMV hot | int4 ×int8 GEMV cold |")
        lines.append(head)
        lines.append("|" + "---|" * (head.count("|") - 1))

        def gbs(r, name):
            v = r["times"].get(name)
            return v["weight_bytes"] / v["median_s"] / 1e9 if v else float("nan")

        for r in m1:
            read = bw.get(r["threads"], {}).get("read_gbs", 0)
            copy = bw.get(r["threads"], {}).get("memcpy_gbs", 0)
            cold = gbs(r, "lucidq_f32_cold")
            line = (f"| {r['n']} | {r['k']} | {r['threads']} | {read:.1f} | {copy:.1f} | "
                    f"{gbs(r, 'lucidq_f32'):.3g} | "
                    f"{cold:.3g} | {cold / read if read else float('nan'):.2f} | {gbs(r, 'onednn_f32'):.3g} | "
                    f"{gbs(r, 'onednn_f32_cold'):.3g} | {gbs(r, 'openblas_f32'):.3g} | "
                    f"{gbs(r, 'openblas_f32_cold'):.3g} | {gbs(r, 'openblas_gemv'):.3g} | "
                    f"{gbs(r, 'openblas_gemv_cold'):.3g} |")
            if wo:
                t = {name: v["median_s"] for name, v in r["times"].items()}
                line += (f" {gbs(r, 'lucidq_wo_int4_g128'):.3g} | {gbs(r, 'lucidq_wo_int4_g128_cold'):.3g} | "
                         f"{gbs(r, 'lucidq_wo_int8_pc'):.3g} | {gbs(r, 'lucidq_wo_int8_pc_cold'):.3g} | "
                         f"{gbs(r, 'lucidq_wo_int4_g128_cold') / read if read else float('nan'):.2f} | "
                         f"{gbs(r, 'lucidq_wo_int8_pc_cold') / read if read else float('nan'):.2f} | "
                         f"{gbs(r, 'lucidq_wo_int4_g128_cold') / copy if copy else float('nan'):.2f} | "
                         f"{gbs(r, 'lucidq_wo_int8_pc_cold') / copy if copy else float('nan'):.2f} | "
                         f"{ratio(t.get('lucidq_f32'), t.get('lucidq_wo_int4_g128'))} | "
                         f"{ratio(t.get('lucidq_f32_cold'), t.get('lucidq_wo_int4_g128_cold'))} |")
            lines.append(line)
    if any("lucidq_wo_int4_g128" in r["times"] for r in rows):
        lines.append("")
        lines.append("Weight-only GEMM (float32 x; weights int4 in groups of 128, symmetric, or int8 "
                     "per-channel), ms: the default path (int8 activations on AVX512-VNNI CPUs) and "
                     "the float32-activation path (fx), against lucidq's int8 GEMM (u8 activations, "
                     "f32 output) and OpenBLAS on float32 weights: sgemm, and sgemv for M = 1. "
                     "×int8: int8 GEMM time / int4 time (= the GOP/s fraction); ×OpenBLAS: OpenBLAS "
                     "time / weight-only time (sgemv for M = 1).")
        lines.append("")
        lines.append("| M | N | K | thr | wo int4 g128 | wo int8 pc | int4 fx | int8 fx | lucidq int8 f32 | "
                     "OpenBLAS sgemm | OpenBLAS sgemv | int4 ×int8 | ×OpenBLAS (int4) | ×OpenBLAS (int8) |")
        lines.append("|" + "---|" * 14)
        for r in rows:
            t = {name: v["median_s"] for name, v in r["times"].items()}
            blas = t.get("openblas_gemv") if r["m"] == 1 else t.get("openblas_f32")
            lines.append(f"| {r['m']} | {r['n']} | {r['k']} | {r['threads']} | "
                         f"{fmt_ms(t.get('lucidq_wo_int4_g128'))} | {fmt_ms(t.get('lucidq_wo_int8_pc'))} | "
                         f"{fmt_ms(t.get('lucidq_wo_int4_g128_fx'))} | {fmt_ms(t.get('lucidq_wo_int8_pc_fx'))} | "
                         f"{fmt_ms(t.get('lucidq_f32'))} | {fmt_ms(t.get('openblas_f32'))} | "
                         f"{fmt_ms(t.get('openblas_gemv'))} | "
                         f"{ratio(t.get('lucidq_f32'), t.get('lucidq_wo_int4_g128'))} | "
                         f"{ratio(blas, t.get('lucidq_wo_int4_g128'))} | "
                         f"{ratio(blas, t.get('lucidq_wo_int8_pc'))} |")
    impls = sorted({r.get("onednn_impl", "") for r in rows} - {""})
    if impls:
        lines.append("")
        lines.append("oneDNN matmul implementations used: " + ", ".join(f"`{i}`" for i in impls) + ".")
    return "\n".join(lines)


def merge_runs(runs):
    """One run's worth of data from several: every time, bandwidth, peak and torch figure is the
    median over the runs that have it (a shared machine's slow phases hit single runs)."""
    if len(runs) == 1:
        return runs[0]
    data = dict(runs[0])
    data["machine"] = dict(runs[0]["machine"])
    for key in ("load_average_start", "load_average_end"):
        data["machine"][key] = " / ".join(str(r["machine"].get(key)) for r in runs)
    data["runs"] = len(runs)

    def merged(rows_per_run, key_of, combine):
        """The rows of every run grouped by key_of, each group made one row by combine."""
        groups = {}
        for rows in rows_per_run:
            for row in rows:
                groups.setdefault(key_of(row), []).append(row)
        return [combine(group) for group in groups.values()]

    def numeric_medians(group):
        row = dict(group[0])
        for field, value in group[0].items():
            if isinstance(value, float):
                row[field] = statistics.median(g[field] for g in group if field in g)
        return row

    def time_medians(group):
        times = {}
        for name in group[0]["times"]:
            samples = [g["times"][name] for g in group if name in g["times"]]
            times[name] = dict(samples[0], median_s=statistics.median(t["median_s"] for t in samples),
                               runs=len(samples))
        return dict(group[0], times=times)

    by_threads = lambda row: row["threads"]
    by_shape = lambda row: (row["m"], row["n"], row["k"], row["threads"])
    data["bandwidth"] = merged([r["bandwidth"] for r in runs], by_threads, numeric_medians)
    data["peak"] = merged([r["peak"] for r in runs], by_threads, numeric_medians)
    data["results"] = merged([r["results"] for r in runs], by_shape, time_medians)
    if all("torch" in r for r in runs):
        data["torch"] = merged([r["torch"] for r in runs], by_shape, numeric_medians)
    return data


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", help="path to bench_gemm")
    p.add_argument("--quick", action="store_true", help="bench/shapes/quick.txt, short samples")
    p.add_argument("--shapes", action="append", help="shapes file (repeatable; default llm.txt)")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--min-time", type=float, default=None, help="seconds per sample (default 0.2, quick 0.05)")
    p.add_argument("--no-cold", action="store_true", help="skip the cold-weight M = 1 runs")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--from-json", nargs="+", metavar="FILE",
                   help="reuse bench_gemm --json files (or this script's --json output, torch "
                   "times included) instead of running it; several runs are combined cell by "
                   "cell into the median of their medians")
    p.add_argument("--rerun-torch", action="store_true", help="with --from-json: time torch again")
    p.add_argument("--json", help="write the combined results (bench_gemm JSON + torch) here")
    args = p.parse_args()

    if args.from_json:
        runs = []
        for path in args.from_json:
            with open(path) as f:
                runs.append(json.load(f))
        data = merge_runs(runs)
    else:
        data = run_cpp(args)
    min_time = args.min_time if args.min_time is not None else (0.05 if args.quick else 0.2)
    if args.from_json and "torch" in data and not args.rerun_torch:
        # A combined file written by --json: print its report again without re-timing.
        engine = data.get("torch_engine")
        torch_times = {(t["m"], t["n"], t["k"], t["threads"]):
                       {"torch_linear": t["torch_linear"], "torch_dynamic": t["torch_dynamic"]}
                       for t in data["torch"]}
    elif args.no_torch:
        torch_times, engine = {}, None
    else:
        torch_times, engine = run_torch(data, args.reps, min_time)
    if args.json:
        combined = dict(data)
        combined["torch_engine"] = engine
        combined["torch"] = [dict(m=k[0], n=k[1], k=k[2], threads=k[3], **v) for k, v in torch_times.items()]
        with open(args.json, "w") as f:
            json.dump(combined, f, indent=1)
    print(report(data, torch_times, engine))


if __name__ == "__main__":
    main()
