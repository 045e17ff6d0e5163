#!/usr/bin/python3
"""The PyTorch model workflow side by side: lucidq-converted vs torch.ao-converted vs float torch.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/workflow_compare.py \
        [--threads 1,2] [--batches 1,16,256] [--models digits,llama] [--repeats N]

Models: the digits MLP (64 -> 128 -> 64 -> 10, ReLUs fused) and a Llama-shaped MLP block
(4096 -> 11008 -> 4096: the up projection, ReLU, the down projection; the gate branch is
left out because neither side's eager-mode modules quantize the elementwise product). Both
are static W8A8 (quint8 activations calibrated with HistogramObserver, per-channel
symmetric int8 weights) prepared, calibrated and converted by lucidq.workflow and by
torch.ao.quantization 1.13 from the same float weights. Columns: float torch, torch.ao on
the qnnpack and onednn engines, lucidq; each cell is the median wall time of one forward
(float tensor in, float tensor out) over the repeats, after a warm-up. Weights are random
(speed does not depend on training). Prints a markdown table.
"""

import argparse
import copy
import statistics
import time

import torch
from torch import nn
import torch.ao.quantization as tq

import lucidq
import lucidq.workflow as LW
import lucidq.workflow.quantize as W


class Block(nn.Module):
    """quant -> Linear+ReLU pairs ... -> Linear -> dequant, as a list of widths."""

    def __init__(self, widths, quant, dequant):
        super().__init__()
        self.quant = quant()
        layers = []
        for i, (k, n) in enumerate(zip(widths[:-1], widths[1:])):
            layers.append(nn.Linear(k, n))
            if i < len(widths) - 2:
                layers.append(nn.ReLU())
        self.body = nn.Sequential(*layers)
        self.dequant = dequant()

    def forward(self, x):
        return self.dequant(self.body(self.quant(x)))


MODELS = {"digits": [64, 128, 64, 10], "llama": [4096, 11008, 4096]}


def fuse_groups(widths):
    return [[str(2 * i), str(2 * i + 1)] for i in range(len(widths) - 2)]


def build(widths, seed):
    """(float model, lucidq-converted, torch-converted) from the same weights and calibration."""
    torch.manual_seed(seed)
    ours = Block(widths, W.QuantStub, W.DeQuantStub).eval()
    theirs = Block(widths, tq.QuantStub, tq.DeQuantStub).eval()
    theirs.load_state_dict(ours.state_dict())
    ours.qconfig = LW.get_default_qconfig("onednn")  # histogram, per-channel weights
    theirs.qconfig = tq.get_default_qconfig("onednn")
    ours.body = W.fuse_modules(ours.body, fuse_groups(widths))
    theirs.body = tq.fuse_modules(theirs.body, fuse_groups(widths))
    float_model = copy.deepcopy(ours)
    ours, theirs = W.prepare(ours), tq.prepare(theirs)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(64, widths[0], generator=generator)
            ours(x)
            theirs(x)
    return float_model, W.convert(ours), tq.convert(theirs)


def median_seconds(fn, repeats, min_time=0.2):
    fn()  # warm-up (first-call packing, caches)
    times = []
    start = time.perf_counter()
    while len(times) < repeats or (time.perf_counter() - start < min_time and len(times) < 1000):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fmt(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", default="1,16,256")
    parser.add_argument("--models", default="digits,llama")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    print(f"lucidq {lucidq.__version__} ({lucidq.active_isa()}), torch {torch.__version__}")
    print("| model | threads | batch | float torch | torch.ao qnnpack | torch.ao onednn | lucidq "
          "| lucidq vs best torch.ao | lucidq vs float |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        widths = MODELS[name]
        float_model, ours, theirs = build(widths, seed=0)
        for t in threads:
            torch.set_num_threads(t)
            lucidq.set_num_threads(t)
            for batch in batches:
                x = torch.randn(batch, widths[0], generator=torch.Generator().manual_seed(batch))
                cells = {}
                with torch.no_grad():
                    cells["float"] = median_seconds(lambda: float_model(x), args.repeats)
                    for engine in ("qnnpack", "onednn"):
                        torch.backends.quantized.engine = engine
                        engine_model = copy.deepcopy(theirs)  # repacks for this engine
                        cells[engine] = median_seconds(lambda: engine_model(x), args.repeats)
                    cells["lucidq"] = median_seconds(lambda: ours(x), args.repeats)
                best = min(cells["qnnpack"], cells["onednn"])
                print(f"| {name} {'→'.join(map(str, widths))} | {t} | {batch} | "
                      f"{fmt(cells['float'])} | {fmt(cells['qnnpack'])} | {fmt(cells['onednn'])} "
                      f"| {fmt(cells['lucidq'])} | {best / cells['lucidq']:.2f}× "
                      f"| {cells['float'] / cells['lucidq']:.2f}× |", flush=True)


if __name__ == "__main__":
    main()
