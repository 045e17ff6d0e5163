#!/usr/bin/python3
"""Runs lucidq's bench_quantize and PyTorch at the same working sets in one run and
prints a markdown table of medians: elements/s, GB/s (bytes read + written) and the
ratios ours / memcpy (or ours / read for reductions) and ours / PyTorch.

    python3 bench/compare.py --threads 1,2 --sizes 32K,512K,8M,256M [--bench PATH]

The working set of one call is the bytes it reads plus the bytes it writes, as in
bench_quantize.cpp; PyTorch runs the same element counts. Needs /usr/bin/python3 with
torch (Debian's python3-torch); without torch the PyTorch columns stay empty.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# op -> (bytes per element of one call, the bandwidth baseline, the PyTorch op)
OPS = {
    "quantize_per_tensor_into": (5, "memcpy", None),
    "quantize_per_tensor": (5, "memcpy", "quantize_per_tensor"),
    "quantize_per_channel": (5, "memcpy", "quantize_per_channel"),
    "dequantize_into": (5, "memcpy", None),
    "dequantize": (5, "memcpy", "dequantize"),
    "fake_quantize_per_tensor_into": (8, "memcpy", None),
    "fake_quantize_per_tensor": (8, "memcpy", "fake_quantize_per_tensor_affine"),
    "minmax": (4, "read", "aminmax"),
    "minmax_per_channel": (4, "read", "aminmax_per_channel"),
    "requantize": (5, "memcpy", None),
    "quantize_per_group_int4": (4.5, "memcpy", None),
    "quantize_per_group_int4_g128": (4.5, "memcpy", None),
}


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def run_ours(bench, sizes, threads, repetitions, min_time, benchmark_filter=None, env=None):
    """bench_quantize's medians: {(op, size, threads): (elements/s, bytes/s)}, and its context.
    benchmark_filter (a regex of op names) and env (the child's environment) are optional."""
    cmd = [bench, f"--sizes={sizes}", f"--threads={threads}", "--benchmark_format=json",
           f"--benchmark_repetitions={repetitions}", f"--benchmark_min_time={min_time}",
           "--benchmark_report_aggregates_only=true"]
    if benchmark_filter:
        cmd.append(f"--benchmark_filter={benchmark_filter}")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    data = json.loads(out)
    results = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].replace("/real_time", "")
        op, ws, thr = name.split("/")
        results[(op, ws.split(":")[1], int(thr.split(":")[1]))] = (
            b["items_per_second"], b["bytes_per_second"])
    return results, data["context"]


def median_rate(fn, elements, repetitions, min_time):
    """Median over repetitions of elements/s; each repetition runs fn for >= min_time s."""
    fn()  # warm-up (allocations, page faults)
    rates = []
    for _ in range(repetitions):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        rates.append(calls * elements / elapsed)
    return statistics.median(rates)


def run_torch(sizes, threads, repetitions, min_time):
    try:
        import torch
    except ImportError:
        print("compare.py: torch not importable; PyTorch columns left empty", file=sys.stderr)
        return {}, "none"
    results = {}
    for thr in threads:
        torch.set_num_threads(thr)
        for ws_text in sizes:
            ws = parse_size(ws_text)
            n = ws // 5
            x = torch.randn(n)
            q = torch.quantize_per_tensor(x, 0.02, 3, torch.qint8)
            channels = 64
            xc = torch.randn(n // channels * channels).reshape(channels, -1)
            scales = torch.full((channels,), 0.02, dtype=torch.double)
            zeros = torch.zeros(channels, dtype=torch.long)
            xf = torch.randn(ws // 8)
            xm = torch.randn(ws // 4)
            xmc = torch.randn(ws // 4 // 256 * 256).reshape(-1, 256)
            cases = {
                "quantize_per_tensor": (lambda: torch.quantize_per_tensor(x, 0.02, 3, torch.qint8), n),
                "quantize_per_channel": (
                    lambda: torch.quantize_per_channel(xc, scales, zeros, 0, torch.qint8), xc.numel()),
                "dequantize": (lambda: q.dequantize(), n),
                "fake_quantize_per_tensor_affine": (
                    lambda: torch.fake_quantize_per_tensor_affine(xf, 0.02, 3, -128, 127), xf.numel()),
                "aminmax": (lambda: torch.aminmax(xm), xm.numel()),
                "aminmax_per_channel": (lambda: torch.aminmax(xmc, dim=0), xmc.numel()),
            }
            for op, (fn, elements) in cases.items():
                results[(op, ws_text, thr)] = median_rate(fn, elements, repetitions, min_time)
    return results, torch.__version__


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--sizes", default="32K,512K,8M,256M")
    candidates = [os.path.join(here, "..", "build", d, "bench", "bench_quantize")
                  for d in ("release", "kernels", ".")]
    parser.add_argument("--bench", default=next((c for c in candidates if os.path.exists(c)),
                                                candidates[0]),
                        help="the bench_quantize binary (default: build/release/bench/...)")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.2)
    args = parser.parse_args()
    sizes = args.sizes.split(",")
    threads = [int(t) for t in args.threads.split(",")]

    ours, context = run_ours(args.bench, args.sizes, args.threads, args.repetitions, args.min_time)
    torch_rates, torch_version = run_torch(sizes, threads, args.repetitions, args.min_time)
    tsc_hz = float(context.get("tsc_hz", "0"))

    print(f"lucidq tier: {context.get('lucidq_isa')}; CPU features: "
          f"{context.get('lucidq_cpu_features')}; {context.get('num_cpus')} CPUs at "
          f"{context.get('mhz_per_cpu')} MHz; TSC {tsc_hz / 1e9:.3f} GHz; PyTorch {torch_version}")
    print(f"medians of {args.repetitions} repetitions; GB/s = 1e9 bytes (read + written) per second\n")
    print("| op | working set | threads | ours Melem/s | ours GB/s | baseline GB/s | ours / baseline "
          "| PyTorch GB/s | ours / PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|")
    for thr in threads:
        for ws in sizes:
            for op, (bytes_per_element, baseline, torch_op) in OPS.items():
                if (op, ws, thr) not in ours:
                    continue
                items, bps = ours[(op, ws, thr)]
                base = ours.get((baseline, ws, thr), (0, 0))[1]
                ratio = f"{bps / base:.2f} ({baseline})" if base else "-"
                torch_cell = torch_ratio = "-"
                if torch_op and (torch_op, ws, thr) in torch_rates:
                    torch_bps = torch_rates[(torch_op, ws, thr)] * bytes_per_element
                    torch_cell = f"{torch_bps / 1e9:.2f}"
                    torch_ratio = f"{bps / torch_bps:.1f}x"
                print(f"| {op} | {ws} | {thr} | {items / 1e6:.0f} | {bps / 1e9:.2f} | "
                      f"{base / 1e9:.2f} | {ratio} | {torch_cell} | {torch_ratio} |")
    l1 = ours.get(("quantize_per_tensor_into", sizes[0], 1))
    if l1 and tsc_hz:
        print(f"\nf32 -> int8 quantize at {sizes[0]}, 1 thread: {l1[0] / tsc_hz:.2f} elements per "
              "TSC cycle (TSC cycles: with turbo the core clock is higher)")


if __name__ == "__main__":
    main()
