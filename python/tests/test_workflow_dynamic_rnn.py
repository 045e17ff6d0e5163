"""Dynamic quantized LSTM / GRU / LSTMCell / GRUCell / RNNCell against float and torch.ao's.

The accuracy bound: each module's output error against the float module (relative RMS over
the output sequence and the final states) is at most 1.5 × the error of torch.ao's dynamic
module on the same float model and input, plus 1e-4. Both quantize the weights once to int8
and the activations (the input rows and the hidden state at every step) to 8 bits; lucidq's
default is finer (per-channel weights, one scale per row) and torch.ao's qnnpack engine is
the tighter of Debian torch's two (onednn honours reduce_range: 7-bit activations). Over 20
seeds of the ten padded and cell cases below the ratio measured 0.55 to 1.10 (mean 0.80):
the 1.5 factor is room for the spread of rounding error between two 8-bit quantizations of
one small model, not for a different arithmetic; 1e-4 is float32 noise. With torch's own scheme (per-tensor weights from its weight observer, one
activation scale per call) the outputs must equal torch.ao's within 1e-6 (measured: at most
1.2e-7, float32 rounding; the quantization error itself is ~5e-3).
"""

import contextlib
import copy

import pytest
import torch
from torch import nn
from torch.ao.quantization import default_dynamic_qconfig
from torch.ao.quantization import quantize_dynamic as torch_quantize_dynamic
from torch.ao.quantization.observer import default_weight_observer
from torch.nn.utils.rnn import pack_padded_sequence

import lucidq
from lucidq.workflow import DynamicConfig
from lucidq.workflow.quantized import dynamic as LD

FACTOR, SLACK = 1.5, 1e-4
T, B, I, H = 6, 3, 8, 16
TORCH_SCHEME = DynamicConfig(per_row=False, weight=default_weight_observer)


@contextlib.contextmanager
def qnnpack():
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = "qnnpack"
    try:
        yield
    finally:
        torch.backends.quantized.engine = previous


def seeded(seed):
    print(f"seed = {seed}")
    torch.manual_seed(seed)


class Net(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, *args):
        return self.rnn(*args)


def flat(result):
    """Every tensor of a module's result (output, h_n, c_n, ...) in one vector."""
    if isinstance(result, torch.Tensor):
        return result.reshape(-1)
    return torch.cat([flat(r) for r in result])


def rel_error(got, want):
    got, want = flat(got), flat(want)
    return float((got - want).norm() / want.norm())


def run_cell(cell, xs, hx):
    """The cell over steps xs [T, B, I], its state fed back; all states returned."""
    states = []
    for x in xs:
        hx = cell(x, hx)
        states.append(hx)
    return states


def compare(model, args, spec=None, run=None, name=""):
    """(lucidq's error, torch.ao's error) against the float model and the largest difference
    between lucidq's and torch.ao's outputs, printed."""
    run = run or (lambda m: m(*args))
    model.eval()
    with torch.no_grad():
        want = run(model)
        with qnnpack():
            torch_q = torch_quantize_dynamic(model, {type(model.rnn)}, dtype=torch.qint8)
            theirs = run(torch_q)
        ours_q = lucidq.quantize_dynamic(model, spec or {type(model.rnn)})
        assert isinstance(ours_q.rnn, getattr(LD, type(model.rnn).__name__))
        ours = run(ours_q)
    ours_err, torch_err = rel_error(ours, want), rel_error(theirs, want)
    apart = float((flat(ours) - flat(theirs)).abs().max())
    print(f"{name}: lucidq {ours_err:.5f}  torch.ao {torch_err:.5f}  "
          f"ratio {ours_err / torch_err:.2f}  max |lucidq - torch.ao| {apart:.1e}")
    return ours_err, torch_err, apart


RNN_CASES = {
    "LSTM 1 layer": (lambda: nn.LSTM(I, H), False, False),
    "LSTM 2 layers, (h0, c0)": (lambda: nn.LSTM(I, H, 2), False, True),
    "LSTM 2 layers bidirectional batch_first": (
        lambda: nn.LSTM(I, H, 2, bidirectional=True, batch_first=True), True, True),
    "LSTM dropout 0.5 (ignored)": (lambda: nn.LSTM(I, H, 2, dropout=0.5), False, False),
    "GRU 1 layer": (lambda: nn.GRU(I, H), False, False),
    "GRU 2 layers bidirectional, h0": (lambda: nn.GRU(I, H, 2, bidirectional=True), False, True),
}


