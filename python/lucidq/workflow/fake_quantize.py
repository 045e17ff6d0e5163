"""Fake quantization for QAT as torch modules (torch 1.13's FakeQuantize family) on lucidq's C++ kernels.

    FakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 **observer_kwargs)
        forward: with the observer enabled, observe x and refresh the `scale` /
        `zero_point` buffers from it ((C,) per channel); with fake quantization
        enabled, return clamp(round(x / scale) + zero_point, quant_min,
        quant_max) - zero_point) * scale, computed by the C++ kernel, with the
        straight-through gradient (1 inside the grid before clamping, 0
        outside), equal to torch.fake_quantize_per_{tensor,channel}_affine.
    FixedQParamsFakeQuantize(observer=FixedQParamsObserver.with_args(...))
        the same with qparams that never change (sigmoid / tanh outputs).
    LearnableFakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                          scale=1.0, zero_point=0.0, channel_len=-1,
                          use_grad_scaling=True, **observer_kwargs)
        LSQ (Esser et al. 2020): scale and zero_point are Parameters trained by
        backpropagation with torch's _LearnableFakeQuantize gradients; with
        use_grad_scaling their gradients are multiplied by 1 / sqrt(numel *
        quant_max) (LSQ's grad factor; torch's class defaults to False).
        enable_param_learning() / enable_static_estimate() /
        enable_static_observation() switch between learning and observing.

Flags are uint8 buffers saved in state_dict (fake_quant_enabled,
observer_enabled; LearnableFakeQuantize also static_enabled, learning_enabled),
as torch. Methods enable_observer(enabled=True), disable_observer(),
enable_fake_quant(enabled=True), disable_fake_quant(); the module functions of
the same names switch every fake quantizer of a model: model.apply(disable_observer).
Loading a state_dict resizes scale / zero_point to the saved (per-channel) shape.

Factories as torch names them: default_fake_quant, default_weight_fake_quant,
default_per_channel_weight_fake_quant, default_histogram_fake_quant,
default_fixed_qparams_range_0to1_fake_quant, default_fixed_qparams_range_neg1to1_fake_quant.

>>> import torch, lucidq.workflow as W
>>> fq = W.default_fake_quant()
>>> y = fq(torch.tensor([-1.0, 0.0, 0.5, 3.0]))
>>> fq.quant_min, fq.quant_max, round(fq.scale.item(), 6), fq.zero_point.tolist()
(0, 127, 0.031496, [32])
"""

import numpy as np
import torch

from .. import _lucidq
from .._qscheme import QScheme
from ._arguments import with_args
from ._autograd import fake_quantize_ste, learnable_fake_quantize, qparams_from_tensors
from .observer import (
    FixedQParamsObserver,
    HistogramObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
)

__all__ = [
    "FakeQuantizeBase",
    "FakeQuantize",
    "FixedQParamsFakeQuantize",
    "LearnableFakeQuantize",
    "default_fake_quant",
    "default_weight_fake_quant",
    "default_per_channel_weight_fake_quant",
    "default_histogram_fake_quant",
    "default_fixed_qparams_range_0to1_fake_quant",
    "default_fixed_qparams_range_neg1to1_fake_quant",
    "enable_observer",
    "disable_observer",
    "enable_fake_quant",
    "disable_fake_quant",
]


def _grid(dtype, quant_min, quant_max):
    """dtype's storage with codes [quant_min, quant_max] (the fake-quantization grid)."""
    if (quant_min, quant_max) == (dtype.quant_min, dtype.quant_max):
        return dtype
    return dtype.with_range(int(quant_min), int(quant_max))


class FakeQuantizeBase(torch.nn.Module):
    """The flags and switches every fake quantizer shares (torch's FakeQuantizeBase)."""

    with_args = classmethod(with_args)

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.uint8))
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.uint8))

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled[0] = 1 if enabled else 0
        return self

    def disable_fake_quant(self):
        return self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        self.observer_enabled[0] = 1 if enabled else 0
        return self

    def disable_observer(self):
        return self.enable_observer(False)


