#!/usr/bin/python3
"""lucidq's HistogramObserver against torch.ao.quantization.HistogramObserver on the same
1M-element float32 batches, in the same run, and (with --bench) MinMax observe against the
read bandwidth of one thread from bench_observers. Prints markdown tables.

    PYTHONPATH=<build>/python /usr/bin/python3 bench/bench_observers.py \
        [--batches 10] [--repeats 3] [--bench <build>/bench/bench_observers]

Each step is observe(batch) then calculate_qparams(), as a calibration loop that reads the
qparams as it goes; the batches are N(0, s_k) with s_k growing 5 % per batch, so PyTorch's
histogram is re-binned on most steps. Both run on one thread; every step's qparams must be
equal (the script stops otherwise). Needs Debian's python3-torch.
"""
import argparse
import json
import statistics
import subprocess
import time
import warnings

import numpy as np
import torch
from torch.ao.quantization.observer import HistogramObserver as TorchHistogramObserver

import lucidq as Q


def run_steps(observer, batches, convert):
    """Seconds per step (observe + calculate_qparams) and the qparams of each step."""
    times, results = [], []
    for x in batches:
        data = convert(x)
        start = time.perf_counter()
        observer(data)
        qparams = observer.calculate_qparams()
        times.append(time.perf_counter() - start)
        results.append(qparams)
    return times, results


def as_pair(qparams):
    if isinstance(qparams, tuple):
        return float(qparams[0]), int(qparams[1])
    return float(qparams.scale[0]), int(qparams.zero_point[0])


def histogram_table(args):
    rng = np.random.default_rng(20261130)
    batches = [(rng.standard_normal(1 << 20) * (1.05 ** k)).astype(np.float32)
               for k in range(args.batches)]
    rows = []
    for dtype, qscheme, tdtype, tscheme in [
            (Q.quint8, Q.per_tensor_affine, torch.quint8, torch.per_tensor_affine),
            (Q.qint8, Q.per_tensor_symmetric, torch.qint8, torch.per_tensor_symmetric)]:
        ours_best, theirs_best = [], []
        for _ in range(args.repeats):
            ours_t, ours_q = run_steps(Q.HistogramObserver(dtype=dtype, qscheme=qscheme),
                                       batches, lambda x: x)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs_t, theirs_q = run_steps(TorchHistogramObserver(dtype=tdtype, qscheme=tscheme),
                                               batches, torch.from_numpy)
            for step, (a, b) in enumerate(zip(ours_q, theirs_q)):
                if as_pair(a) != as_pair(b):
                    raise SystemExit(f"step {step}: lucidq {as_pair(a)} != torch {as_pair(b)}")
            ours_best.append(sum(ours_t))
            theirs_best.append(sum(theirs_t))
        ours, theirs = min(ours_best), min(theirs_best)
        rows.append((f"{dtype.name} {qscheme.name.lower()}", theirs, ours))
    print(f"HistogramObserver, {args.batches} steps of observe(2^20 float32) + calculate_qparams,"
          f" best of {args.repeats}, one thread, qparams equal at every step:\n")
    print("| grid | torch.ao (ms/step) | lucidq (ms/step) | speed-up |")
    print("|---|---|---|---|")
    for name, theirs, ours in rows:
        print(f"| {name} | {theirs / args.batches * 1e3:.2f} | {ours / args.batches * 1e3:.2f} |"
              f" {theirs / ours:.1f}x |")


def minmax_table(bench):
    out = subprocess.run([bench, "--benchmark_filter=^(read|minmax_observe)/",
                          "--benchmark_format=json", "--benchmark_repetitions=5",
                          "--benchmark_report_aggregates_only=true"],
                         check=True, capture_output=True, text=True).stdout
    medians = {b["run_name"]: b["bytes_per_second"] / 1e9
               for b in json.loads(out)["benchmarks"] if b.get("aggregate_name") == "median"}
    print("\nMinMaxObserver.observe on one thread against a read of the same bytes"
          " (memchr), median of 5:\n")
    print("| float32 elements | read (GB/s) | MinMax observe (GB/s) | ratio |")
    print("|---|---|---|---|")
    for size in sorted({name.split("/")[1] for name in medians}, key=int):
        read, minmax = medians[f"read/{size}"], medians[f"minmax_observe/{size}"]
        print(f"| {int(size) >> 20}M | {read:.1f} | {minmax:.1f} | {minmax / read:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bench", help="path of the bench_observers executable")
    args = parser.parse_args()
    torch.set_num_threads(1)
    histogram_table(args)
    if args.bench:
        minmax_table(args.bench)


if __name__ == "__main__":
    main()
