"""Bootstrap intervals over held-out chunks: bits per byte, and the paired fraction of RTN's gap to float a method closes."""

import numpy as np


def resample_indices(chunks, resamples, seed):
    """[resamples, chunks] chunk indices drawn with replacement (numpy default_rng(seed)); every
    statistic of one run uses the same draws, so the intervals of differences are paired."""
    return np.random.default_rng(seed).integers(0, chunks, size=(resamples, chunks))


def bits_per_byte(chunk_bits, chunk_bytes, draws=None):
    """Σ bits / Σ bytes over the chunks, or per draw ([resamples]) when `draws` is given."""
    if draws is None:
        return float(np.sum(chunk_bits) / np.sum(chunk_bytes))
    return chunk_bits[draws].sum(1) / chunk_bytes[draws].sum(1)


def interval(samples, level=0.95):
    """The percentile interval (lo, hi) of bootstrap samples."""
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(samples, [tail, 100.0 - tail])
    return float(lo), float(hi)


def gap_closed(method_bits, rtn_bits, float_bits, chunk_bytes, draws):
    """(point, (lo, hi)): the fraction of RTN's bits/byte gap to float that the method closes,
    (bpb_rtn − bpb_method) / (bpb_rtn − bpb_float), on all chunks and its paired bootstrap
    interval. 1 = float quality, 0 = RTN's, negative = worse than RTN."""
    def fraction(d):
        m, r, f = (bits_per_byte(b, chunk_bytes, d) for b in (method_bits, rtn_bits, float_bits))
        return (r - m) / (r - f)
    return float(fraction(None)), interval(fraction(draws))