def rnn_args(rnn, batch_first, with_state):
    x = torch.randn(B, T, I) if batch_first else torch.randn(T, B, I)
    if not with_state:
        return (x,)
    shape = (rnn.num_layers * (2 if rnn.bidirectional else 1), B, H)
    h0 = 0.5 * torch.randn(shape)
    return (x, (h0, 0.5 * torch.randn(shape))) if isinstance(rnn, nn.LSTM) else (x, h0)


@pytest.mark.parametrize("case", list(RNN_CASES))
@pytest.mark.parametrize("scheme", ["lucidq default", "torch scheme"])
def test_rnn_error_within_torch_ao(case, scheme):
    seeded(40 + list(RNN_CASES).index(case))
    make, batch_first, with_state = RNN_CASES[case]
    model = Net(make())
    args = rnn_args(model.rnn, batch_first, with_state)
    spec = {type(model.rnn): TORCH_SCHEME} if scheme == "torch scheme" else None
    ours, theirs, apart = compare(model, args, spec, name=f"{case} ({scheme})")
    assert ours <= FACTOR * theirs + SLACK
    if spec is not None:
        assert apart <= 1e-6


CELL_CASES = {
    "LSTMCell": lambda: nn.LSTMCell(I, H),
    "GRUCell": lambda: nn.GRUCell(I, H),
    "RNNCell tanh": lambda: nn.RNNCell(I, H),
    "RNNCell relu": lambda: nn.RNNCell(I, H, nonlinearity="relu"),
}


@pytest.mark.parametrize("case", list(CELL_CASES))
@pytest.mark.parametrize("scheme", ["lucidq default", "torch scheme"])
def test_cell_error_within_torch_ao(case, scheme):
    seeded(50 + list(CELL_CASES).index(case))
    model = Net(CELL_CASES[case]())
    xs = torch.randn(T, B, I)
    h = 0.5 * torch.randn(B, H)
    hx = (h, 0.5 * torch.randn(B, H)) if case == "LSTMCell" else h
    spec = {type(model.rnn): TORCH_SCHEME} if scheme == "torch scheme" else None
    ours, theirs, apart = compare(model, (), spec, run=lambda m: run_cell(m, xs, hx),
                                  name=f"{case} over {T} steps ({scheme})")
    assert ours <= FACTOR * theirs + SLACK
    if spec is not None:
        assert apart <= 1e-6


def test_lstm_without_bias_matches_zero_bias_reference():
    """torch.ao refuses bias=False; its error on the same function (zero biases) is the bound."""
    seeded(60)
    model = Net(nn.LSTM(I, H, 2, bias=False))
    reference = Net(nn.LSTM(I, H, 2))
    with torch.no_grad():
        for name, value in reference.rnn.named_parameters():
            value.copy_(getattr(model.rnn, name) if name.startswith("weight") else 0.0)
    x = torch.randn(T, B, I)
    with torch.no_grad():
        want = model(x)
        assert rel_error(reference(x), want) == 0.0
        with qnnpack():
            theirs = rel_error(
                torch_quantize_dynamic(reference, {nn.LSTM}, dtype=torch.qint8)(x), want)
        quantized = lucidq.quantize_dynamic(model, {nn.LSTM})
        assert quantized.rnn.products["ih_l0"].bias is None
        ours = rel_error(quantized(x), want)
    print(f"LSTM bias=False: lucidq {ours:.5f}  torch.ao (zero biases) {theirs:.5f}")
    assert ours <= FACTOR * theirs + SLACK


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("scheme", ["lucidq default", "torch scheme"])
def test_packed_sequence_within_torch_ao(kind, scheme):
    """Sequences of lengths 4, 6, 1, 4 (unsorted), packed; state given in the caller's order."""
    seeded(70 + (kind == "GRU"))
    model = Net(getattr(nn, kind)(I, H, 2, bidirectional=True))
    lengths = [4, T, 1, 4]
    x = torch.randn(T, len(lengths), I)
    packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
    h0 = 0.5 * torch.randn(4, len(lengths), H)
    state = (h0, 0.5 * torch.randn(4, len(lengths), H)) if kind == "LSTM" else h0

    def run(m):
        output, final = m(packed, state)
        assert torch.equal(output.batch_sizes, packed.batch_sizes)
        assert torch.equal(output.unsorted_indices, packed.unsorted_indices)
        return output.data, final

    spec = {type(model.rnn): TORCH_SCHEME} if scheme == "torch scheme" else None
    ours, theirs, apart = compare(model, (), spec, run=run, name=f"packed {kind} ({scheme})")
    assert ours <= FACTOR * theirs + SLACK
    if spec is not None:
        assert apart <= 1e-6


