"""Dynamic quantized LSTM, GRU, LSTMCell, GRUCell and RNNCell on the dynamic int8 GEMM.

As torch.ao.nn.quantized.dynamic's: float in, float out. Every weight matrix (weight_ih and
weight_hh of each layer and direction, all gates stacked: [G·H, I] and [G·H, H] with G = 4
for LSTM, 3 for GRU, 1 for RNNCell) is quantized to int8 once and packed; it is one
lucidq.DynamicQuantizedLinear, so each gate product is one call of the dynamic GEMM. The
input projection of a whole sequence is one GEMM per layer and direction (one quantization
of all T·B input rows, as torch on the CPU); the hidden state is quantized again at every
step for its [G·H, H] product. The gate nonlinearities and the cell update run in float32,
in torch's order of operations. LSTM and GRU take padded tensors and PackedSequences (a
packed sequence runs as torch's: all rows' input projection at once, then each step on the
sequences still running).
"""

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from ... import _lucidq
from .._paths import label
from ._dynamic_config import dynamic_product
from ._io import float_array
from ._state import QuantizedState

__all__ = ["LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"]


def _product(layer, x):
    """layer (a DynamicQuantizedLinear) applied to float32 torch rows x [M, K] -> [M, N]."""
    return torch.from_numpy(layer(float_array(x)))


def _lstm_step(gx, gh, state):
    """One LSTM update from the gate pre-activations of the input (gx) and of h (gh), [B, 4H]
    each, gates in torch's order i, f, g, o; state (h, c) -> (h', c')."""
    i, f, g, o = (gh + gx).chunk(4, 1)
    c = torch.sigmoid(f) * state[1] + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def _gru_step(gx, gh, state):
    """One GRU update, gates r, z, n ([B, 3H] each): n = tanh(x_n + r · h_n),
    h' = (h - n)·z + n."""
    xr, xz, xn = gx.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r = torch.sigmoid(hr + xr)
    z = torch.sigmoid(hz + xz)
    n = torch.tanh(xn + hn * r)
    return ((state[0] - n) * z + n,)


def _float_input(x, module, what, dims, size, expected):
    """x as a float32 torch tensor with a dim in dims and last axis size; lucidq.Error naming the
    module otherwise."""
    if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
        kind = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else f"a {type(x).__name__}"
        raise _lucidq.Error(
            f"{label(module)}: {what} is {kind} (expected a float tensor {expected})"
        )
    if x.dim() not in dims or x.shape[-1] != size:
        raise _lucidq.Error(
            f"{label(module)}: {what} has shape {tuple(x.shape)} (expected {expected})"
        )
    return x.detach().to(torch.float32)


def _state(hx, module, count, shape, names):
    """The initial state: `count` float32 tensors of `shape` (zeros when hx is None)."""
    if hx is None:
        return tuple(torch.zeros(shape) for _ in range(count))
    parts = (hx,) if count == 1 else hx
    if not isinstance(parts, (tuple, list)) or len(parts) != count:
        raise _lucidq.Error(
            f"{label(module)}: hx is a {type(hx).__name__} (expected a tuple ({', '.join(names)}))"
        )
    state = []
    for name, part in zip(names, parts):
        if not (isinstance(part, torch.Tensor) and part.is_floating_point()):
            kind = type(part).__name__
            raise _lucidq.Error(f"{label(module)}: {name} is a {kind} (expected a float tensor)")
        if tuple(part.shape) != tuple(shape):
            raise _lucidq.Error(
                f"{label(module)}: {name} has shape {tuple(part.shape)} (expected {tuple(shape)})"
            )
        state.append(part.detach().to(torch.float32).contiguous())
    return tuple(state)


def _permute(state, indices):
    """A state (a tensor or a tuple of tensors [L·D, B, H]) with its batch axis reordered."""
    if isinstance(state, torch.Tensor):
        return state.index_select(1, indices)
    if isinstance(state, (tuple, list)):
        return tuple(_permute(part, indices) for part in state)
    return state


def _unsqueeze(hx, axis):
    """An unbatched state (a tensor or a tuple of tensors) with a batch axis of 1 added;
    anything else unchanged (for _state to refuse)."""
    if isinstance(hx, torch.Tensor):
        return hx.unsqueeze(axis)
    if isinstance(hx, (tuple, list)):
        return tuple(h.unsqueeze(axis) if isinstance(h, torch.Tensor) else h for h in hx)
    return hx


