"""Properties of quantize / dequantize over every scheme, dtype and granularity (randomised).

For values inside the representable range [s (qmin - z), s (qmax - z)], and
within half a step beyond it (those round to the end codes), the reconstruction
error is at most s / 2, plus a few float32 ulps of |x| for the rounding of
x * (1/s) and of s (q - z). Each test prints its seed.
"""

import numpy as np
import pytest

import lucidq as Q
from qhelpers import ALL_QDTYPES, random_qparams, slot_index

GRANULARITIES = [
    (Q.per_tensor_affine, "tensor"),
    (Q.per_tensor_symmetric, "tensor"),
    (Q.per_channel_affine, "channel"),
    (Q.per_channel_symmetric, "channel"),
    (Q.per_channel_affine, "group"),
    (Q.per_channel_symmetric, "group"),
]


def layout(rng, shape, kind):
    """(ch_axis, group_size) for a granularity kind, drawn at random."""
    if kind == "tensor":
        return 0, 0
    axis = int(rng.integers(-len(shape), len(shape)))
    if kind == "channel":
        return axis, 0
    return axis, int(rng.integers(1, shape[axis] + 1))


def check_reconstruction(x, qp):
    """Asserts the error bound and the code / reconstruction invariants; returns the
    share of x inside the representable range."""
    qdtype = qp.qdtype
    q = Q.quantize(x, qp)
    codes = q.int_repr().astype(np.int64)
    x_hat = Q.dequantize(q)
    slot = slot_index(x.shape, qp)
    s = qp.scale[slot].astype(np.float64)
    z = qp.zero_point[slot].astype(np.int64)

    assert codes.min() >= qdtype.quant_min and codes.max() <= qdtype.quant_max
    np.testing.assert_array_equal(x_hat, (s * (codes - z)).astype(np.float32))
    np.testing.assert_array_equal(Q.fake_quantize(x, qp), x_hat)
    zero = x == 0
    np.testing.assert_array_equal(codes[zero], z[zero])  # real 0 is exact
    assert (x_hat[zero] == 0).all()

    xd = x.astype(np.float64)
    inside = (xd >= s * (qdtype.quant_min - z - 0.5)) & (xd <= s * (qdtype.quant_max - z + 0.5))
    err = np.abs(x_hat.astype(np.float64) - xd)
    magnitude = np.maximum(np.abs(x), np.abs(x_hat)).astype(np.float32)
    bound = s / 2 + 4 * np.spacing(magnitude).astype(np.float64)
    bad = np.flatnonzero(inside & (err > bound))
    if bad.size:
        i = bad[0]
        pytest.fail(
            f"{bad.size} of {inside.sum()} values break |x - x_hat| <= s/2: x={x.flat[i]!r} "
            f"x_hat={x_hat.flat[i]!r} s={s.flat[i]!r} z={z.flat[i]} code={codes.flat[i]} "
            f"({Q.describe(qp)})"
        )
    # Outside the range the codes saturate at the nearer end.
    below = xd < s * (qdtype.quant_min - z) - s
    above = xd > s * (qdtype.quant_max - z) + s
    assert (codes[below] == qdtype.quant_min).all() and (codes[above] == qdtype.quant_max).all()
    return inside.mean()


def sample_tensor(rng, shape):
    """Normal data with magnitudes varying per element group, some exact zeros."""
    x = rng.standard_normal(shape) * np.exp(rng.uniform(-3, 3, shape[:1] + (1,) * (len(shape) - 1)))
    x = x * np.exp(rng.uniform(-2, 2, (1,) * (len(shape) - 1) + shape[-1:]))
    x.flat[rng.integers(0, x.size, 10)] = 0
    return x.astype(np.float32)


@pytest.mark.parametrize("qdtype", ALL_QDTYPES, ids=str)
@pytest.mark.parametrize("scheme, kind", GRANULARITIES, ids=lambda v: str(v))
def test_error_bound_with_chosen_qparams(rng, qdtype, scheme, kind):
    for shape in [(6, 50, 7), (64, 33), (1001,), (3, 4, 5, 6)] * 3:
        x = sample_tensor(rng, shape)
        axis, group = layout(rng, shape, kind)
        qp = Q.choose_qparams(x, scheme, qdtype, ch_axis=axis, group_size=group)
        assert np.isfinite(qp.scale).all() and (qp.scale > 0).all()
        share = check_reconstruction(x, qp)
        assert share >= 0.5, f"only {share:.0%} of the data inside the chosen range"


@pytest.mark.parametrize("qdtype", ALL_QDTYPES, ids=str)
@pytest.mark.parametrize("scheme, kind", GRANULARITIES, ids=lambda v: str(v))
def test_error_bound_with_random_qparams(rng, qdtype, scheme, kind):
    for shape in [(5, 40, 6), (3, 129), (2, 3, 4, 50)] * 3:
        axis, group = layout(rng, shape, kind)
        qp = random_qparams(rng, qdtype, scheme, shape, axis, group)
        slot = slot_index(shape, qp)
        s = qp.scale[slot].astype(np.float64)
        z = qp.zero_point[slot].astype(np.float64)
        # Code-space positions across the grid and a little beyond, exact ties among them.
        u = rng.uniform(qdtype.quant_min - 0.75, qdtype.quant_max + 0.75, shape)
        ties = rng.random(shape) < 0.2
        u[ties] = np.floor(u[ties]) + 0.5
        x = ((u - z) * s).astype(np.float32)
        x.flat[rng.integers(0, x.size, 5)] = 0
        assert check_reconstruction(x, qp) > 0.5


@pytest.mark.parametrize("qdtype", ALL_QDTYPES, ids=str)
def test_codes_are_monotonic(rng, qdtype):
    x = np.sort(rng.standard_normal(5000).astype(np.float32) * 4)
    for scheme in (Q.per_tensor_affine, Q.per_tensor_symmetric):
        q = Q.quantize(x, scheme, qdtype)
        codes = q.int_repr()
        assert (np.diff(codes) >= 0).all()
        if not scheme.is_symmetric and q.qparams.scale[0] > Q.default_eps:
            # The range's ends land on (or next to, when x * (1/s) and min / s round
            # differently) the ends of the grid; with the eps floor they need not.
            assert codes[0] <= qdtype.quant_min + 1 and codes[-1] >= qdtype.quant_max - 1
