"""Row-wise quantized embedding tables: torch's prepacked bytes, lookups and bags.

- lucidq.QuantizedEmbeddingTable.quantize writes the bytes torch's embedding_bag_byte_prepack /
  embedding_bag_4bit_prepack write (8-bit and quint4x2 rows), and reads them back.
- Sum bags (offsets, per_sample_weights, include_last_offset) equal torch's quantized
  embedding_bag_{byte,4bit}_rowwise_offsets within a float tolerance derived from the row
  scales: each decoded element q·s + b is the same value, so they differ only by float32
  rounding of the sums, at most 8 ulp of Σ_i |w_i| (255·s_r + |b_r|) per bag.
- torch 1.13's quantized ops return the sum for mode "mean" and "max" (measured here, see
  test_torch_quantized_mean_is_a_sum), so mean / max / padding_idx are checked against
  torch.nn.functional.embedding_bag on the dequantized table, with the same tolerance.
- The quantized modules (Embedding, EmbeddingBag) from the workflow's convert against
  torch.ao.nn.quantized's: torch quantizes through its observer, so codes may differ by one:
  tolerance Σ_i |w_i| · s_r plus the rounding term.
"""

import numpy as np
import pytest

import lucidq as Q

torch = pytest.importorskip("torch", reason="parity with torch needs python3-torch")
import torch.ao.nn.quantized as nnq  # noqa: E402
from torch import nn  # noqa: E402

EPS = np.finfo(np.float32).eps
PREPACK = {8: "embedding_bag_byte_prepack", 4: "embedding_bag_4bit_prepack"}
BAG = {8: "embedding_bag_byte_rowwise_offsets", 4: "embedding_bag_4bit_rowwise_offsets"}


def bag_tolerance(table, indices, offsets, weights=None, codes=0.0):
    """Per bag: 8 ulp of Σ |w_i| (255 s_r + |b_r|) (+ codes · Σ |w_i| s_r for code differences)."""
    s, b = table.scales(), np.abs(table.biases())
    w = np.ones(len(indices), np.float32) if weights is None else np.abs(weights)
    ends = list(offsets[1:]) + [len(indices)]
    out = []
    for begin, end in zip(offsets, ends):
        r = indices[begin:end]
        magnitude = float(np.sum(w[begin:end] * (255 * s[r] + b[r])))
        out.append(8 * EPS * magnitude + codes * float(np.sum(w[begin:end] * s[r])) + 1e-7)
    return np.array(out)[:, None]


@pytest.fixture
def weight(seed):
    torch.manual_seed(seed)
    return torch.randn(64, 20) * torch.linspace(0.1, 3, 64)[:, None]


@pytest.mark.parametrize("bits", [8, 4])
def test_prepacked_bytes_are_torchs(weight, bits):
    theirs = getattr(torch.ops.quantized, PREPACK[bits])(weight).numpy()
    table = Q.QuantizedEmbeddingTable.quantize(weight.numpy(), bits=bits)
    np.testing.assert_array_equal(table.prepacked(), theirs)
    back = Q.QuantizedEmbeddingTable.from_prepacked(theirs, 20, bits)
    np.testing.assert_array_equal(back.codes(), table.codes())
    assert table.codes().max() <= (255 if bits == 8 else 15)
    # decode = code · scale + bias, only for the rows asked for
    rows = np.array([3, 3, 63, 0])
    expected = (table.codes()[rows].astype(np.float32) * table.scales()[rows, None]
                + table.biases()[rows, None])
    np.testing.assert_array_equal(table.lookup(rows), expected)
    assert table.lookup(rows.reshape(2, 2)).shape == (2, 2, 20)


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_sum_bags_equal_torchs_quantized_op(weight, bits, weighted, include_last_offset):
    packed = getattr(torch.ops.quantized, PREPACK[bits])(weight)
    table = Q.QuantizedEmbeddingTable.from_prepacked(packed.numpy(), 20, bits)
    gen = torch.Generator().manual_seed(1)
    indices = torch.randint(0, 64, (40,), generator=gen)
    offsets = torch.tensor([0, 7, 7, 19, 33] + ([40] if include_last_offset else []))
    psw = torch.rand(40, generator=gen) * 2 - 0.5 if weighted else None
    theirs = getattr(torch.ops.quantized, BAG[bits])(
        packed, indices, offsets, False, 0, False, psw, None, include_last_offset).numpy()
    ours = table.bag(indices.numpy(), offsets.numpy(), "sum",
                     None if psw is None else psw.numpy(), include_last_offset)
    assert ours.shape == theirs.shape == (5, 20)
    tol = bag_tolerance(table, indices.numpy(), offsets.numpy()[:5],
                        None if psw is None else psw.numpy())
    err = np.abs(ours - theirs)
    print(f"{bits}-bit sum bags (weighted={weighted}): max |lucidq - torch| = {err.max():.3g}, "
          f"smallest tolerance {tol.min():.3g}")
    assert np.all(err <= tol)
    np.testing.assert_array_equal(ours[1], 0)  # the empty bag