def _check_products(products, shapes, bias, owner):
    """products must be exactly {name: DynamicQuantizedLinear} with the weight shapes given,
    each with a bias when bias is True and none otherwise."""
    if sorted(products) != sorted(shapes):
        raise _lucidq.Error(f"{owner}: products has {sorted(products)} (expected {sorted(shapes)})")
    for name, shape in shapes.items():
        layer = products[name]
        got = (layer.out_features, layer.in_features)
        if got != shape:
            raise _lucidq.Error(
                f"{owner}: product {name!r} has a weight of shape {list(got)} "
                f"(expected {list(shape)})"
            )
        if (layer.bias is not None) != bias:
            raise _lucidq.Error(
                f"{owner}: product {name!r} {'has no' if bias else 'has a'} bias (expected "
                f"{'one' if bias else 'none'}: bias = {bias})"
            )


class _RNNBase(QuantizedState, nn.Module):
    """Multi-layer LSTM / GRU over DynamicQuantizedLinear products named ih_l{k}[_reverse] and
    hh_l{k}[_reverse] (torch's weight names without the weight_ prefix)."""

    OBSERVES_OUTPUT = False
    _FLOAT = None  # the float type
    _GATES = 0  # gates stacked in each weight
    _STATES = ()  # names of the state tensors
    _step = None  # the update (gx, gh, state) -> state

    def __init__(self, products, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False):
        """products: {name: lucidq.DynamicQuantizedLinear} for every name of
        product_names(num_layers, bidirectional), weights [G·H, I] / [G·H, H]."""
        super().__init__()
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers, self.bias = int(num_layers), bool(bias)
        self.batch_first, self.dropout = bool(batch_first), float(dropout)
        self.bidirectional = bool(bidirectional)
        names = self.product_names(self.num_layers, self.bidirectional)
        directions, gates = 2 if self.bidirectional else 1, self._GATES * self.hidden_size
        shapes = {}
        for name in names:
            layer = int(name.split("_l")[1].split("_")[0])
            inputs = self.input_size if layer == 0 else directions * self.hidden_size
            shapes[name] = (gates, inputs if name.startswith("ih") else self.hidden_size)
        _check_products(products, shapes, self.bias, type(self).__name__)
        self.products = {name: products[name] for name in names}

    @staticmethod
    def product_names(num_layers, bidirectional):
        """ih_l0, hh_l0[, ih_l0_reverse, hh_l0_reverse], ih_l1, ...: torch's weight order."""
        suffixes = ["", "_reverse"] if bidirectional else [""]
        return [f"{kind}_l{k}{s}" for k in range(num_layers) for s in suffixes
                for kind in ("ih", "hh")]

    @classmethod
    def names_of(cls, settings):
        """The product names of a module built with these settings()."""
        return cls.product_names(settings["num_layers"], settings["bidirectional"])

    def settings(self):
        """The constructor's arguments besides products (what save_quantized stores)."""
        return {"input_size": self.input_size, "hidden_size": self.hidden_size,
                "num_layers": self.num_layers, "bias": self.bias,
                "batch_first": self.batch_first, "dropout": self.dropout,
                "bidirectional": self.bidirectional}

    @classmethod
    def from_float(cls, mod):
        """From a float nn.LSTM / nn.GRU with a dynamic qconfig (see _dynamic_config). Dropout is
        kept as an attribute and not applied (torch's dynamic modules run in eval mode)."""
        where = label(mod)
        if type(mod) is not cls._FLOAT:
            raise _lucidq.Error(
                f"{where}: {cls.__name__}.from_float takes a {cls._FLOAT.__name__} (got "
                f"{type(mod).__name__})"
            )
        proj_size = getattr(mod, "proj_size", 0)
        if proj_size:
            raise _lucidq.Error(
                f"{where}: proj_size = {proj_size} (expected 0: the dynamic quantized LSTM has "
                "no projection; quantize the other modules and leave this one float)"
            )
        products = {}
        for name in cls.product_names(mod.num_layers, mod.bidirectional):
            bias = getattr(mod, f"bias_{name}") if mod.bias else None
            products[name] = dynamic_product(
                getattr(mod, f"weight_{name}"), bias, mod.qconfig, f"{where} (weight_{name})"
            )
        new = cls(products, mod.input_size, mod.hidden_size, mod.num_layers, mod.bias,
                  mod.batch_first, mod.dropout, mod.bidirectional)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def forward(self, input, hx=None):
        """input [T, B, I] ([B, T, I] when batch_first; [T, I] unbatched) or a PackedSequence
        -> (output of the same form with D·H features, state); state as torch's: h_n (GRU) or
        (h_n, c_n) (LSTM), each [num_layers·D, B, H]."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        expected = "[B, T, I]" if self.batch_first else "[T, B, I]"
        expected += f" or unbatched [T, I], I = input_size = {self.input_size}"
        x = _float_input(input, self, "input", (2, 3), self.input_size, expected)
        batched = x.dim() == 3
        if not batched:
            x, hx = x.unsqueeze(1), _unsqueeze(hx, 1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        steps, batch = x.shape[0], x.shape[1]
        state = self._initial_state(hx, batch)
        rows, finals = self._layers(x.reshape(steps * batch, -1), [batch] * steps, state)
        output = rows.view(steps, batch, -1)
        if not batched:
            output = output.squeeze(1)
            finals = tuple(f.squeeze(1) for f in finals)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, finals[0] if len(finals) == 1 else finals

    def _forward_packed(self, packed, hx):
        """As torch: the state is given and returned in the caller's batch order
        (sorted_indices / unsorted_indices), the output is packed like the input."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        expected = f"packed rows [N, I], I = input_size = {self.input_size}"
        data = _float_input(data, self, "input.data", (2,), self.input_size, expected)
        sizes = [int(b) for b in batch_sizes]
        if hx is not None and sorted_indices is not None:
            hx = _permute(hx, sorted_indices)
        rows, finals = self._layers(data, sizes, self._initial_state(hx, sizes[0]))
        if unsorted_indices is not None:
            finals = _permute(finals, unsorted_indices)
        output = PackedSequence(rows, batch_sizes, sorted_indices, unsorted_indices)
        return output, finals[0] if len(finals) == 1 else finals

    def _initial_state(self, hx, batch):
        directions = 2 if self.bidirectional else 1
        shape = [self.num_layers * directions, batch, self.hidden_size]
        return _state(hx, self, len(self._STATES), shape, self._STATES)

    def _layers(self, rows, batch_sizes, state):
        """Runs every layer over the sequence given as rows [N, I], time-major, batch_sizes[t]
        rows at step t (non-increasing, as a PackedSequence's); returns (output rows [N, D·H],
        final states: one tensor [num_layers·D, B, H] per state part)."""
        directions = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                suffix = f"_l{layer}{'_reverse' if direction else ''}"
                run = self._backward if direction else self._forward
                initial = tuple(part[layer * directions + direction] for part in state)
                out, final = run(self.products[f"ih{suffix}"], self.products[f"hh{suffix}"],
                                 rows, batch_sizes, initial)
                outputs.append(out)
                finals.append(final)
            rows = outputs[0] if directions == 1 else torch.cat(outputs, 1)
        return rows, tuple(torch.stack(parts) for parts in zip(*finals))

    def _forward(self, ih, hh, rows, batch_sizes, initial):
        """One direction, first step to last; a sequence that ends leaves its final state."""
        gates = _product(ih, rows)
        out = torch.empty(rows.shape[0], self.hidden_size)
        s, done, offset = initial, [], 0
        for size in batch_sizes:
            if size < s[0].shape[0]:
                done.append(tuple(part[size:] for part in s))
                s = tuple(part[:size] for part in s)
            s = type(self)._step(gates[offset:offset + size], _product(hh, s[0]), s)
            out[offset:offset + size] = s[0]
            offset += size
        done.append(s)
        return out, tuple(torch.cat(parts[::-1]) for parts in zip(*done))

    def _backward(self, ih, hh, rows, batch_sizes, initial):
        """One direction, last step to first; a sequence joins with its initial state at its
        own last step."""
        gates = _product(ih, rows)
        out = torch.empty(rows.shape[0], self.hidden_size)
        s, offset = tuple(part[:batch_sizes[-1]] for part in initial), rows.shape[0]
        for size in reversed(batch_sizes):
            if size > s[0].shape[0]:
                s = tuple(torch.cat([p, q[p.shape[0]:size]]) for p, q in zip(s, initial))
            offset -= size
            s = type(self)._step(gates[offset:offset + size], _product(hh, s[0]), s)
            out[offset:offset + size] = s[0]
        return out, s

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        for key, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                             ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, key) != default:
                text += f", {key}={getattr(self, key)}"
        first = self.products["ih_l0"]
        return text + f", per_row={first.per_row}, qdtype={first.qdtype.name}"


