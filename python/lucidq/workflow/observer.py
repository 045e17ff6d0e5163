"""lucidq's observers as torch modules: an identity forward that observes, torch 1.13's names and arguments.

Every class wraps the C++ observer of the same name (lucidq.MinMaxObserver,
...), so statistics and qparams come from the core and equal torch's
(see docs/calibration.md for the rules):

    MinMaxObserver(dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                   quant_min=None, quant_max=None, eps=float32 eps)
    MovingAverageMinMaxObserver(averaging_constant=0.01, dtype=..., ...)
    PerChannelMinMaxObserver(ch_axis=0, dtype=quint8, qscheme=per_channel_affine, ...)
    MovingAveragePerChannelMinMaxObserver(averaging_constant=0.01, ch_axis=0, ...)
    HistogramObserver(bins=2048, upsample_rate=128, dtype=..., ..., binning="pytorch")
    PercentileObserver(percentile=99.99, bins=2048, ch_axis=0, ...)
    EntropyObserver(bins=2048, ...)         MseObserver(bins=2048, ch_axis=0, ...)
    FixedQParamsObserver(scale, zero_point, dtype=quint8, qscheme=..., quant_min=0, quant_max=255)
    PlaceholderObserver(dtype=torch.float32, custom_op_name="", compute_dtype=None)
    NoopObserver(dtype=torch.float16, custom_op_name="")

dtype / qscheme accept lucidq's QDtype / QScheme, their names, or torch's
(torch.qint8, torch.per_channel_symmetric). Attributes: dtype (a lucidq QDtype,
as configured), qscheme, reduce_range, quant_min / quant_max (the effective
grid, halved by reduce_range as torch does), eps, ch_axis.

forward(x) observes x.detach() (float32 / float16 / float64 CPU tensors are read
without a copy, bfloat16 as bit patterns; NaN / Inf are skipped) and returns x
itself. A non-floating-point input raises ValueError.

calculate_qparams() -> (scale float32 tensor, zero_point int64 tensor), shape
(1,) per tensor and (C,) per channel, like torch. Before any finite value was
observed it raises ValueError saying the observer saw no data (torch would warn
and return (1.0, 0)).

State: buffers min_val / max_val (0-d per tensor; (C,) per channel, empty
before data; the histogram observers: the range their histogram covers),
`histogram` for HistogramObserver (these follow every batch), and
`observer_state`: the C++ observer's complete state (configuration and
statistics, save_state() JSON as uint8 bytes, written when state_dict() is
taken), which is what load_state_dict restores; the other buffers are
read-only mirrors of the C++ state. Loading resizes every buffer to the saved shape
(torch's per-channel pattern), so a fresh observer loads a calibrated one.

`Class.with_args(**kw)` gives a factory (for QConfig) with a readable repr.

>>> import torch, lucidq.workflow as W
>>> obs = W.MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
>>> _ = obs(torch.tensor([-1.0, 0.5, 2.54]))
>>> scale, zero_point = obs.calculate_qparams()
>>> round(scale.item(), 6), zero_point.tolist()
(0.019922, [0])
>>> W.PerChannelMinMaxObserver.with_args(ch_axis=1)
PerChannelMinMaxObserver.with_args(ch_axis=1)
"""

import json
from typing import Any

import numpy as np
import torch

from .. import _lucidq
from .._interop import float_tensor_to_numpy
from .._qscheme import QScheme
from ._arguments import as_lucidq_value, with_args

__all__ = [
    "ObserverBase",
    "MinMaxObserver",
    "MovingAverageMinMaxObserver",
    "PerChannelMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver",
    "HistogramObserver",
    "PercentileObserver",
    "EntropyObserver",
    "MseObserver",
    "FixedQParamsObserver",
    "PlaceholderObserver",
    "NoopObserver",
    "default_observer",
    "default_weight_observer",
    "default_per_channel_weight_observer",
    "default_histogram_observer",
    "default_placeholder_observer",
    "default_dynamic_quant_observer",
    "default_fixed_qparams_range_0to1_observer",
    "default_fixed_qparams_range_neg1to1_observer",
]


def _state_bytes(native):
    return torch.from_numpy(np.frombuffer(native.save_state().encode(), dtype=np.uint8).copy())


