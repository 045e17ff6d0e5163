#!/usr/bin/python3
"""Runs bench_ggml (ggml block quantizers and decoders, float32 side counted) and memcpy in one
run and prints a markdown table: GB/s of float32 per type (wall clock and per CPU second, since
a shared machine gives a process less than a core), the ratio to memcpy and the issue's targets
(Q8_0 / Q4_0 quantize >= 0.5x memcpy; every K-quant >= 1 GB/s per core).

    python3 bench/ggml_compare.py [--size 256M] [--threads 1] [--bench PATH] [--types q4_K,...]
"""
import argparse
import json
import os
import statistics
import subprocess

K_QUANTS = {"q2_K", "q3_K", "q4_K", "q5_K", "q6_K"}


def run(bench, size, threads, types, repetitions, min_time):
    cmd = [bench, f"--size={size}", f"--threads={threads}", "--benchmark_format=json",
           f"--benchmark_repetitions={repetitions}", f"--benchmark_min_time={min_time}"]
    if types:
        cmd.append(f"--types={types}")
    data = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"].replace("/real_time", "")
        parts = name.split("/")
        key = (parts[0], parts[1] if len(parts) == 3 else "")
        bytes_per_call = b["bytes_per_second"] * b["real_time"] * 1e-9  # real_time is in ns
        runs.setdefault(key, []).append((b["bytes_per_second"] / 1e9,
                                         bytes_per_call / (b["cpu_time"] * 1e-9) / 1e9))
    median = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v))
              for k, v in runs.items()}
    return median, data["context"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="256M")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--types", default="")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--bench", default=os.path.join(here, "..", "build", "release", "bench",
                                                        "bench_ggml"))
    args = parser.parse_args()
    median, context = run(args.bench, args.size, args.threads, args.types, args.repetitions,
                          args.min_time)
    memcpy_wall, memcpy_cpu = median[("memcpy", "")]
    print(f"bench_ggml, {args.size} of float32, {args.threads} thread(s), "
          f"{context.get('num_cpus')} CPUs at {context.get('mhz_per_cpu')} MHz, "
          f"median of {args.repetitions}; memcpy {memcpy_wall:.2f} GB/s wall, "
          f"{memcpy_cpu:.2f} GB/s per CPU second\n")
    print("| type | quantize GB/s (wall / per CPU s) | × memcpy | with imatrix (per CPU s) "
          "| decode GB/s (wall / per CPU s) | target |")
    print("|---|---:|---:|---:|---:|---|")
    types = [k[1] for k in median if k[0] == "quantize"]
    for t in types:
        qw, qc = median[("quantize", t)]
        iw, ic = median.get(("quantize_imatrix", t), (None, None))
        dw, dc = median[("dequantize", t)]
        ratio = qw / memcpy_wall
        if t in ("q8_0", "q4_0"):
            target = f">= 0.5x memcpy: {'met' if ratio >= 0.5 else 'NOT met'}"
        elif t in K_QUANTS:
            target = f">= 1 GB/s per core: {'met' if qc >= 1.0 else 'NOT met'}"
        else:
            target = ""
        imatrix = f"{ic:.3f}" if ic is not None else "(ignored)"
        print(f"| {t} | {qw:.3f} / {qc:.3f} | {ratio:.2f} | {imatrix} | {dw:.2f} / {dc:.2f} "
              f"| {target} |")


if __name__ == "__main__":
    main()
