#!/usr/bin/python3
"""ResNet-18 convolution shapes at batch 1: lucidq's int8 conv2d against torch's quantized conv
(qnnpack and onednn engines) and float torch conv, on 1 and 2 threads; one markdown report with
medians, GOP/s, the fraction of the measured int8 peak and speed ratios.

    PYTHONPATH=build/release/python python3 bench/conv_compare.py [--threads 1,2] [--reps 15]
        [--min-time 0.02] [--peak PATH/TO/int8_peak]

lucidq: conv2d_requantize (uint8 NHWC codes in, uint8 codes out, per-channel int8 weights
packed once, float bias), called through the Python binding (a few µs per call included);
"lucidq NCHW" is the same with NCHW codes (the driver transposes in and out). torch:
torch.ao.nn.quantized.Conv2d (quint8 channels_last input, per-channel qint8 weights prepacked
once, quint8 output) with the named engine, and float32 F.conv2d (the faster of NCHW and
channels_last, oneDNN underneath). Every time is the fastest of --reps samples of
>= --min-time s after a warm-up call (the machine is shared: the fastest sample is the least
disturbed one, as for the peak). Ratios are speeds: their time / lucidq NHWC's time.
lucidq's codes are checked against torch qnnpack's (within 1) before timing.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.ao.nn.quantized as nnq
import torch.nn.functional as F

import lucidq as Q

HERE = os.path.dirname(os.path.abspath(__file__))

# name, C_in, C_out, H (= W), kernel, stride, padding, groups
SHAPES = [
    ("3x3 56x56x64", 64, 64, 56, 3, 1, 1, 1),
    ("3x3 28x28x128", 128, 128, 28, 3, 1, 1, 1),
    ("3x3 14x14x256", 256, 256, 14, 3, 1, 1, 1),
    ("3x3 7x7x512", 512, 512, 7, 3, 1, 1, 1),
    ("1x1 s2 56x56x64->128", 64, 128, 56, 1, 2, 0, 1),
    ("dw 3x3 56x56x64", 64, 64, 56, 3, 1, 1, 64),
]


def best_time(fn, reps, min_time):
    """One warm-up call, then reps samples of >= min_time s; the fastest sample's time per call
    (on a shared machine the least disturbed one, as for the peak)."""
    fn()
    samples = []
    for _ in range(reps):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        samples.append(elapsed / calls)
    return min(samples)


def find_peak(path):
    if path:
        return path
    for build in ("build/release", "build"):
        candidate = os.path.join(os.path.dirname(HERE), build, "bench", "int8_peak")
        if os.path.exists(candidate):
            return candidate
    return None


def measure_peak(path, threads):
    exe = find_peak(path)
    if exe is None:
        print("conv_compare: int8_peak not built (-DLUCIDQ_BUILD_BENCH=ON); no peak fraction",
              file=sys.stderr)
        return {}
    out = subprocess.run([exe, "--threads", threads], check=True, capture_output=True, text=True)
    return {p["threads"]: p for p in json.loads(out.stdout)}


def torch_conv(engine, qweight, bias, shape, out_scale, out_zero):
    _, cin, cout, _, k, stride, pad, groups = shape
    torch.backends.quantized.engine = engine
    conv = nnq.Conv2d(cin, cout, k, stride=stride, padding=pad, groups=groups)
    conv.set_weight_bias(qweight, bias)
    conv.scale, conv.zero_point = out_scale, out_zero
    return conv


def bench_shape(shape, threads, args, rng):
    name, cin, cout, h, k, stride, pad, groups = shape
    weight = torch.from_numpy(rng.normal(size=(cout, cin // groups, k, k)).astype(np.float32))
    scales = weight.abs().amax((1, 2, 3)).double() / 127.5
    qweight = torch.quantize_per_channel(weight, scales, torch.zeros(cout, dtype=torch.long), 0,
                                         torch.qint8)
    bias = torch.from_numpy(rng.normal(size=cout).astype(np.float32))
    x = torch.from_numpy(rng.random((1, cin, h, h), dtype=np.float32))
    qx = torch.quantize_per_tensor(x, 1 / 255, 0, torch.quint8)
    qx_cl = qx.contiguous(memory_format=torch.channels_last)
    out_scale, out_zero = 0.05 * (k * k * cin / groups) ** 0.5, 128

    packed = Q.PackedConvWeights.pack(qweight.int_repr().numpy(),
                                      qweight.q_per_channel_scales().float().numpy(), groups=groups)
    nchw = qx.int_repr().numpy()
    nhwc = np.ascontiguousarray(nchw.transpose(0, 2, 3, 1))
    b = bias.numpy()

    def lucid(codes, layout):
        return lambda: Q.conv2d_requantize(codes, packed, 1 / 255, 0, out_scale, out_zero,
                                           Q.quint8, b, False, stride, pad, 1, layout)

    engines = [e for e in ("qnnpack", "onednn") if e in torch.backends.quantized.supported_engines]
    previous = torch.backends.quantized.engine
    convs = {e: torch_conv(e, qweight, bias, shape, out_scale, out_zero) for e in engines}
    # Check before timing: lucidq vs torch qnnpack, codes within 1.
    ours = lucid(nhwc, "nhwc")().transpose(0, 3, 1, 2).astype(np.int64)
    if "qnnpack" in convs:
        torch.backends.quantized.engine = "qnnpack"
        theirs = convs["qnnpack"](qx_cl).int_repr().numpy().astype(np.int64)
        worst = int(np.abs(ours - theirs).max())
        if worst > 1:
            sys.exit(f"conv_compare: {name}: lucidq differs from torch qnnpack by {worst} codes")

    Q.set_num_threads(threads)
    torch.set_num_threads(threads)
    row = {"shape": name, "threads": threads,
           "gop": 2 * cout * (cin // groups) * k * k * ((h + 2 * pad - k) // stride + 1) ** 2 / 1e9}
    row["lucidq"] = best_time(lucid(nhwc, "nhwc"), args.reps, args.min_time)
    row["lucidq_nchw"] = best_time(lucid(nchw, "nchw"), args.reps, args.min_time)
    for e, conv in convs.items():
        torch.backends.quantized.engine = e
        row[e] = best_time(lambda: conv(qx_cl), args.reps, args.min_time)
    torch.backends.quantized.engine = previous
    with torch.no_grad():
        x_cl = x.contiguous(memory_format=torch.channels_last)
        w_cl = weight.contiguous(memory_format=torch.channels_last)
        t_nchw = best_time(lambda: F.conv2d(x, weight, bias, stride, pad, 1, groups),
                             args.reps, args.min_time)
        t_cl = best_time(lambda: F.conv2d(x_cl, w_cl, bias, stride, pad, 1, groups),
                           args.reps, args.min_time)
    row["float"] = min(t_nchw, t_cl)
    row["float_layout"] = "NCHW" if t_nchw <= t_cl else "NHWC"
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--min-time", type=float, default=0.02)
    parser.add_argument("--peak")
    args = parser.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",")]
    load_start = os.getloadavg()
    peaks = measure_peak(args.peak, args.threads)
    rng = np.random.default_rng(0)
    rows = [bench_shape(s, t, args, rng) for t in thread_counts for s in SHAPES]
    load_end = os.getloadavg()

    print(f"CPU features: {Q.cpu_features()}; lucidq tier {Q.active_isa()}; torch "
          f"{torch.__version__}. Load average at start {load_start[0]:.2f}, at the end "
          f"{load_end[0]:.2f} (the machine is shared with other sessions). {args.reps} samples "
          f"of >= {args.min_time} s, the fastest.\n")
    if peaks:
        print("| threads | int8 peak kernel | clock GHz | peak GOP/s (best) | peak GOP/s (median) |")
        print("|---|---|---|---|---|")
        for t, p in sorted(peaks.items()):
            print(f"| {t} | {p['kernel']} | {p['ghz']:.2f} | {p['gops']:.0f} | "
                  f"{p['median_gops']:.0f} |")
        print()
    print("| shape | thr | GOP | lucidq ms | GOP/s | of peak | lucidq NCHW ms | qnnpack ms | "
          "onednn ms | float ms (layout) | ×qnnpack | ×onednn | ×float |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        gops = r["gop"] / r["lucidq"]
        peak = peaks.get(r["threads"])
        frac = f"{100 * gops / peak['gops']:.0f} %" if peak else "-"

        def ms(key):
            return f"{1e3 * r[key]:.3f}" if key in r else "-"

        def ratio(key):
            return f"{r[key] / r['lucidq']:.2f}" if key in r else "-"

        print(f"| {r['shape']} | {r['threads']} | {r['gop']:.3f} | {ms('lucidq')} | {gops:.0f} | "
              f"{frac} | {ms('lucidq_nchw')} | {ms('qnnpack')} | {ms('onednn')} | "
              f"{ms('float')} ({r['float_layout']}) | {ratio('qnnpack')} | {ratio('onednn')} | "
              f"{ratio('float')} |")


if __name__ == "__main__":
    main()