def test_torch_quantized_mean_is_a_sum(weight):
    """Why mean / max are compared with float torch: torch 1.13's quantized op sums."""
    packed = torch.ops.quantized.embedding_bag_byte_prepack(weight)
    indices, offsets = torch.tensor([1, 2, 3, 4]), torch.tensor([0])
    as_mean = torch.ops.quantized.embedding_bag_byte_rowwise_offsets(
        packed, indices, offsets, False, 1, False, None, None, False)
    as_sum = torch.ops.quantized.embedding_bag_byte_rowwise_offsets(
        packed, indices, offsets, False, 0, False, None, None, False)
    print(f"torch mean mode / sum mode = {(as_mean / as_sum).mean().item():.3f}")


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_modes_and_padding_idx_against_float_torch_on_the_decoded_table(weight, bits, mode):
    table = Q.QuantizedEmbeddingTable.quantize(weight.numpy(), bits=bits)
    decoded = torch.from_numpy(table.lookup(np.arange(64)))
    gen = torch.Generator().manual_seed(2)
    indices = torch.randint(0, 64, (50,), generator=gen)
    indices[[3, 10, 11]] = 5
    offsets = torch.tensor([0, 4, 9, 9, 30])
    for padding_idx in (None, 5):
        expected = nn.functional.embedding_bag(indices, decoded, offsets, mode=mode,
                                               padding_idx=padding_idx).numpy()
        ours = table.bag(indices.numpy(), offsets.numpy(), mode,
                         padding_idx=-1 if padding_idx is None else padding_idx)
        tol = bag_tolerance(table, indices.numpy(), offsets.numpy())
        assert np.all(np.abs(ours - expected) <= tol), (mode, padding_idx)
    two_d = table.bag(indices[:48].reshape(6, 8).numpy(), None, mode)
    flat = table.bag(indices[:48].numpy(), np.arange(0, 48, 8), mode)
    np.testing.assert_array_equal(two_d, flat)


@pytest.mark.parametrize("bits", [8, 4])
def test_modules_through_convert_against_torch(weight, bits):
    import lucidq.workflow.quantize as W
    from lucidq.workflow import quantized as LWQ

    qconfig = (torch.ao.quantization.float_qparams_weight_only_qconfig if bits == 8 else
               torch.ao.quantization.float_qparams_weight_only_qconfig_4bit)
    model = nn.Module()
    model.emb = nn.Embedding(64, 20)
    model.bag = nn.EmbeddingBag(64, 20, mode="sum")
    model.emb.weight.data.copy_(weight)
    model.bag.weight.data.copy_(weight)
    model.emb.qconfig = model.bag.qconfig = qconfig
    with pytest.warns(UserWarning, match="no QuantStub"):  # embeddings take indices, not floats
        prepared = W.prepare(model.eval())
    converted = W.convert(prepared)
    assert isinstance(converted.emb, LWQ.Embedding) and isinstance(converted.bag, LWQ.EmbeddingBag)
    assert converted.bag.table.bits == bits

    torch_bag = nn.EmbeddingBag(64, 20, mode="sum")
    torch_bag.weight.data.copy_(weight)
    torch_bag.qconfig = qconfig
    theirs = nnq.EmbeddingBag.from_float(torch_bag)
    indices = torch.tensor([1, 5, 9, 63, 0, 0, 17])
    offsets = torch.tensor([0, 3, 4])
    psw = torch.tensor([0.5, 1.0, -2.0, 1.5, 1.0, 0.25, 3.0])
    ours = converted.bag(indices, offsets, per_sample_weights=psw).numpy()
    tol = bag_tolerance(converted.bag.table, indices.numpy(), offsets.numpy(), psw.numpy(),
                        codes=1.0)
    err = np.abs(ours - theirs(indices, offsets, per_sample_weights=psw).numpy())
    print(f"{bits}-bit EmbeddingBag module: max |lucidq - torch| = {err.max():.3g}")
    assert np.all(err <= tol)

    torch_emb = nn.Embedding(64, 20)
    torch_emb.weight.data.copy_(weight)
    torch_emb.qconfig = qconfig
    if bits == 8:  # torch 1.13's quantized Embedding takes quint8 only
        their_rows = nnq.Embedding.from_float(torch_emb)(indices).numpy()
        our_rows = converted.emb(indices).numpy()
        s = converted.emb.table.scales()[indices.numpy()][:, None]
        assert np.all(np.abs(our_rows - their_rows) <= s + 8 * EPS * np.abs(their_rows) + 1e-7)


def test_errors_name_the_input(weight):
    table = Q.QuantizedEmbeddingTable.quantize(weight.numpy(), bits=8)
    with pytest.raises(ValueError, match=r"indices\[1\] = 64 \(expected 0..63"):
        table.lookup([0, 64])
    with pytest.raises(ValueError, match=r"offsets\[0\] = 1 \(expected 0\)"):
        table.bag([0, 1], [1])
    with pytest.raises(ValueError, match=r"offsets\[2\] = 1"):
        table.bag([0, 1, 2], [0, 2, 1])
    with pytest.raises(ValueError, match="only supported with mode \"sum\""):
        table.bag([0, 1], [0], "mean", [1.0, 1.0])
    with pytest.raises(ValueError, match=r"bits = 3 \(expected 4 or 8\)"):
        Q.QuantizedEmbeddingTable.quantize(weight.numpy(), bits=3)
    bad = weight.numpy().copy()
    bad[2, 7] = np.nan
    with pytest.raises(ValueError, match=r"w\[2, 7\] = nan"):
        Q.QuantizedEmbeddingTable.quantize(bad, bits=4)
