"""The lucidq Python API: seed examples, names, golden numbers, granularity, packing, objects."""

import doctest
import pathlib
import pickle
import re

import numpy as np
import pytest

import lucid.quantization as Q
import lucidq
from qhelpers import ALL_QDTYPES, ALL_QSCHEMES

SEEDS = pathlib.Path(__file__).resolve().parents[3] / "shared" / "seeds"

# The Examples section of seed 000, verbatim (its last line reads "FalseSee Also"
# in the seed's flattened text: "False" followed by the next heading).
SEED_000_EXAMPLES = """\
>>> import lucid.quantization as Q
>>> Q.per_channel_symmetric is Q.QScheme.PER_CHANNEL_SYMMETRIC
True
>>> Q.per_channel_symmetric.is_per_channel
True
>>> Q.per_channel_symmetric.is_symmetric
True
>>> Q.per_tensor_affine.is_symmetric
False
"""

SEED_004_TENSOR = [[191.6, -13.5, 728.6], [92.14, 295.5, -184], [0, 684.6, 245.5]]


def run_doctest(text, name):
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
    assert result.attempted > 0


# --- seed 000 ------------------------------------------------------------------


def test_seed_000_examples_verbatim():
    run_doctest(SEED_000_EXAMPLES, "seed 000")


def test_seed_000_examples_are_the_seed_text():
    seed = next(SEEDS.glob("000_*.txt"), None)
    if seed is None:
        pytest.skip(f"seed documents not found in {SEEDS}")
    text = seed.read_text()
    for line in SEED_000_EXAMPLES.splitlines():
        assert line in text, f"{line!r} is not in {seed.name}"


def test_seed_000_call_site_spelling():
    import lucid.quantization

    assert lucid.quantization.per_channel_symmetric is Q.QScheme.PER_CHANNEL_SYMMETRIC
    assert lucid.quantization.QScheme is lucidq.QScheme
    assert lucid.quantization.quantize is lucidq.quantize
    assert lucid.quantization.__version__ == lucidq.__version__


@pytest.mark.parametrize(
    "obj",
    [lucidq, Q.QScheme, Q.QDtype, Q.QParams, Q.calculate_qparams],
    ids=lambda o: getattr(o, "__name__", str(o)),
)
def test_docstring_examples(obj):
    run_doctest(obj.__doc__, obj.__name__)


# --- QScheme -------------------------------------------------------------------


def test_qscheme_members_and_aliases():
    assert [m.name for m in Q.QScheme] == [
        "PER_TENSOR_AFFINE",
        "PER_TENSOR_SYMMETRIC",
        "PER_CHANNEL_AFFINE",
        "PER_CHANNEL_SYMMETRIC",
    ]
    assert Q.per_tensor_affine is Q.QScheme.PER_TENSOR_AFFINE
    assert Q.per_tensor_symmetric is Q.QScheme.PER_TENSOR_SYMMETRIC
    assert Q.per_channel_affine is Q.QScheme.PER_CHANNEL_AFFINE
    assert Q.per_channel_symmetric is Q.QScheme.PER_CHANNEL_SYMMETRIC
    table = {
        Q.per_tensor_affine: (False, False),
        Q.per_tensor_symmetric: (False, True),
        Q.per_channel_affine: (True, False),
        Q.per_channel_symmetric: (True, True),
    }
    for scheme, (per_channel, symmetric) in table.items():
        assert scheme.is_per_channel is per_channel
        assert scheme.is_symmetric is symmetric
        assert Q.is_per_channel(scheme) is per_channel
        assert Q.is_symmetric(str(scheme)) is symmetric


@pytest.mark.parametrize("scheme", ALL_QSCHEMES, ids=str)
def test_qscheme_string_round_trip(scheme):
    text = str(scheme)
    assert text == scheme.name.lower()
    assert f"{scheme}" == text
    assert Q.QScheme.from_string(text) is scheme
    assert Q.qscheme_from_string(scheme.name) is scheme
    assert Q.QScheme.from_string(text.upper()) is scheme
    assert pickle.loads(pickle.dumps(scheme)) is scheme
    assert hash(scheme) == hash(Q.QScheme.from_string(text))