class ObserverBase(torch.nn.Module):
    """The torch-module face of one C++ observer (`_native_class`); see the module docstring."""

    _native_class: Any = None
    with_args = classmethod(with_args)

    def __init__(self, *args, **kwargs):
        super().__init__()
        name = type(self).__name__
        args = [as_lucidq_value(value, name) for value in args]
        kwargs = {key: as_lucidq_value(value, f"{name}: {key}") for key, value in kwargs.items()}
        try:
            native = self._native_class(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{name}: {error}") from None
        self._native = native
        self.register_buffer("observer_state", _state_bytes(native))

    @property
    def native(self):
        """The wrapped C++ observer (lucidq.<same name>)."""
        return self._native

    def _options(self):
        return json.loads(self._native.save_state())["options"]

    def forward(self, x):
        """Observes x (detached; no copy for CPU float32) and returns x unchanged."""
        name = type(self).__name__
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"{name}: input of type {type(x).__name__} (expected a torch tensor)")
        array, input_dtype = float_tensor_to_numpy(x, f"{name}: input")
        self._native.observe(array, input_dtype=input_dtype)
        self._after_observe()
        return x

    def _after_observe(self):
        """Refreshes the cheap mirror buffers after a batch (none here)."""

    def _refresh_buffers(self):
        """Refreshes every mirror buffer from the C++ state."""
        self._buffers["observer_state"] = _state_bytes(self._native).to(self.observer_state.device)

    def calculate_qparams(self):
        """(scale float32, zero_point int64) tensors for the data seen; see the module docstring."""
        qparams = self._native.calculate_qparams()
        scale = torch.from_numpy(np.asarray(qparams.scale, dtype=np.float32))
        zero_point = torch.from_numpy(np.asarray(qparams.zero_point, dtype=np.int64))
        return scale, zero_point

    def reset_min_max_vals(self):
        """Forgets the statistics (configuration stays), as torch's reset_min_max_vals."""
        self._native.reset()
        self._refresh_buffers()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        self._refresh_buffers()
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        for name, buffer in self._buffers.items():
            saved = state_dict.get(prefix + name)
            if saved is not None and buffer is not None and saved.shape != buffer.shape:
                # per-channel statistics, state text of another length: the saved shape
                self._buffers[name] = torch.empty(
                    saved.shape, dtype=buffer.dtype, device=buffer.device
                )
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        if prefix + "observer_state" not in state_dict:
            return
        try:
            self._native.load_state(bytes(self.observer_state.cpu().numpy()).decode())
        except ValueError as error:  # lucidq.Error, or bytes that are not the state text
            error_msgs.append(f"While loading {prefix}observer_state: {error}")
        self._refresh_buffers()  # the mirrors show the C++ state, loaded or unchanged

    def extra_repr(self):
        return f"{self._native!r}"


class _RangeObserverModule(ObserverBase):
    """Observers with a clipping range per slot: min_val / max_val buffers, the grid attributes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self._per_channel:
            self.register_buffer("min_val", torch.tensor([]))
            self.register_buffer("max_val", torch.tensor([]))
        else:
            self.register_buffer("min_val", torch.tensor(float("inf")))
            self.register_buffer("max_val", torch.tensor(float("-inf")))

    @property
    def _per_channel(self):
        return self._native.qscheme.is_per_channel

    @property
    def dtype(self):
        """The configured lucidq QDtype (quint8, qint8, ...)."""
        return self._native.dtype

    @property
    def qscheme(self):
        return self._native.qscheme

    @property
    def reduce_range(self):
        return self._native.reduce_range

    @property
    def quant_min(self):
        """The effective grid's lowest code (after quant_min / reduce_range, like torch)."""
        return self._native.quant_min

    @property
    def quant_max(self):
        return self._native.quant_max

    @property
    def eps(self):
        return self._native.eps

    @property
    def ch_axis(self):
        return self._native.ch_axis

    def _after_observe(self):
        self._refresh_range()

    def _refresh_range(self):
        for name, values in (("min_val", self._native.min_val), ("max_val", self._native.max_val)):
            device = self._buffers[name].device
            self._buffers[name] = torch.tensor(values, dtype=torch.float32, device=device)

    def _refresh_buffers(self):
        super()._refresh_buffers()
        self._refresh_range()

    def calculate_qparams(self):
        if self._native.count == 0:
            raise ValueError(
                f"{type(self).__name__}: the observer saw no data (no finite value was observed); "
                "run calibration batches through the model before calculate_qparams / convert"
            )
        return super().calculate_qparams()

    def extra_repr(self):
        return (
            f"dtype={self.dtype}, qscheme={self.qscheme}, quant_min={self.quant_min}, "
            f"quant_max={self.quant_max}, ch_axis={self.ch_axis}, count={self._native.count}"
        )


class MinMaxObserver(_RangeObserverModule):
    """Running min / max (torch.ao.quantization.MinMaxObserver)."""

    _native_class = _lucidq.MinMaxObserver


class MovingAverageMinMaxObserver(_RangeObserverModule):
    """Moving averages of the batch min / max (torch's MovingAverageMinMaxObserver)."""

    _native_class = _lucidq.MovingAverageMinMaxObserver

    @property
    def averaging_constant(self):
        return self._native.averaging_constant


class PerChannelMinMaxObserver(_RangeObserverModule):
    """Running min / max per channel along ch_axis (torch's PerChannelMinMaxObserver)."""

    _native_class = _lucidq.PerChannelMinMaxObserver


class MovingAveragePerChannelMinMaxObserver(_RangeObserverModule):
    """Per-channel moving averages (torch's MovingAveragePerChannelMinMaxObserver)."""

    _native_class = _lucidq.MovingAveragePerChannelMinMaxObserver

    @property
    def averaging_constant(self):
        return self._native.averaging_constant