class LSTM(_RNNBase):
    """Counterpart of torch.ao.nn.quantized.dynamic.LSTM (proj_size 0 only)."""

    _FLOAT = nn.LSTM
    _GATES = 4
    _STATES = ("h0", "c0")
    _step = _lstm_step


class GRU(_RNNBase):
    """Counterpart of torch.ao.nn.quantized.dynamic.GRU."""

    _FLOAT = nn.GRU
    _GATES = 3
    _STATES = ("h0",)
    _step = _gru_step


class _CellBase(QuantizedState, nn.Module):
    """One step of a recurrent cell over the DynamicQuantizedLinear products "ih" and "hh"."""

    OBSERVES_OUTPUT = False
    _FLOAT = None
    _GATES = 0
    _STATES = ("hx",)

    def __init__(self, products, input_size, hidden_size, bias=True):
        """products: {"ih": weight [G·H, input_size], "hh": weight [G·H, hidden_size]} as
        lucidq.DynamicQuantizedLinear."""
        super().__init__()
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bool(bias)
        gates = self._GATES * self.hidden_size
        shapes = {"ih": (gates, self.input_size), "hh": (gates, self.hidden_size)}
        _check_products(products, shapes, self.bias, type(self).__name__)
        self.products = {name: products[name] for name in self.product_names()}

    @staticmethod
    def product_names():
        return ["ih", "hh"]

    @classmethod
    def names_of(cls, settings):
        return cls.product_names()

    def settings(self):
        return {"input_size": self.input_size, "hidden_size": self.hidden_size,
                "bias": self.bias}

    @classmethod
    def from_float(cls, mod):
        """From a float nn.LSTMCell / nn.GRUCell / nn.RNNCell with a dynamic qconfig."""
        where = label(mod)
        if type(mod) is not cls._FLOAT:
            raise _lucidq.Error(
                f"{where}: {cls.__name__}.from_float takes a {cls._FLOAT.__name__} (got "
                f"{type(mod).__name__})"
            )
        products = {
            name: dynamic_product(getattr(mod, f"weight_{name}"),
                                  getattr(mod, f"bias_{name}") if mod.bias else None,
                                  mod.qconfig, f"{where} (weight_{name})")
            for name in cls.product_names()
        }
        new = cls(products, **cls._float_settings(mod))
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    @classmethod
    def _float_settings(cls, mod):
        return {"input_size": mod.input_size, "hidden_size": mod.hidden_size, "bias": mod.bias}

    def forward(self, input, hx=None):
        """input [B, I] (or unbatched [I]) -> the next state, as torch's cell: h' [B, H] (GRUCell,
        RNNCell) or (h', c') (LSTMCell)."""
        expected = f"[B, I] or unbatched [I], I = input_size = {self.input_size}"
        x = _float_input(input, self, "input", (1, 2), self.input_size, expected)
        batched = x.dim() == 2
        if not batched:
            x, hx = x.unsqueeze(0), _unsqueeze(hx, 0)
        count = len(self._STATES)
        state = _state(hx, self, count, [x.shape[0], self.hidden_size], self._STATES)
        gates = _product(self.products["ih"], x)
        state = self._update(gates, _product(self.products["hh"], state[0]), state)
        if not batched:
            state = tuple(s.squeeze(0) for s in state)
        return state[0] if count == 1 else state

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        ih = self.products["ih"]
        return text + f", per_row={ih.per_row}, qdtype={ih.qdtype.name}"