class FakeQuantize(FakeQuantizeBase):
    """Observer + fake quantization (torch.ao.quantization.FakeQuantize); see the module doc."""

    def __init__(
        self,
        observer=MovingAverageMinMaxObserver,
        quant_min=None,
        quant_max=None,
        **observer_kwargs,
    ):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        self.activation_post_process = observer(**observer_kwargs)
        post = self.activation_post_process
        self.quant_min = post.quant_min
        self.quant_max = post.quant_max
        self.dtype = post.dtype
        self.qscheme = post.qscheme
        self.is_per_channel = post.qscheme.is_per_channel
        self.ch_axis = post.ch_axis if self.is_per_channel else -1
        self.register_buffer("scale", torch.tensor([1.0], dtype=torch.float32))
        self.register_buffer("zero_point", torch.tensor([0], dtype=torch.int32))

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def _grid(self):
        return _grid(self.dtype, self.quant_min, self.quant_max)

    def forward(self, x):
        if self.observer_enabled[0] == 1:
            self.activation_post_process(x.detach())
            scale, zero_point = self.calculate_qparams()
            if self.scale.shape != scale.shape:
                self.scale.resize_(scale.shape)
                self.zero_point.resize_(zero_point.shape)
            self.scale.copy_(scale)
            self.zero_point.copy_(zero_point)
        if self.fake_quant_enabled[0] == 1:
            axis = self.ch_axis if self.is_per_channel else None
            qparams = qparams_from_tensors(self.scale, self.zero_point, self._grid(), axis, x.dim())
            x = fake_quantize_ste(x, qparams)
        return x

    def extra_repr(self):
        return (
            f"fake_quant_enabled={self.fake_quant_enabled.tolist()}, "
            f"observer_enabled={self.observer_enabled.tolist()}, quant_min={self.quant_min}, "
            f"quant_max={self.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
            f"ch_axis={self.ch_axis}, scale={self.scale.tolist()}, "
            f"zero_point={self.zero_point.tolist()}"
        )

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        for name in ("scale", "zero_point"):
            saved = state_dict.get(prefix + name)
            if saved is not None:
                getattr(self, name).resize_(saved.shape)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake quantization with the fixed qparams of a FixedQParamsObserver (torch's class)."""

    def __init__(self, observer):
        super().__init__(observer=observer)
        if not isinstance(self.activation_post_process, FixedQParamsObserver):
            raise ValueError(
                f"FixedQParamsFakeQuantize: observer builds a "
                f"{type(self.activation_post_process).__name__} (expected a FixedQParamsObserver)"
            )
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point

    def calculate_qparams(self):
        return self.scale, self.zero_point


class LearnableFakeQuantize(FakeQuantizeBase):
    """LSQ fake quantization with learnable scale / zero_point; see the module docstring."""

    def __init__(
        self,
        observer=MovingAverageMinMaxObserver,
        quant_min=0,
        quant_max=255,
        scale=1.0,
        zero_point=0.0,
        channel_len=-1,
        use_grad_scaling=True,
        **observer_kwargs,
    ):
        super().__init__()
        if not quant_min < quant_max:
            raise ValueError(
                f"LearnableFakeQuantize: quant_min = {quant_min}, quant_max = {quant_max} "
                "(expected quant_min < quant_max)"
            )
        self.quant_min = quant_min
        self.quant_max = quant_max
        self.use_grad_scaling = use_grad_scaling
        observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        if channel_len == -1:
            self.scale = torch.nn.Parameter(torch.tensor([float(scale)]))
            self.zero_point = torch.nn.Parameter(torch.tensor([float(zero_point)]))
        else:
            if not isinstance(channel_len, int) or channel_len <= 0:
                raise ValueError(
                    f"LearnableFakeQuantize: channel_len = {channel_len!r} "
                    "(expected a positive int)"
                )
            self.scale = torch.nn.Parameter(torch.tensor([float(scale)] * channel_len))
            self.zero_point = torch.nn.Parameter(torch.tensor([float(zero_point)] * channel_len))
        self.activation_post_process = observer(**observer_kwargs)
        post = self.activation_post_process
        self.dtype = post.dtype
        self.qscheme = post.qscheme
        self.ch_axis = post.ch_axis if post.qscheme.is_per_channel else -1
        self.register_buffer("static_enabled", torch.tensor([1], dtype=torch.uint8))
        self.register_buffer("learning_enabled", torch.tensor([0], dtype=torch.uint8))
        self.register_buffer("eps", torch.tensor([float(np.finfo(np.float32).eps)]))
        self.bitwidth = int(np.log2(quant_max - quant_min + 1))

    def enable_param_learning(self):
        """Learn scale / zero_point by backpropagation; fake-quantize; stop observing."""
        self.toggle_qparam_learning(True).toggle_fake_quant(True)
        return self.toggle_observer_update(False)

    def enable_static_estimate(self):
        """qparams from the observer every step; fake-quantize; no learning."""
        self.toggle_qparam_learning(False).toggle_fake_quant(True)
        return self.toggle_observer_update(True)

    def enable_static_observation(self):
        """Observe only: qparams from the observer, the output is x itself."""
        self.toggle_qparam_learning(False).toggle_fake_quant(False)
        return self.toggle_observer_update(True)

    def toggle_observer_update(self, enabled=True):
        self.static_enabled[0] = int(enabled)
        return self

    def enable_observer(self, enabled=True):
        return self.toggle_observer_update(enabled)

    def toggle_qparam_learning(self, enabled=True):
        self.learning_enabled[0] = int(enabled)
        self.scale.requires_grad = enabled
        self.zero_point.requires_grad = enabled
        return self

    def toggle_fake_quant(self, enabled=True):
        self.fake_quant_enabled[0] = int(enabled)
        return self

    def calculate_qparams(self):
        """(scale clamped to eps, zero_point rounded and clamped to the grid, int64)."""
        self.scale.data.clamp_(min=self.eps.item())
        zero_point = self.zero_point.detach().round().clamp(self.quant_min, self.quant_max).long()
        return self.scale.detach(), zero_point

    def forward(self, x):
        if self.static_enabled[0] == 1:
            self.activation_post_process(x.detach())
            scale, zero_point = self.activation_post_process.calculate_qparams()
            self.scale.data.copy_(scale.to(self.scale.device))
            self.zero_point.data.copy_(zero_point.to(self.zero_point.device))
        else:
            self.scale.data.clamp_(min=self.eps.item())
        if self.fake_quant_enabled[0] == 1:
            if self.qscheme.is_symmetric:
                self.zero_point.data.zero_()
            grad_factor = 1.0
            if self.use_grad_scaling:
                grad_factor = 1.0 / (x.numel() * self.quant_max) ** 0.5
            axis = self.ch_axis if self.qscheme.is_per_channel else None
            grid = _grid(self.dtype, self.quant_min, self.quant_max)
            x = learnable_fake_quantize(
                x,
                self.scale,
                self.zero_point,
                axis,
                self.quant_min,
                self.quant_max,
                grad_factor,
                grid,
            )
        return x


def _is_fake_quantizer(module):
    return isinstance(module, (FakeQuantizeBase, torch.ao.quantization.FakeQuantizeBase))


def enable_observer(module):
    """For model.apply: turns observation on in every fake quantizer (lucidq's and torch's)."""
    if _is_fake_quantizer(module):
        module.enable_observer()


def disable_observer(module):
    """For model.apply: freezes the qparams of every fake quantizer."""
    if _is_fake_quantizer(module):
        module.disable_observer()


def enable_fake_quant(module):
    """For model.apply: turns fake quantization on in every fake quantizer."""
    if _is_fake_quantizer(module):
        module.enable_fake_quant()


def disable_fake_quant(module):
    """For model.apply: passes activations through unchanged in every fake quantizer."""
    if _is_fake_quantizer(module):
        module.disable_fake_quant()


_qint8 = _lucidq.qint8
_quint8 = _lucidq.quint8

default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver,
    quant_min=0,
    quant_max=255,
    dtype=_quint8,
    qscheme=QScheme.PER_TENSOR_AFFINE,
    reduce_range=True,
)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver,
    quant_min=-128,
    quant_max=127,
    dtype=_qint8,
    qscheme=QScheme.PER_TENSOR_SYMMETRIC,
    reduce_range=False,
)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    quant_min=-128,
    quant_max=127,
    dtype=_qint8,
    qscheme=QScheme.PER_CHANNEL_SYMMETRIC,
    reduce_range=False,
    ch_axis=0,
)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver,
    quant_min=0,
    quant_max=255,
    dtype=_quint8,
    qscheme=QScheme.PER_TENSOR_AFFINE,
    reduce_range=True,
)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=FixedQParamsObserver.with_args(
        scale=2.0 / 256.0, zero_point=128, dtype=_quint8, quant_min=0, quant_max=255
    )
)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=FixedQParamsObserver.with_args(
        scale=1.0 / 256.0, zero_point=0, dtype=_quint8, quant_min=0, quant_max=255
    )
)