class HistogramObserver(_RangeObserverModule):
    """torch 1.13's histogram + L2 search (binning="pytorch"), or exact counts (binning="exact")."""

    _native_class = _lucidq.HistogramObserver

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("histogram", torch.zeros(self._native.bins))

    @property
    def bins(self):
        return self._native.bins

    def _refresh_histogram(self):
        counts = self._native.histogram
        if counts.size == 0:
            counts = np.zeros(self._native.bins, dtype=np.float32)
        self._buffers["histogram"] = torch.from_numpy(counts).to(self.histogram.device)

    def _after_observe(self):
        super()._after_observe()
        self._refresh_histogram()

    def _refresh_buffers(self):
        super()._refresh_buffers()
        self._refresh_histogram()


class PercentileObserver(_RangeObserverModule):
    """Clips to a percentile of the data (two-sided for affine, of |x| for symmetric schemes)."""

    _native_class = _lucidq.PercentileObserver


class EntropyObserver(_RangeObserverModule):
    """TensorRT's entropy calibration: the threshold with the least KL divergence."""

    _native_class = _lucidq.EntropyObserver


class MseObserver(_RangeObserverModule):
    """The clipping range minimising the quantization MSE of the data seen."""

    _native_class = _lucidq.MseObserver


class FixedQParamsObserver(ObserverBase):
    """Always the same (scale, zero_point) (torch's FixedQParamsObserver); buffers of both."""

    _native_class = _lucidq.FixedQParamsObserver

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("scale", torch.tensor([self._native.scale], dtype=torch.float32))
        zero_point = torch.tensor([self._native.zero_point], dtype=torch.int64)
        self.register_buffer("zero_point", zero_point)

    @property
    def dtype(self):
        return _lucidq.QDtype(self._options()["dtype"])

    @property
    def qscheme(self):
        return QScheme.from_string(self._options()["qscheme"])

    @property
    def quant_min(self):
        return self._options()["quant_min"]

    @property
    def quant_max(self):
        return self._options()["quant_max"]

    def forward(self, x):
        """Returns x (nothing to observe)."""
        return x

    def _refresh_buffers(self):
        super()._refresh_buffers()
        self._buffers["scale"] = torch.tensor([self._native.scale], dtype=torch.float32)
        self._buffers["zero_point"] = torch.tensor([self._native.zero_point], dtype=torch.int64)

    def calculate_qparams(self):
        return self.scale.clone(), self.zero_point.clone()


def _placeholder_dtype_name(dtype):
    """torch.float16 -> "float16", torch.quint8 -> "quint8", lucidq.qint8 -> "qint8"."""
    if isinstance(dtype, torch.dtype):
        return str(dtype).replace("torch.", "")
    if isinstance(dtype, _lucidq.QDtype):
        return dtype.name
    return dtype


class PlaceholderObserver(ObserverBase):
    """Carries a dtype to the converter (dynamic / float16 quantization); no statistics."""

    _native_class = _lucidq.PlaceholderObserver

    def __init__(self, dtype=torch.float32, custom_op_name="", compute_dtype=None):
        super().__init__(
            dtype=_placeholder_dtype_name(dtype),
            custom_op_name=custom_op_name,
            compute_dtype=None if compute_dtype is None else _placeholder_dtype_name(compute_dtype),
        )

    @staticmethod
    def _as_dtype(name):
        if name is None:
            return None
        if hasattr(torch, name) and isinstance(getattr(torch, name), torch.dtype):
            if not name.startswith("q"):
                return getattr(torch, name)
        return _lucidq.QDtype(name)

    @property
    def dtype(self):
        """A lucidq QDtype for quantized names ("quint8"), a torch float dtype otherwise."""
        return self._as_dtype(self._native.dtype)

    @property
    def compute_dtype(self):
        return self._as_dtype(self._native.compute_dtype)

    @property
    def custom_op_name(self):
        return self._native.custom_op_name

    def forward(self, x):
        """Returns x (nothing to observe)."""
        return x


class NoopObserver(PlaceholderObserver):
    """PlaceholderObserver with torch's NoopObserver default dtype (float16)."""

    _native_class = _lucidq.NoopObserver

    def __init__(self, dtype=torch.float16, custom_op_name=""):
        ObserverBase.__init__(
            self, dtype=_placeholder_dtype_name(dtype), custom_op_name=custom_op_name
        )


# torch.ao.quantization's named observer factories (same arguments).
default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(
    dtype=_lucidq.qint8, qscheme=QScheme.PER_TENSOR_SYMMETRIC
)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=_lucidq.qint8, qscheme=QScheme.PER_CHANNEL_SYMMETRIC
)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=_lucidq.quint8, compute_dtype=_lucidq.quint8
)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=_lucidq.quint8, quant_min=0, quant_max=255
)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=_lucidq.quint8, quant_min=0, quant_max=255
)