class LSTMCell(_CellBase):
    """Counterpart of torch.ao.nn.quantized.dynamic.LSTMCell."""

    _FLOAT = nn.LSTMCell
    _GATES = 4
    _STATES = ("h0", "c0")

    def _update(self, gx, gh, state):
        return _lstm_step(gx, gh, state)


class GRUCell(_CellBase):
    """Counterpart of torch.ao.nn.quantized.dynamic.GRUCell."""

    _FLOAT = nn.GRUCell
    _GATES = 3

    def _update(self, gx, gh, state):
        return _gru_step(gx, gh, state)


class RNNCell(_CellBase):
    """Counterpart of torch.ao.nn.quantized.dynamic.RNNCell: h' = tanh or relu of
    (W_ih x + b_ih) + (W_hh h + b_hh)."""

    _FLOAT = nn.RNNCell
    _GATES = 1

    def __init__(self, products, input_size, hidden_size, bias=True, nonlinearity="tanh"):
        if nonlinearity not in ("tanh", "relu"):
            raise _lucidq.Error(
                f"RNNCell: nonlinearity = {nonlinearity!r} (expected 'tanh' or 'relu')"
            )
        super().__init__(products, input_size, hidden_size, bias)
        self.nonlinearity = nonlinearity

    def settings(self):
        return {**super().settings(), "nonlinearity": self.nonlinearity}

    @classmethod
    def _float_settings(cls, mod):
        return {**super()._float_settings(mod), "nonlinearity": mod.nonlinearity}

    def _update(self, gx, gh, state):
        pre = gx + gh
        return (torch.tanh(pre) if self.nonlinearity == "tanh" else torch.relu(pre),)

    def extra_repr(self):
        text = super().extra_repr()
        return text if self.nonlinearity == "tanh" else text + ", nonlinearity=relu"
