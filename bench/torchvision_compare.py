"""torchvision's quantizable models through lucidq and torch.ao: SQNR against float and batch-1 latency.

Usage: PYTHONPATH=build/release/python /usr/bin/python3 bench/torchvision_compare.py
           [--models resnet18,mobilenet_v2,...] [--side 224] [--repeats 20] [--json out.json]

Each model: weights=None with seed 0, BatchNorm statistics from the calibration batches,
eval, fuse_model(), get_default_qconfig("onednn") on
both sides, the same 4 calibration batches (2 images each), converted; SQNR of the outputs
on 8 test images against the float model; latency = the median of `--repeats` batch-1 calls,
the two converted models interleaved call by call. Check `uptime` (load below 1.3) first.
"""

import argparse
import copy
import json
import math
import statistics
import time

import torch
import torch.ao.quantization as tq
import torchvision.models.quantization as tvq

import lucidq

DEFAULT_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large",
                  "shufflenet_v2_x0_5", "googlenet", "inception_v3"]
EXTRA_ARGUMENTS = {"googlenet": {"aux_logits": False, "init_weights": True},
                   "inception_v3": {"aux_logits": False, "init_weights": True}}


def sqnr(reference, approximation):
    noise = (reference - approximation).double().pow(2).sum().item()
    return math.inf if noise == 0 else 10 * math.log10(
        reference.double().pow(2).sum().item() / noise)


def set_batch_norm_statistics(model, batches):
    """BatchNorm statistics of the data instead of the initial 0 / 1 (with random weights and
    the initial statistics the deeper models' activations vanish, and SQNR means nothing)."""
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None
    model.train()
    with torch.no_grad():
        for batch in batches:
            model(batch)


def convert_both(model, batches):
    torch.backends.quantized.engine = "onednn"
    theirs = copy.deepcopy(model)
    theirs.qconfig = tq.get_default_qconfig("onednn")
    tq.prepare(theirs, inplace=True)
    ours = lucidq.prepare(model, lucidq.get_default_qconfig("onednn"))
    with torch.no_grad():
        for batch in batches:
            theirs(batch)
            ours(batch)
    return lucidq.convert(ours), tq.convert(theirs)


def median_latencies(models, image, repeats):
    times = [[] for _ in models]
    with torch.no_grad():
        for model in models:
            model(image)  # warm-up
        for _ in range(repeats):
            for index, model in enumerate(models):
                start = time.perf_counter()
                model(image)
                times[index].append(time.perf_counter() - start)
    return [statistics.median(t) * 1e3 for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--side", type=int, default=224, help="input height and width")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args()
    rows = []
    print("| model | SQNR lucidq (dB) | SQNR torch.ao (dB) | batch-1 ms lucidq | "
          "batch-1 ms torch.ao |\n|---|---|---|---|---|")
    for name in args.models.split(","):
        side = max(args.side, 75) if name == "inception_v3" else args.side
        torch.manual_seed(0)
        model = getattr(tvq, name)(weights=None, quantize=False,
                                   **EXTRA_ARGUMENTS.get(name, {}))
        generator = torch.Generator().manual_seed(1)
        batches = [torch.randn(2, 3, side, side, generator=generator) for _ in range(4)]
        test = torch.randn(8, 3, side, side, generator=generator)
        set_batch_norm_statistics(model, batches)
        model.eval().fuse_model()
        ours, theirs = convert_both(model, batches)
        with torch.no_grad():
            reference = model(test)
            row = {"model": name, "side": side, "sqnr_lucidq": sqnr(reference, ours(test)),
                   "sqnr_torch_ao": sqnr(reference, theirs(test))}
        row["ms_lucidq"], row["ms_torch_ao"] = median_latencies(
            [ours, theirs], test[:1], args.repeats)
        rows.append(row)
        print(f"| {name} | {row['sqnr_lucidq']:.2f} | {row['sqnr_torch_ao']:.2f} | "
              f"{row['ms_lucidq']:.2f} | {row['ms_torch_ao']:.2f} |", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
