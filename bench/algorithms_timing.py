#!/usr/bin/env python3
"""Timing of the weight algorithms (docs/algorithms.md): GPTQ on a K x K layer, and the Hessian
accumulation rate against OpenBLAS dsyrk (SciPy's BLAS, OpenBLAS on Debian) on the same rows,
measured in the same run, interleaved. Prints medians over --repeats runs, GPTQ's CPU time and
the load average, since wall times mean little on a busy machine.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/algorithms_timing.py [--k 4096] [--rows 4096] [--repeats 5]
"""

import argparse
import os
import statistics
import time

import numpy as np

import lucidq


def timings(fn, repeats, cpu=None):
    """Wall times of `repeats` calls; the process CPU times (all threads) appended to `cpu`."""
    times = []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(time.process_time() - start_cpu)
    return times


def summary(times):
    return f"median {statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f})"


def dsyrk_baseline():
    """OpenBLAS dsyrk through SciPy, or None when SciPy is missing."""
    try:
        from scipy.linalg.blas import dsyrk
    except ImportError:
        return None
    return dsyrk


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    k, rows = args.k, args.rows
    print(f"CPU: {os.cpu_count()} logical cores visible, lucidq threads {lucidq.num_threads()}, "
          f"load average at start {os.getloadavg()[0]:.2f}")
    seed = 0
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, k), dtype=np.float32)
    w = (0.02 * rng.standard_normal((k, k))).astype(np.float32)

    def accumulate():
        acc = lucidq.HessianAccumulator(k)
        acc.add_rows(x)
        return acc

    flops = rows * k * (k + 1)  # one triangle of X^T X: the flops syrk does
    dsyrk = dsyrk_baseline()
    xt = np.asfortranarray(x.astype(np.float64).T)  # [K, rows] column-major: C = A A^T
    t_acc, t_syrk = [], []
    for _ in range(args.repeats):  # interleaved, so a change of load hits both alike
        t_acc += timings(accumulate, 1)
        if dsyrk is not None:
            t_syrk += timings(lambda: dsyrk(1.0, xt), 1)
    print(f"Hessian accumulation, {rows} rows x K {k} (float32 rows, incl. the float64 copy): "
          f"{summary(t_acc)}, {flops / statistics.median(t_acc) / 1e9:.1f} GFLOP/s")
    if dsyrk is None:
        print("dsyrk baseline: skipped (SciPy is not installed)")
    else:
        rate = flops / statistics.median(t_syrk) / 1e9
        ratio = statistics.median(t_syrk) / statistics.median(t_acc)
        print(f"OpenBLAS dsyrk, same rows as float64: {summary(t_syrk)}, {rate:.1f} GFLOP/s; "
              f"the accumulator runs at {100 * ratio:.0f} % of its rate")
    h = accumulate().sum()
    cpu = []
    t_gptq = timings(
        lambda: lucidq._lucidq._gptq(w, h, "quint4", False, 128, 0.01, 128, False, False),
        args.repeats, cpu)
    print(f"GPTQ {k}x{k}, int4 g128 affine, H from {rows} rows: {summary(t_gptq)}; "
          f"CPU time (all threads, OpenBLAS's spin-waits included) median "
          f"{statistics.median(cpu):.2f} s")
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
