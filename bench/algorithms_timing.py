#!/usr/bin/env python3
"""Timing of the weight algorithms (docs/algorithms.md): GPTQ on a K x K layer, and the Hessian
accumulation rate against OpenBLAS dsyrk (through NumPy's BLAS when it is OpenBLAS) measured in
the same run.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/algorithms_timing.py [--k 4096] [--rows 4096]
"""

import argparse
import os
import time

import numpy as np

import lucidq


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    k, rows = args.k, args.rows
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, k), dtype=np.float32)
    w = (0.02 * rng.standard_normal((k, k))).astype(np.float32)

    def accumulate():
        acc = lucidq.HessianAccumulator(k)
        acc.add_rows(x)
        return acc

    t_acc = best_of(accumulate, args.repeats)
    x64 = x.astype(np.float64)
    t_syrk = best_of(lambda: x64.T @ x64, args.repeats)  # a full GEMM: 2x syrk's flops
    flops_syrk = rows * k * (k + 1)  # syrk's useful flops (one triangle)
    h = accumulate().sum()
    t_gptq = best_of(lambda: lucidq._lucidq._gptq(w, h, "quint4", False, 128, 0.01, 128, False, False), 1)
    print(f"CPU: {os.cpu_count()} logical cores visible, load average {os.getloadavg()[0]:.2f}")
    print(f"Hessian accumulation, {rows} rows x K {k}: {t_acc:.3f} s "
          f"({flops_syrk / t_acc / 1e9:.1f} GFLOP/s incl. the float32->float64 copy)")
    print(f"NumPy float64 X^T X (GEMM, same data): {t_syrk:.3f} s "
          f"({2 * rows * k * k / t_syrk / 1e9:.1f} GFLOP/s)")
    print(f"GPTQ {k}x{k}, int4 g128 affine, H from {rows} rows: {t_gptq:.2f} s")


if __name__ == "__main__":
    main()