def test_weight_codes_equal_torch_ao_with_its_qconfig():
    """With torch's default_dynamic_qconfig the weights are torch.ao's codes and scales."""
    seeded(61)
    model = Net(nn.LSTM(I, H, 2, bidirectional=True)).eval()
    with qnnpack():
        torch_q = torch_quantize_dynamic(model, {nn.LSTM}, dtype=torch.qint8)
    ours = lucidq.quantize_dynamic(model, {nn.LSTM: default_dynamic_qconfig})
    torch_weights = torch_q.rnn.get_weight()
    assert len(torch_weights) == len(ours.rnn.products) == 8
    for name, layer in ours.rnn.products.items():
        theirs = torch_weights[f"weight_{name}"]
        assert torch.equal(torch.from_numpy(layer.packed_weight.unpack()), theirs.int_repr())
        qparams = layer.packed_weight.to_quantized().qparams
        assert str(qparams.qscheme) == "per_tensor_symmetric"
        assert list(qparams.scale) == pytest.approx([theirs.q_scale()], rel=1e-7)


def test_quantize_dynamic_default_set_swaps_recurrent_modules():
    """qconfig_spec=None: torch 1.13's default set (Linear, LSTM, GRU and the three cells)."""
    seeded(62)
    model = nn.Module()
    model.lstm, model.gru, model.fc = nn.LSTM(I, H), nn.GRU(I, H), nn.Linear(H, 4)
    model.cells = nn.ModuleList([nn.LSTMCell(I, H), nn.GRUCell(I, H), nn.RNNCell(I, H)])
    quantized = lucidq.quantize_dynamic(model)
    assert isinstance(quantized.lstm, LD.LSTM) and isinstance(quantized.gru, LD.GRU)
    assert isinstance(quantized.fc, LD.Linear)
    assert [type(c) for c in quantized.cells] == [LD.LSTMCell, LD.GRUCell, LD.RNNCell]
    assert type(model.lstm) is nn.LSTM  # not in place
    only_linear = lucidq.quantize_dynamic(model, {nn.Linear})
    assert type(only_linear.lstm) is nn.LSTM and isinstance(only_linear.fc, LD.Linear)
    assert "DynamicQuantized" not in repr(quantized.lstm)
    assert repr(quantized.lstm) == "LSTM(8, 16, per_row=True, qdtype=quint8)"


def test_unbatched_input_equals_batch_of_one():
    seeded(63)
    lstm = lucidq.quantize_dynamic(Net(nn.LSTM(I, H, 2, bidirectional=True)), {nn.LSTM}).rnn
    cell = lucidq.quantize_dynamic(Net(nn.GRUCell(I, H)), {nn.GRUCell}).rnn
    x, h0, c0 = torch.randn(T, I), torch.randn(4, H), torch.randn(4, H)
    out, (h, c) = lstm(x, (h0, c0))
    out1, (h1, c1) = lstm(x[:, None], (h0[:, None], c0[:, None]))
    assert torch.equal(out, out1[:, 0]) and torch.equal(h, h1[:, 0]) and torch.equal(c, c1[:, 0])
    assert torch.equal(cell(x[0], h0[0]), cell(x[:1], h0[:1])[0])


