"""The run-time controls: pinning the kernel tier and the thread count from Python."""

import numpy as np
import pytest

import lucidq


def test_every_supported_tier_gives_the_same_codes():
    seed = 20261130
    print(f"seed={seed}")
    x = np.random.default_rng(seed).standard_normal(10_001).astype(np.float32) * 3
    qp = lucidq.QParams.per_tensor(0.02, 3, lucidq.qint8)
    original = lucidq.active_isa()
    tiers = lucidq.supported_isas()
    assert tiers[0] == "reference"
    try:
        codes = {}
        for tier in tiers:
            lucidq.set_isa(tier)
            assert lucidq.active_isa() == tier
            codes[tier] = lucidq.quantize(x, qp).int_repr()
        for tier in tiers:
            np.testing.assert_array_equal(codes[tier], codes["reference"])
    finally:
        lucidq.set_isa(original)


def test_every_supported_variant_can_be_pinned_and_gives_the_same_codes():
    seed = 20261201
    print(f"seed={seed}")
    x = np.random.default_rng(seed).standard_normal(4099).astype(np.float32)
    qp = lucidq.QParams.per_tensor(0.03, -2, lucidq.qint8)
    original = lucidq.active_variant()
    variants = lucidq.supported_variants()
    assert variants[0] == "reference"
    try:
        codes = {}
        for variant in variants:
            lucidq.set_isa(variant)
            assert lucidq.active_variant() == variant
            codes[variant] = lucidq.quantize(x, qp).int_repr()
        for variant in variants:
            np.testing.assert_array_equal(codes[variant], codes["reference"])
    finally:
        lucidq.set_isa(original)
    assert lucidq.active_variant() == original


def test_unknown_tier_is_a_clear_error():
    with pytest.raises(ValueError, match="avx9"):
        lucidq.set_isa("avx9")


def test_thread_count_round_trips_and_rejects_zero():
    before = lucidq.num_threads()
    try:
        lucidq.set_num_threads(1)
        assert lucidq.num_threads() == 1
        with pytest.raises(ValueError):
            lucidq.set_num_threads(0)
    finally:
        lucidq.set_num_threads(before)
    assert "avx2" in lucidq.cpu_features() or lucidq.supported_isas() == ["reference"]
