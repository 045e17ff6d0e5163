"""Trains the byte LM on the man-page corpus (seeded, CPU), caches the checkpoint, and scores bits per byte."""

import math
import os
import time

import numpy as np
import torch
from torch import nn

from model import ByteLM

# The checkpoint is a function of these; a cached file with other values is retrained.
TRAIN_CONFIG = {"seed": 1234, "steps": 400, "batch": 16, "seq": 128, "lr": 3e-3,
                "warmup": 30, "weight_decay": 0.1, "layers": 4, "d": 256, "heads": 4,
                "mlp": 1024, "context": 128}
DEFAULT_CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                             "eval")


def windows(data, starts, length):
    """[len(starts), length] int64 byte windows of `data` (uint8) at `starts`."""
    return torch.from_numpy(np.stack([data[s:s + length] for s in starts]).astype(np.int64))


def _print(msg):
    print(msg, flush=True)


def train_lm(train_bytes, config, log=_print):
    """A ByteLM trained on random windows of `train_bytes` (AdamW, linear warmup then cosine
    decay, gradient clip 1.0), seeded by config["seed"]; prints the loss every 50 steps."""
    torch.manual_seed(config["seed"])
    rng = np.random.default_rng(config["seed"])
    data = np.frombuffer(train_bytes, dtype=np.uint8)
    model = ByteLM(config["layers"], config["d"], config["heads"], config["mlp"],
                   config["context"])
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "embed" not in n
             and "pos" not in n]
    other = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "embed" not in n
                                                            and "pos" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config["weight_decay"]},
                             {"params": other, "weight_decay": 0.0}],
                            lr=config["lr"], betas=(0.9, 0.95))
    steps, seq = config["steps"], config["seq"]
    start, running = time.time(), None
    model.train()
    for step in range(steps):
        if step < config["warmup"]:
            lr = config["lr"] * (step + 1) / config["warmup"]
        else:
            frac = (step - config["warmup"]) / max(1, steps - config["warmup"])
            lr = config["lr"] * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for group in opt.param_groups:
            group["lr"] = lr
        starts = rng.integers(0, len(data) - seq - 1, size=config["batch"])
        batch = windows(data, starts, seq + 1)
        logits = model(batch[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        bits = float(loss) / math.log(2)
        running = bits if running is None else 0.95 * running + 0.05 * bits
        if (step + 1) % 50 == 0 or step + 1 == steps:
            elapsed = time.time() - start
            log(f"  train step {step + 1}/{steps}: {running:.3f} bits/byte (smoothed), "
                f"lr {lr:.2e}, {elapsed:.0f} s, ~{elapsed / (step + 1) * (steps - step - 1):.0f} s "
                "left")
    model.eval()
    return model


def load_or_train(path, train_bytes, config=TRAIN_CONFIG, log=_print, retrain=False):
    """The cached model at `path` when its stored config equals `config` (and not `retrain`),
    else a newly trained one, saved atomically to `path`. Returns (model, seconds spent
    training or 0.0)."""
    if os.path.exists(path) and not retrain:
        saved = torch.load(path)
        if saved.get("config") == config:
            model = ByteLM(config["layers"], config["d"], config["heads"], config["mlp"],
                           config["context"])
            model.load_state_dict(saved["state"])
            model.eval()
            log(f"loaded the trained LM from {path}")
            return model, 0.0
        log(f"{path} was trained with another config; retraining")
    log(f"training the LM ({config['steps']} steps of {config['batch']} x {config['seq']} bytes; "
        f"seed {config['seed']}) -> {path}")
    start = time.time()
    model = train_lm(train_bytes, config, log)
    seconds = time.time() - start
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    torch.save({"config": config, "state": model.state_dict(), "train_seconds": seconds}, tmp)
    os.replace(tmp, path)
    return model, seconds


def held_out_chunks(held_bytes, seq, count):
    """`count` non-overlapping windows of seq + 1 bytes, evenly spaced over the held-out text
    ([count, seq + 1] int64): each chunk scores its last `seq` bytes."""
    data = np.frombuffer(held_bytes, dtype=np.uint8)
    span = len(data) // count
    if span < seq + 1:
        raise ValueError(f"held-out text of {len(data)} bytes is too short for {count} chunks "
                         f"of {seq + 1} bytes")
    return windows(data, [i * span for i in range(count)], seq + 1)


def chunk_nll_bits(model, chunks, batch=32):
    """Per-chunk total negative log-likelihood in bits ([count] float64) of `model` on `chunks`."""
    out = []
    with torch.no_grad():
        for i in range(0, len(chunks), batch):
            b = chunks[i:i + batch]
            logits = model(b[:, :-1]).float()
            nll = nn.functional.cross_entropy(logits.reshape(-1, 256), b[:, 1:].reshape(-1),
                                              reduction="none").view(len(b), -1)
            out.append(nll.double().sum(1) / math.log(2))
    return torch.cat(out).numpy()


def main():
    import argparse

    from corpus import load_corpus

    parser = argparse.ArgumentParser(description="Train (or load) the harness's byte LM.")
    parser.add_argument("--cache", default=DEFAULT_CACHE, help="checkpoint folder (lm.pt)")
    args = parser.parse_args()
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    _, seconds = load_or_train(os.path.join(args.cache, "lm.pt"), load_corpus()["train"])
    print(f"training took {seconds:.0f} s")


if __name__ == "__main__":
    main()