def test_qscheme_returned_objects_are_the_members():
    qp = Q.calculate_qparams([-1.0], [2.0], "per_channel_symmetric", Q.qint8)
    assert qp.qscheme is Q.per_channel_symmetric
    qp.qscheme = "per_channel_affine"
    assert qp.qscheme is Q.per_channel_affine


def test_qscheme_unknown_name():
    unknown = r'qscheme "per_tensor_affin" is unknown.*per_tensor_affine'
    with pytest.raises(ValueError, match=unknown):
        Q.QScheme.from_string("per_tensor_affin")
    with pytest.raises(ValueError, match="per_channel_symmetric"):
        Q.quantize(np.ones(3, np.float32), "symmetric", Q.qint8)
    with pytest.raises(TypeError):
        Q.is_symmetric(3)


# --- QDtype --------------------------------------------------------------------

QDTYPE_TABLE = [
    # name, bits, signed, qmin, qmax, storage, symmetric zero point
    ("qint8", 8, True, -128, 127, "int8", 0),
    ("quint8", 8, False, 0, 255, "uint8", 128),
    ("qint4", 4, True, -8, 7, "packed4", 0),
    ("quint4", 4, False, 0, 15, "packed4", 8),
    ("qint2", 2, True, -2, 1, "packed2", 0),
    ("quint2", 2, False, 0, 3, "packed2", 2),
    ("qint16", 16, True, -32768, 32767, "int16", 0),
    ("qint32", 32, True, -(2**31), 2**31 - 1, "int32", 0),
]


