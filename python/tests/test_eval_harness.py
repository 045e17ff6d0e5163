"""Smoke test of bench/eval's pieces (troff to text, the corpus split, bits/byte, the bootstrap, one quantized model) in seconds."""

import copy
import gzip
import math
import pathlib
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the evaluation harness needs torch (python3-torch)")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "eval"))
import bootstrap  # noqa: E402
import corpus  # noqa: E402
import methods  # noqa: E402
import train  # noqa: E402
from model import ByteLM  # noqa: E402

PAGE = r""".\" a comment
.TH read 2 2022-12-04 "Linux man-pages 6.03"
.SH NAME
read \- read from a file descriptor
.SH SYNOPSIS
.nf
.BI "ssize_t read(int " fd ", void *" buf );
.fi
.SH DESCRIPTION
.BR read ()
attempts to read \fIcount\fP bytes \(em or fewer.
.PP
See
.BR open (2).
"""


def test_troff_to_text_keeps_the_words_and_drops_the_markup():
    text = corpus.troff_to_text(PAGE)
    assert text == ("read 2\n\nNAME\n\nread - read from a file descriptor\n\nSYNOPSIS\n\n"
                    "ssize_t read(int fd, void *buf);\n\nDESCRIPTION\n\nread()\n"
                    "attempts to read count bytes -- or fewer.\n\nSee\nopen(2).\n")
    assert corpus.troff_to_text(".so man2/read.2\n") == ""


def test_corpus_split_is_by_file_and_deterministic(tmp_path):
    pages = []
    for i in range(12):
        p = tmp_path / f"page{i:02d}.3.gz"
        with gzip.open(p, "wb") as f:
            f.write(f".SH NAME\npage {i}\n".encode())
        pages.append(str(p))
    c = corpus.load_corpus(pages)
    assert (c["train_files"], c["held_out_files"]) == (10, 2)
    assert c["held_out"] == b"NAME\n\npage 0\n\nNAME\n\npage 10\n"
    assert b"page 1\n" in c["train"] and b"page 0\n" not in c["train"]
    assert corpus.load_corpus(pages) == c


def test_installed_man_pages_extract():
    paths = corpus.manpage_paths()
    if not paths:
        pytest.skip("no man pages of Debian's manpages / manpages-dev here "
                    "(scripts/install-deps.sh eval installs them)")
    assert paths == sorted(paths)
    text = corpus.page_text(paths[0])
    assert text and "\\f" not in text


def tiny_lm(seed):
    torch.manual_seed(seed)
    return ByteLM(layers=1, d=64, heads=2, mlp=128, context=32).eval()


def test_bits_per_byte_of_an_untrained_model_is_near_eight(seed):
    rng = np.random.default_rng(seed)
    held = rng.integers(32, 127, size=4000, dtype=np.uint8).tobytes()
    model = tiny_lm(seed)
    chunks = train.held_out_chunks(held, 32, 8)
    bits = train.chunk_nll_bits(model, chunks, batch=3)
    logits = model(chunks[:, :-1])
    manual = torch.nn.functional.cross_entropy(logits.reshape(-1, 256),
                                               chunks[:, 1:].reshape(-1), reduction="sum")
    assert bits.sum() == pytest.approx(float(manual) / math.log(2), rel=1e-5)
    bpb = bootstrap.bits_per_byte(bits, np.full(8, 32.0))
    assert 7.5 < bpb < 8.5  # near-uniform logits at initialisation: log2(256) = 8
    with pytest.raises(ValueError, match="too short"):
        train.held_out_chunks(held[:100], 32, 8)


def test_gap_closed_is_one_at_float_and_zero_at_rtn(seed):
    rng = np.random.default_rng(seed)
    float_bits = rng.uniform(100, 200, size=50)
    rtn_bits = float_bits + rng.uniform(5, 10, size=50)
    chunk_bytes = np.full(50, 128.0)
    draws = bootstrap.resample_indices(50, 200, seed)
    point, (lo, hi) = bootstrap.gap_closed(float_bits, rtn_bits, float_bits, chunk_bytes, draws)
    assert point == pytest.approx(1.0) and lo == pytest.approx(1.0) and hi == pytest.approx(1.0)
    half = (float_bits + rtn_bits) / 2
    point, (lo, hi) = bootstrap.gap_closed(half, rtn_bits, float_bits, chunk_bytes, draws)
    assert point == pytest.approx(0.5) and lo <= 0.5 <= hi
    point, _ = bootstrap.gap_closed(rtn_bits, rtn_bits, float_bits, chunk_bytes, draws)
    assert point == 0.0


@pytest.mark.parametrize("method", ["rtn", "weighted-rtn", "gptq"])
def test_weight_only_modules_score_like_the_dequantized_weights(method, seed):
    model = tiny_lm(seed)
    rng = np.random.default_rng(seed)
    data = rng.integers(32, 127, size=2000, dtype=np.uint8)
    calibration = [train.windows(data, rng.integers(0, 1900, size=8), 32)]
    stats = methods.float_statistics(model, calibration)
    fake, results = methods.quantize_model(model, method, "int3 g128", calibration, stats)
    real = methods.to_weight_only_modules(copy.deepcopy(fake), results)
    assert type(real.blocks[0].fc1).__name__ == "Linear" and hasattr(real.blocks[0].fc1, "layer")
    chunks = train.held_out_chunks(data.tobytes(), 32, 4)
    assert np.allclose(train.chunk_nll_bits(real, chunks), train.chunk_nll_bits(fake, chunks),
                       rtol=1e-4)
