"""The evaluation harness: bits/byte of the man-page byte LM (and digits MLP accuracy) for lucidq's weight methods, with bootstrap intervals.

Usage: /usr/bin/python3 bench/eval/run.py [--quick] [--cache DIR] [--json out.json]
Setup once: scripts/install-deps.sh eval, and the Python module built (build/release/python).
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)


def _import_lucidq():
    try:
        import lucidq  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(REPO, "build", "release", "python"))
        try:
            import lucidq  # noqa: F401
        except ImportError as error:
            sys.exit(f"run.py: error: cannot import lucidq ({error}); build it first: cmake "
                     "--preset release -DLUCIDQ_BUILD_PYTHON=ON && cmake --build build/release "
                     "--target _lucidq, or set PYTHONPATH")


_import_lucidq()

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bootstrap  # noqa: E402
import methods  # noqa: E402
import train  # noqa: E402
from corpus import load_corpus  # noqa: E402

QUICK_TRAIN = dict(train.TRAIN_CONFIG, steps=60, warmup=10)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="fewer held-out chunks and calibration sequences (a couple of minutes "
                        "once the LM is cached)")
    p.add_argument("--cache", default=train.DEFAULT_CACHE,
                   help="folder of the trained checkpoint lm.pt (default build/eval)")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--retrain", action="store_true", help="train the LM even if cached")
    p.add_argument("--methods", default=",".join(methods.METHODS),
                   help="comma-separated subset of " + ", ".join(methods.METHODS))
    p.add_argument("--settings", default=",".join(methods.SETTINGS),
                   help="comma-separated subset of " + ", ".join(methods.SETTINGS))
    p.add_argument("--fake-quant", action="store_true",
                   help="evaluate the dequantized float weights instead of lucidq's weight-only "
                        "modules")
    p.add_argument("--chunks", type=int, help="held-out chunks (default 512, quick 96)")
    p.add_argument("--calibration", type=int,
                   help="calibration sequences from the training text (default 128, quick 32)")
    p.add_argument("--gptq-act-order", action="store_true",
                   help="GPTQ with act-order (and static groups)")
    p.add_argument("--gptq-damp", type=float, default=0.01, help="GPTQ's percent_damp")
    p.add_argument("--gptq-one-pass", action="store_true",
                   help="GPTQ's statistics from the float model in one pass (--quick's "
                        "default) instead of sequentially, each Linear after the ones before it "
                        "are quantized (one calibration pass per Linear)")
    p.add_argument("--awq-no-clip", action="store_true", help="AWQ without its clip search")
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0, help="bootstrap and calibration seed")
    p.add_argument("--no-digits", action="store_true", help="skip the digits MLP")
    p.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = p.parse_args(argv)
    args.methods = [m for m in args.methods.split(",") if m]
    args.settings = [s for s in args.settings.split(",") if s]
    for m in args.methods:
        if m not in methods.METHODS:
            p.error(f"--methods: unknown method {m!r} (expected {', '.join(methods.METHODS)})")
    for s in args.settings:
        if s not in methods.SETTINGS:
            p.error(f"--settings: unknown setting {s!r} (expected {', '.join(methods.SETTINGS)})")
    args.chunks = args.chunks or (96 if args.quick else 512)
    args.calibration = args.calibration or (32 if args.quick else 128)
    return args


def _log(msg):
    print(msg, flush=True)


def _check_weight_only(model, results):
    """The packed weight-only modules must decode to exactly the dequantized weights."""
    for name, r in results.items():
        mod = model.get_submodule(name[: -len(".weight")])
        decoded = mod.layer.dequantized_weight()
        expected = methods.Q.dequantize(r["quantized"])
        if not np.array_equal(decoded, expected):
            raise RuntimeError(f"{name}: weight-only module decodes differently from the "
                               f"QuantizedTensor (max diff {np.abs(decoded - expected).max()})")


def evaluate_lm(args, corpus):
    """Runs every (setting, method) on the LM; returns the result dict (rows and metadata)."""
    t0 = time.time()
    quick_ckpt = os.path.join(args.cache, "lm-quick.pt")
    full_ckpt = os.path.join(args.cache, "lm.pt")
    if args.quick and not os.path.exists(full_ckpt) and not args.retrain:
        model, train_seconds = train.load_or_train(quick_ckpt, corpus["train"], QUICK_TRAIN,
                                                   log=_log)
        config = QUICK_TRAIN
    else:
        model, train_seconds = train.load_or_train(full_ckpt, corpus["train"], log=_log,
                                                   retrain=args.retrain)
        config = train.TRAIN_CONFIG
    seq = config["seq"]
    chunks = train.held_out_chunks(corpus["held_out"], seq, args.chunks)
    chunk_bytes = np.full(len(chunks), float(seq))
    rng = np.random.default_rng(args.seed + 1)
    data = np.frombuffer(corpus["train"], dtype=np.uint8)
    starts = rng.integers(0, len(data) - seq, size=args.calibration)
    calib_all = train.windows(data, starts, seq)
    calibration = [calib_all[i:i + 16] for i in range(0, len(calib_all), 16)]
    draws = bootstrap.resample_indices(len(chunks), args.resamples, args.seed)

    t = time.time()
    float_bits = train.chunk_nll_bits(model, chunks)
    float_eval = time.time() - t
    _log(f"float: {bootstrap.bits_per_byte(float_bits, chunk_bytes):.4f} bits/byte "
         f"({len(chunks)} held-out chunks of {seq} bytes, {float_eval:.0f} s)")
    stats = methods.float_statistics(model, calibration)
    gptq_options = {"percent_damp": args.gptq_damp,
                    "sequential": not (args.gptq_one_pass or args.quick)}
    if args.gptq_act_order:
        gptq_options.update(act_order=True, static_groups=True)

    awq_options = {"clip": not args.awq_no_clip}
    rows = [{"setting": "float", "method": "float", "bits": float_bits}]
    for setting in args.settings:
        for method in args.methods:
            t = time.time()
            qmodel, results = methods.quantize_model(
                model, method, setting, calibration, stats,
                {"gptq": gptq_options, "awq": awq_options}.get(method))
            q_seconds = time.time() - t
            if not args.fake_quant:
                methods.to_weight_only_modules(qmodel, results)
                _check_weight_only(qmodel, results)
            t = time.time()
            bits = train.chunk_nll_bits(qmodel, chunks)
            e_seconds = time.time() - t
            _log(f"{setting} {method}: {bootstrap.bits_per_byte(bits, chunk_bytes):.4f} "
                 f"bits/byte (quantize {q_seconds:.1f} s, evaluate {e_seconds:.0f} s)")
            rows.append({"setting": setting, "method": method, "bits": bits,
                         "quantize_seconds": q_seconds, "eval_seconds": e_seconds})

    out = []
    for row in rows:
        bpb = bootstrap.bits_per_byte(row["bits"], chunk_bytes)
        lo, hi = bootstrap.interval(bootstrap.bits_per_byte(row["bits"], chunk_bytes, draws))
        entry = {k: v for k, v in row.items() if k != "bits"}
        entry.update(bits_per_byte=bpb, interval=[lo, hi])
        if row["setting"] != "float" and row["method"] != "rtn":
            rtn = next((r for r in rows if r["setting"] == row["setting"]
                        and r["method"] == "rtn"), None)
            if rtn is not None:
                point, ci = bootstrap.gap_closed(row["bits"], rtn["bits"], float_bits,
                                                 chunk_bytes, draws)
                diff = (bootstrap.bits_per_byte(rtn["bits"], chunk_bytes, draws)
                        - bootstrap.bits_per_byte(row["bits"], chunk_bytes, draws))
                entry.update(gap_closed=point, gap_closed_interval=list(ci),
                             gain_over_rtn=bootstrap.bits_per_byte(rtn["bits"], chunk_bytes)
                             - bpb, gain_over_rtn_interval=list(bootstrap.interval(diff)))
        out.append(entry)
    return {"rows": out, "config": config, "train_seconds": train_seconds,
            "chunks": len(chunks), "chunk_bytes": seq, "calibration_sequences": args.calibration,
            "resamples": args.resamples, "seed": args.seed,
            "evaluation": "fake-quant" if args.fake_quant else "weight-only modules",
            "gptq": gptq_options, "awq": awq_options, "seconds": time.time() - t0}


def markdown_table(lm):
    lines = ["| setting | method | bits/byte [95 % CI] | gain over RTN, bits/byte [95 % CI] "
             "| RTN gap closed [95 % CI] |", "|---|---|---|---|---|"]
    for r in lm["rows"]:
        lo, hi = r["interval"]
        gain = gap = ""
        if "gap_closed" in r:
            g_lo, g_hi = r["gain_over_rtn_interval"]
            gain = f"{r['gain_over_rtn']:+.4f} [{g_lo:+.4f}, {g_hi:+.4f}]"
            c_lo, c_hi = r["gap_closed_interval"]
            gap = f"{100 * r['gap_closed']:.0f} % [{100 * c_lo:.0f}, {100 * c_hi:.0f}]"
        lines.append(f"| {r['setting']} | {r['method']} | {r['bits_per_byte']:.4f} "
                     f"[{lo:.4f}, {hi:.4f}] | {gain} | {gap} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    start = time.time()
    corpus = load_corpus()
    if not corpus["train"]:
        sys.exit("run.py: error: no man pages found (packages manpages, manpages-dev); run "
                 "scripts/install-deps.sh eval (and check that no dpkg path-exclude drops "
                 "/usr/share/man)")
    _log(f"corpus: {len(corpus['train'])} training bytes ({corpus['train_files']} pages), "
         f"{len(corpus['held_out'])} held-out bytes ({corpus['held_out_files']} pages)")
    lm = evaluate_lm(args, corpus)
    report = {"lm": lm}
    if not args.no_digits:
        import digits_eval
        report["digits"] = digits_eval.evaluate(args.methods, args.settings, args.fake_quant,
                                                _log)
    report["seconds"] = time.time() - start
    print()
    print(f"## Byte LM on held-out man pages ({lm['evaluation']}; {lm['chunks']} chunks of "
          f"{lm['chunk_bytes']} bytes, {lm['resamples']} bootstrap resamples, seed {lm['seed']})")
    print()
    print(markdown_table(lm))
    if "digits" in report:
        import digits_eval
        print()
        print(digits_eval.markdown_table(report["digits"]))
    print()
    print(f"total {report['seconds']:.0f} s (training {lm['train_seconds']:.0f} s)")
    if args.json:
        tmp = f"{args.json}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