@pytest.mark.parametrize("row", QDTYPE_TABLE, ids=lambda r: r[0])
def test_qdtype_constants(row):
    name, bits, signed, qmin, qmax, storage, zp = row
    d = getattr(Q, name)
    assert (d.name, d.bits, d.is_signed) == (name, bits, signed)
    assert (d.quant_min, d.quant_max) == (qmin, qmax)
    assert d.storage == storage
    assert d.symmetric_zero_point == zp
    assert not d.has_custom_range
    assert d == Q.QDtype.full_range(bits, signed)
    assert d == Q.qdtype_from_string(name) == Q.QDtype(name)
    assert d == Q.qdtype_from_string(name[1:])  # "int8", "uint4", ...
    assert hash(d) == hash(Q.QDtype(name))
    assert repr(d) == f"QDtype('{name}')" and str(d) == name
    assert pickle.loads(pickle.dumps(d)) == d
    per_byte = {2: 4, 4: 2}.get(bits)
    for n in (0, 1, 2, 3, 5, 8, 9):
        expected = -(-n // per_byte) if per_byte else n * bits // 8
        assert d.storage_bytes(n) == expected


def test_qdtype_custom_ranges():
    narrow = Q.qint8.narrow_range()
    assert (narrow.quant_min, narrow.quant_max, narrow.name) == (-127, 127, "qint8[-127,127]")
    assert narrow.has_custom_range and narrow.storage == "int8"
    assert narrow == Q.QDtype("qint8[-127,127]") == Q.qint8.with_range(-127, 127)
    assert narrow != Q.qint8 and hash(narrow) != hash(Q.qint8)
    u = Q.quint8.narrow_range()
    assert (u.quant_min, u.quant_max, u.symmetric_zero_point) == (0, 254, 127)
    assert Q.quint4.with_range(0, 9).symmetric_zero_point == 4  # floor((0 + 9) / 2)
    assert Q.qint4.narrow_range() == Q.QDtype("int4[-7,7]")
    assert pickle.loads(pickle.dumps(narrow)) == narrow
    assert {Q.qint8, Q.QDtype("qint8"), narrow} == {Q.qint8, narrow}
    assert (Q.qint8 == "qint8") is False  # no implicit parsing in comparisons


# --- seed 004: the notes' worked numbers ------------------------------------------


def test_seed_004_given_scale_and_zero_point():
    x = np.array(SEED_004_TENSOR, np.float32)
    qp = Q.QParams.per_tensor(3.5, -70, Q.qint8)
    q = Q.quantize(x, qp)
    assert q.shape == (3, 3) and q.qdtype == Q.qint8
    np.testing.assert_array_equal(q.int_repr(), [[-15, -74, 127], [-44, 14, -123], [-70, 126, 0]])
    assert q.int_repr().dtype == np.int32
    assert q.storage.dtype == np.uint8 and q.storage.view(np.int8)[0] == -15
    x_hat = Q.dequantize(q)
    assert x_hat.dtype == np.float32
    np.testing.assert_array_equal(
        x_hat, [[192.5, -14.0, 689.5], [91.0, 294.0, -185.5], [0.0, 686.0, 245.0]]
    )
    assert round(Q.quantization_error(x, x_hat), 4) == 170.8753
    assert round(Q.error_metrics(x, q).mse, 4) == 170.8753
    assert round(float(np.square(x_hat - x).mean()), 4) == 170.8753


def test_seed_004_derived_qparams():
    x = np.array(SEED_004_TENSOR, np.float32)
    stats = Q.observe_range(x, Q.per_tensor_affine)
    assert stats.min[0] == -184.0 and stats.max[0] == np.float32(728.6)
    assert float(stats.max[0]) == 728.5999755859375  # the notes' r_max
    qp = Q.calculate_qparams(-184.0, 728.6, Q.per_tensor_affine, Q.qint8)
    assert qp.scale[0] == np.float32(3.578823433670343)  # the notes' float64 scale, in float32
    assert abs(qp.scale[0] / 3.578823433670343 - 1) < 2**-23
    assert qp.zero_point.tolist() == [-77]
    assert Q.choose_qparams(x, Q.per_tensor_affine, Q.qint8) == qp
    q = Q.quantize(x, Q.per_tensor_affine, Q.qint8)
    assert q.qparams == qp
    assert round(Q.quantization_error(x, Q.dequantize(q)), 4) == 1.5730


def test_seed_004_random_tensor_codes():
    # The notes' r_tensor as printed (4 decimals) with their scale and zero point.
    r = np.array(
        [
            [1.6714, -1.3308, 0.4337, 1.0956],
            [-1.8622, 2.4572, 1.0099, -1.0139],
            [0.2309, 1.3375, -0.8019, -0.6140],
            [-0.4675, -1.4661, -1.0904, 0.4055],
        ],
        np.float32,
    )
    expected = [[81, -97, 8, 47], [-128, 127, 42, -78], [-4, 61, -65, -54], [-46, -105, -82, 6]]
    q = Q.quantize(r, Q.QParams.per_tensor(0.01693895798103482, -18, Q.qint8))
    np.testing.assert_array_equal(q.int_repr(), expected)
    np.testing.assert_array_equal(Q.quantize(r, "per_tensor_affine", "qint8").int_repr(), expected)


def test_seed_004_symmetric_scale_is_narrow_range():
    # get_q_scale_symmetric: r_max / 127 (torch.iinfo(int8).max), i.e. qint8[-127,127].
    # The printed tensor is rounded to 4 decimals, hence the loose tolerance.
    t = np.array(
        [
            [-1.1284, 2.3800, -2.2940, 0.6971],
            [-0.4221, -0.4675, -0.6180, -1.4234],
            [0.0705, 1.3060, -1.2461, 0.2461],
            [-2.6319, 1.3008, 0.9376, 0.7069],
        ],
        np.float32,
    )
    qp = Q.choose_qparams(t, Q.per_tensor_symmetric, Q.qint8.narrow_range())
    assert qp.scale[0] == np.float32(np.float32(2.6319) / np.float32(127))
    assert abs(qp.scale[0] / 0.020723763413316623 - 1) < 1e-5
    assert qp.zero_point.tolist() == [0]
    codes = Q.quantize(t, qp).int_repr()
    assert codes.min() == -127 and codes.max() <= 127


# --- rounding, granularity, packing ------------------------------------------------


@pytest.mark.parametrize("scale", [1.0, 0.25, 2.0**-10, 8.0])
def test_ties_round_half_to_even(scale):
    k = np.arange(-20, 20)
    x = ((k + 0.5) * scale).astype(np.float32)
    codes = Q.quantize(x, Q.QParams.per_tensor(scale, 0, Q.qint8)).int_repr()
    expected = np.where(k % 2 == 0, k, k + 1)  # k + 0.5 -> the even neighbour
    np.testing.assert_array_equal(codes, expected)
    assert (codes % 2 == 0).all()
    # The same with a zero point: ties resolve before z is added.
    codes_z = Q.quantize(x, Q.QParams.per_tensor(scale, 5, Q.qint8)).int_repr()
    np.testing.assert_array_equal(codes_z, expected + 5)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("scheme", [Q.per_channel_affine, Q.per_channel_symmetric], ids=str)
def test_per_channel_axes_of_4d(rng, axis, scheme):
    x = (rng.standard_normal((3, 4, 5, 6)) * rng.uniform(0.1, 10, (1, 4, 1, 1))).astype(np.float32)
    x *= rng.uniform(0.5, 3, (1, 1, 1, 6)).astype(np.float32)
    qp = Q.choose_qparams(x, scheme, Q.qint8, ch_axis=axis)
    assert qp.scale.shape == (x.shape[axis],) and qp.param_shape(x.shape) == (x.shape[axis],)
    q = Q.quantize(x, scheme, Q.qint8, axis)
    assert q.qparams == qp
    codes = q.int_repr()
    for c in range(x.shape[axis]):
        part = np.take(x, c, axis=axis)
        tensor_scheme = "per_tensor_symmetric" if scheme.is_symmetric else "per_tensor_affine"
        alone = Q.calculate_qparams(part.min(), part.max(), tensor_scheme, Q.qint8)
        assert (alone.scale[0], alone.zero_point[0]) == (qp.scale[c], qp.zero_point[c])
        one = Q.QParams.per_tensor(qp.scale[c], qp.zero_point[c], Q.qint8)
        expected = Q.quantize(part, one).int_repr()
        np.testing.assert_array_equal(np.take(codes, c, axis=axis), expected)
    x_hat = Q.dequantize(q)
    slices = [np.take(x, c, axis=axis) for c in range(x.shape[axis])]
    tensor_qparams = [Q.QParams.per_tensor(s, z, Q.qint8) for s, z in zip(qp.scale, qp.zero_point)]
    expected = np.stack([Q.fake_quantize(*pair) for pair in zip(slices, tensor_qparams)], axis=axis)
    np.testing.assert_array_equal(x_hat, expected)


@pytest.mark.parametrize(
    "shape, axis, group, pshape",
    [
        ((3, 10), 1, 4, (3, 3)),
        ((3, 10), -1, 3, (3, 4)),
        ((5, 2), 0, 2, (3, 2)),
        ((2, 7, 3), 1, 7, (2, 1, 3)),
    ],
)
def test_per_group_ragged_last_group(rng, shape, axis, group, pshape):
    x = rng.standard_normal(shape).astype(np.float32)
    qp = Q.choose_qparams(x, Q.per_channel_symmetric, Q.qint4, ch_axis=axis, group_size=group)
    assert qp.is_per_group and qp.group_size == group
    assert qp.param_shape(shape) == pshape and qp.scale.size == np.prod(pshape)
    codes = Q.quantize(x, qp).int_repr()
    ax = axis % len(shape)
    scales = qp.scale.reshape(pshape)
    for index in np.ndindex(*pshape):
        block = [slice(i, i + 1) for i in index]
        block[ax] = slice(index[ax] * group, min((index[ax] + 1) * group, shape[ax]))
        block = tuple(block)
        expected = Q.choose_qparams(x[block], Q.per_tensor_symmetric, Q.qint4)
        assert expected.scale[0] == scales[index]
        np.testing.assert_array_equal(codes[block], Q.quantize(x[block], expected).int_repr())
    with pytest.raises(ValueError, match="scales for input shape"):
        Q.quantize(x, Q.QParams.per_group(qp.scale[:-1], None, axis, group, Q.qint4))


@pytest.mark.parametrize("qdtype", [Q.qint4, Q.quint4, Q.qint2, Q.quint2], ids=str)
@pytest.mark.parametrize("n", [0, 1, 3, 5, 7, 9, 31, 1001])
def test_sub_byte_pack_round_trip(rng, qdtype, n):
    codes = rng.integers(qdtype.quant_min, qdtype.quant_max, n, endpoint=True)
    packed = Q.pack_codes(codes, qdtype)
    per_byte = 8 // qdtype.bits
    assert packed.dtype == np.uint8 and packed.size == -(-n // per_byte) == qdtype.storage_bytes(n)
    np.testing.assert_array_equal(Q.unpack_codes(packed, n, qdtype), codes)
    np.testing.assert_array_equal(Q.unpack_codes(packed.tobytes(), n, qdtype), codes)
    if n % per_byte:  # unused high bits of the last byte are zero
        assert packed[-1] >> ((n % per_byte) * qdtype.bits) == 0
    # Low bits first, two's complement fields.
    fields = codes & ((1 << qdtype.bits) - 1)
    expected = np.zeros(packed.size, np.int64)
    for i, f in enumerate(fields):
        expected[i // per_byte] |= int(f) << ((i % per_byte) * qdtype.bits)
    np.testing.assert_array_equal(packed, expected)


def test_pack_layout_examples():
    assert Q.pack_codes([1, 2], Q.quint4).tolist() == [0x21]
    assert Q.pack_codes([-1, 1, -2], Q.qint4).tolist() == [0x1F, 0x0E]
    assert Q.pack_codes([1, -1, 0, -2, 1], Q.qint2).tolist() == [0x8D, 0x01]
    assert Q.pack_codes([-2, 258], Q.qint16).tolist() == [0xFE, 0xFF, 0x02, 0x01]
    assert Q.pack_codes([-2], Q.qint32).tolist() == [0xFE, 0xFF, 0xFF, 0xFF]
    assert Q.pack_codes(np.array([[3, 4], [5, 6]]), Q.quint8).tolist() == [3, 4, 5, 6]
    with pytest.raises(ValueError, match=r"codes\[1\] = 8 is outside qint4"):
        Q.pack_codes([7, 8], Q.qint4)
    with pytest.raises(ValueError, match=r"codes\[0\] = -128 is outside qint8\[-127,127\]"):
        Q.pack_codes([-128], "qint8[-127,127]")
    with pytest.raises(ValueError, match="codes: dtype float64"):
        Q.pack_codes([1.5], Q.qint8)
    with pytest.raises(ValueError, match="int32 values"):
        Q.pack_codes([2**40], Q.qint32)
    with pytest.raises(ValueError, match="storage holds 1 bytes but 3 qint4 codes need 2"):
        Q.unpack_codes(b"\x00", 3, Q.qint4)
    with pytest.raises(ValueError, match=r"count = -1 \(expected >= 0\)"):
        Q.unpack_codes(b"\x00", -1, Q.qint4)


@pytest.mark.parametrize("qdtype", ALL_QDTYPES, ids=str)
def test_quantized_tensor_storage_is_the_packed_codes(rng, qdtype):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    q = Q.quantize(x, Q.per_tensor_affine, qdtype)
    codes = q.int_repr()
    assert codes.shape == (3, 5) and codes.dtype == np.int32
    assert q.storage.size == qdtype.storage_bytes(15) and q.numel == 15
    np.testing.assert_array_equal(q.storage, Q.pack_codes(codes, qdtype))
    assert not q.storage.flags.writeable
    again = Q.QuantizedTensor(q.shape, q.qparams, q.storage)
    np.testing.assert_array_equal(again.int_repr(), codes)
    restored = pickle.loads(pickle.dumps(q))
    assert restored.shape == q.shape and restored.qparams == q.qparams
    np.testing.assert_array_equal(restored.storage, q.storage)


def test_storage_view_outlives_its_tensor():
    storage = Q.quantize(np.arange(6, dtype=np.float32), "per_tensor_affine", "quint8").storage
    assert storage.tolist() == [0, 51, 102, 153, 204, 255]


# --- input conversion rules ---------------------------------------------------------------


def test_input_conversions(rng):
    x64 = rng.standard_normal((4, 6)) * 3
    x32 = x64.astype(np.float32)
    scales = np.linspace(0.01, 0.05, 6)
    qp = Q.QParams.per_channel(scales, None, -1, Q.qint8, Q.per_channel_symmetric)
    ref = Q.quantize(x32, qp).int_repr()
    np.testing.assert_array_equal(Q.quantize(x64, qp).int_repr(), ref)  # float64 -> float32 first
    np.testing.assert_array_equal(Q.quantize(x32.tolist(), qp).int_repr(), ref)  # lists
    np.testing.assert_array_equal(Q.quantize(x32.astype(">f4"), qp).int_repr(), ref)  # big-endian
    wide = np.zeros((4, 12), np.float32)
    wide[:, ::2] = x32
    assert not wide[:, ::2].flags.c_contiguous
    np.testing.assert_array_equal(Q.quantize(wide[:, ::2], qp).int_repr(), ref)  # strided view
    np.testing.assert_array_equal(
        Q.quantize(np.asfortranarray(x32), qp).int_repr(), ref
    )  # Fortran order
    t = Q.quantize(x32.T, Q.QParams.per_channel(scales, None, 0, Q.qint8, Q.per_channel_symmetric))
    np.testing.assert_array_equal(t.int_repr(), ref.T)  # transposed view, channels now axis 0
    scalar = Q.quantize(np.float32(1.25), Q.QParams.per_tensor(0.5, 0, Q.qint8))
    assert scalar.shape == () and scalar.int_repr().shape == () and int(scalar.int_repr()) == 2
    assert Q.quantize(2.0, Q.QParams.per_tensor(0.5, 0, Q.qint8)).int_repr().tolist() == 4
    assert Q.dequantize(scalar).shape == ()
    assert Q.fake_quantize(x32, qp).dtype == np.float32
    assert Q.fake_quantize(x32.astype(np.float16), qp).dtype == np.float32


def test_fake_quantize_and_backward(rng):
    x = rng.standard_normal((5, 8)).astype(np.float32) * 4
    qp = Q.QParams.per_tensor(0.03, -10, Q.qint8)
    out, mask = Q.fake_quantize(x, qp, return_mask=True)
    np.testing.assert_array_equal(out, Q.dequantize(Q.quantize(x, qp)))
    np.testing.assert_array_equal(Q.fake_quantize(x, qp), out)
    unclamped = np.rint(x * (np.float32(1) / np.float32(0.03))) - 10
    np.testing.assert_array_equal(mask, (unclamped >= -128) & (unclamped <= 127))
    assert 0 < mask.sum() < mask.size
    grad = rng.standard_normal(x.shape).astype(np.float32)
    grad[0, 0] = np.inf
    back = Q.fake_quantize_backward(grad, mask)
    np.testing.assert_array_equal(back[mask], grad[mask])
    assert (back[~mask & np.isfinite(grad)] == 0).all()
    if not mask[0, 0]:
        assert np.isnan(back[0, 0])  # Inf * 0, as PyTorch


def test_error_metrics(rng):
    x = rng.standard_normal((3, 50)).astype(np.float32)
    x[1] *= 10
    q = Q.quantize(x, Q.QParams.per_tensor(0.02, 0, Q.qint8))
    x_hat = Q.dequantize(q)
    m = Q.error_metrics(x, q)
    err = x_hat.astype(np.float64) - x
    assert m.count == 150 and m.nonfinite_count == 0
    assert m.mse == pytest.approx(np.mean(err**2), rel=1e-12)
    assert m.rmse == pytest.approx(np.sqrt(m.mse), rel=1e-12)
    assert m.max_abs_error == pytest.approx(np.abs(err).max(), rel=1e-12)
    xd, yd = x.astype(np.float64).ravel(), x_hat.astype(np.float64).ravel()
    assert m.sqnr_db == pytest.approx(10 * np.log10(np.sum(xd**2) / np.sum(err**2)))
    cos = np.dot(xd, yd) / (np.linalg.norm(xd) * np.linalg.norm(yd))
    assert m.cosine_similarity == pytest.approx(cos, rel=1e-12)
    unclamped = np.rint(x * (np.float32(1) / np.float32(0.02)))
    assert m.fraction_saturated == np.mean((unclamped < -128) | (unclamped > 127)) > 0
    assert m.fraction_saturated == Q.error_metrics(x, q).dict()["fraction_saturated"]
    plain = Q.error_metrics(x, x_hat)
    assert plain.fraction_saturated == 0 and plain.mse == m.mse
    assert list(m.dict()) == [
        "count",
        "nonfinite_count",
        "mse",
        "rmse",
        "max_abs_error",
        "sqnr_db",
        "cosine_similarity",
        "fraction_saturated",
    ]
    assert m.dict()["mse"] == m.mse
    assert repr(m).startswith("ErrorMetrics(count=150, ")
    per_row = Q.error_metrics_per_channel(x, q, 0)
    assert len(per_row) == 3
    for i, row in enumerate(per_row):
        assert row.mse == pytest.approx(np.mean(err[i] ** 2), rel=1e-12)
    grouped = Q.quantize(x, Q.per_channel_symmetric, Q.qint4, 1, 25)
    per_group = Q.error_metrics_per_group(x, grouped)
    assert len(per_group) == 6  # 3 rows of 50: two groups of 25 each, row-major
    x_hat_grouped = Q.dequantize(grouped)
    for g, metrics in enumerate(per_group):
        row, cols = g // 2, slice(25 * (g % 2), 25 * (g % 2) + 25)
        error = x_hat_grouped[row, cols].astype(np.float64) - x[row, cols]
        assert metrics.count == 25
        assert metrics.mse == pytest.approx(np.mean(error**2), rel=1e-12)
    assert Q.error_metrics(x, x).sqnr_db == float("inf")
    zeros = np.zeros(3, np.float32)
    assert Q.error_metrics(zeros, zeros).cosine_similarity == 1.0
    assert Q.error_metrics(zeros, zeros + 1).cosine_similarity == 0.0


def test_qparams_object():
    qp = Q.QParams.per_channel([0.5, 0.25, 1.0], [1, 2, 3], 1, "quint8")
    assert qp.qscheme is Q.per_channel_affine and qp.qdtype == Q.quint8 and qp.ch_axis == 1
    assert qp.scale.dtype == np.float32 and qp.zero_point.dtype == np.int32
    assert qp.param_shape((4, 3, 2)) == (3,) and not qp.is_per_group
    assert repr(qp) == (
        "QParams(qscheme=per_channel_affine, qdtype=quint8, scale=[0.5, 0.25, 1.0], "
        "zero_point=[1, 2, 3], ch_axis=1)"
    )
    assert pickle.loads(pickle.dumps(qp)) == qp
    qp.validate_for((4, 3, 2))
    with pytest.raises(ValueError, match=r"3 scales for input shape \[4, 2\]"):
        qp.validate_for([4, 2])
    qp.scale = [1.0, -1.0, 1.0]  # assignment does not validate ...
    with pytest.raises(ValueError, match=r"scale\[1\] = -1"):
        qp.validate()  # ... validate() does
    assert Q.QParams() == Q.QParams.per_tensor(1.0, 0, Q.quint8)
    sym = Q.QParams(Q.per_tensor_symmetric, Q.quint4)
    assert sym.zero_point.tolist() == [8]
    grouped = Q.QParams.per_group([1, 1], None, 1, 32, Q.qint4)
    assert Q.describe(grouped) == "per_channel_symmetric qint4 ch_axis=1 group_size=32"
    assert Q.QParams.per_tensor(np.float32(0.1), np.int64(3), Q.qint8).scale[0] == np.float32(0.1)


def test_version_matches_cmake_project():
    text = (pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    version = re.search(r"project\(lucidq VERSION ([0-9.]+)", text).group(1)
    assert Q.__version__ == lucidq.__version__ == version