def test_errors_name_the_module():
    seeded(64)
    model = nn.Sequential()
    model.add_module("enc", nn.LSTM(I, H, proj_size=4))
    with pytest.raises(lucidq.Error, match=r'LSTM "enc": proj_size = 4 \(expected 0'):
        lucidq.quantize_dynamic(model, {nn.LSTM})
    model = nn.Sequential()
    model.add_module("enc", nn.LSTM(I, H, 2))
    lstm = lucidq.quantize_dynamic(model, {nn.LSTM}).enc
    x = torch.randn(T, B, I)
    with pytest.raises(lucidq.Error, match=r'LSTM "enc": input has shape \(6, 3, 7\) '
                                           r'\(expected \[T, B, I\] .*input_size = 8'):
        lstm(torch.randn(T, B, I - 1))
    with pytest.raises(lucidq.Error, match=r'LSTM "enc": input is a torch.int64 tensor'):
        lstm(torch.zeros(T, B, I, dtype=torch.long))
    with pytest.raises(lucidq.Error, match=r'LSTM "enc": h0 has shape \(1, 3, 16\) '
                                           r'\(expected \(2, 3, 16\)\)'):
        lstm(x, (torch.zeros(1, B, H), torch.zeros(2, B, H)))
    with pytest.raises(lucidq.Error, match=r'LSTM "enc": hx is a Tensor \(expected a tuple '
                                           r'\(h0, c0\)\)'):
        lstm(x, torch.zeros(2, B, H))
    cell = lucidq.quantize_dynamic(nn.Sequential(nn.GRUCell(I, H)), {nn.GRUCell})[0]
    with pytest.raises(lucidq.Error, match=r'GRUCell "0": hx has shape \(2, 16\) '
                                           r'\(expected \(3, 16\)\)'):
        cell(torch.randn(B, I), torch.zeros(2, H))


def test_save_and_load_round_trip(tmp_path):
    seeded(65)
    model = nn.Module()
    model.lstm = nn.LSTM(I, H, 2, bidirectional=True, batch_first=True)
    model.gru = nn.GRU(I, H, bias=False)
    model.cell = nn.RNNCell(I, H, nonlinearity="relu")
    model.eval()
    spec = {"lstm": DynamicConfig(), "gru": TORCH_SCHEME, "cell": DynamicConfig()}
    quantized = lucidq.quantize_dynamic(model, spec)
    lucidq.save_quantized(quantized, tmp_path / "rnn.safetensors")
    fresh = nn.Module()
    fresh.lstm = nn.LSTM(I, H, 2, bidirectional=True, batch_first=True)
    fresh.gru = nn.GRU(I, H, bias=False)
    fresh.cell = nn.RNNCell(I, H)
    loaded = lucidq.load_quantized(tmp_path / "rnn.safetensors", fresh)
    assert isinstance(loaded.gru, LD.GRU) and loaded.cell.nonlinearity == "relu"
    assert not loaded.gru.products["ih_l0"].per_row
    x = torch.randn(T, B, I)
    for name, arg in (("lstm", x.transpose(0, 1)), ("gru", x), ("cell", x[0])):
        assert torch.equal(flat(getattr(quantized, name)(arg)), flat(getattr(loaded, name)(arg)))


def test_constructor_checks_products_and_copies_run_alike():
    seeded(66)
    lstm = lucidq.quantize_dynamic(Net(nn.LSTM(I, H, 2, bidirectional=True)), {nn.LSTM}).rnn
    products = dict(lstm.products)
    with pytest.raises(lucidq.Error, match=r"LSTM: products has .* \(expected \['hh_l0', "
                                           r"'hh_l0_reverse', 'ih_l0', 'ih_l0_reverse'\]\)"):
        LD.LSTM(products, I, H, 1, bidirectional=True)
    with pytest.raises(lucidq.Error, match=r"LSTM: product 'ih_l0' has a bias \(expected none"):
        LD.LSTM(products, I, H, 2, bias=False, bidirectional=True)
    products["ih_l1"] = products["ih_l0"]
    with pytest.raises(lucidq.Error, match=r"LSTM: product 'ih_l1' has a weight of shape "
                                           r"\[64, 8\] \(expected \[64, 32\]\)"):
        LD.LSTM(products, I, H, 2, bidirectional=True)
    x = torch.randn(T, B, I)
    assert torch.equal(flat(copy.deepcopy(lstm)(x)), flat(lstm(x)))
