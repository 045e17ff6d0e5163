"""torch.autograd.Functions over lucidq's C++ fake-quantize kernel: the straight-through and LSQ estimators.

Both run the forward (codes, reconstruction and in-grid mask) in the C++ core
(`lucidq.fake_quantize(..., return_mask=True)`); the backward combines those
saved tensors with elementwise torch ops in the order torch 1.13's kernels use,
so the gradients equal torch's fake-quantize ops.
"""

import numpy as np
import torch

from .. import _lucidq
from .._interop import float_tensor_to_numpy
from .._qscheme import QScheme


def _fake_quantize_arrays(x, qparams, what):
    """(output, mask) torch tensors for x under qparams, computed by the C++ kernel."""
    array, input_dtype = float_tensor_to_numpy(x, what)
    out, mask = _lucidq.fake_quantize(array, qparams, return_mask=True, input_dtype=input_dtype)
    out = torch.from_numpy(out)
    mask = torch.from_numpy(mask)
    if x.device.type != "cpu":
        out, mask = out.to(x.device), mask.to(x.device)
    return out.to(x.dtype), mask


class _StraightThrough(torch.autograd.Function):
    """fake_quantize(x, qparams) with gradient grad * mask (torch.fake_quantize_per_*_affine's)."""

    @staticmethod
    def forward(ctx, x, qparams):
        out, mask = _fake_quantize_arrays(x, qparams, "fake_quantize")
        ctx.save_for_backward(mask)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        (mask,) = ctx.saved_tensors
        return grad_out * mask, None


def fake_quantize_ste(x, qparams):
    """x fake-quantized with `qparams` (lucidq QParams); differentiable in x (STE)."""
    return _StraightThrough.apply(x, qparams)


def qparams_from_tensors(scale, zero_point, grid, ch_axis, ndim):
    """QParams for fake quantization onto `grid` with torch tensors scale / zero_point (integers).

    One value each: per tensor; otherwise per channel along ch_axis.
    """
    s = scale.detach().cpu().numpy().astype(np.float32, copy=False).reshape(-1)
    z = zero_point.detach().cpu().numpy().astype(np.int64, copy=False).reshape(-1)
    if ch_axis is None:
        return _lucidq.QParams.per_tensor(float(s[0]), int(z[0]), grid)
    axis = ch_axis % max(ndim, 1)
    return _lucidq.QParams.per_channel(s, z, axis, grid, QScheme.PER_CHANNEL_AFFINE)


def _channel_shape(ndim, ch_axis, channels):
    shape = [1] * ndim
    shape[ch_axis] = channels
    return shape


class _Learnable(torch.autograd.Function):
    """LSQ fake quantization: torch's _fake_quantize_learnable_per_{tensor,channel}_affine.

    Forward: the zero point is rounded (ties to even) and clamped to the grid,
    then the C++ kernel fake-quantizes. Backward, per element, with xq the
    pre-clamp code: dx = dy inside the grid, 0 outside; dscale = dy * (x_hat - x)
    / s inside, dy * (quant_min - z) below and dy * (quant_max - z) above; dz =
    -dy * s outside, 0 inside; dscale and dz are multiplied by grad_factor and
    summed (over everything per tensor, over all axes but ch_axis per channel).
    As in torch, the per-tensor backward reads the zero point as
    trunc(clamp(z + 0.5)), which differs from the forward's rounding only at
    exact .5 ties, and x_hat - x is rounded once (torch's compiled kernel
    fuses it into one multiply-add).
    """

    @staticmethod
    def forward(ctx, x, scale, zero_point, ch_axis, quant_min, quant_max, grad_factor, grid):
        per_channel = ch_axis is not None
        if per_channel:
            z_forward = zero_point.detach().round().clamp(quant_min, quant_max)
            z_backward = z_forward
        else:
            z_value = np.float32(zero_point.detach().reshape(-1)[0].item())
            z_forward = torch.tensor([min(max(float(np.rint(z_value)), quant_min), quant_max)])
            # torch: static_cast<int64_t>(clamp(z + 0.5f)), i.e. truncation toward zero
            z_backward = torch.tensor(
                [float(int(min(max(float(z_value + np.float32(0.5)), quant_min), quant_max)))]
            )
        qparams = qparams_from_tensors(scale, z_forward, grid, ch_axis, x.dim())
        out, mask = _fake_quantize_arrays(x, qparams, "LearnableFakeQuantize")
        if not torch.equal(z_backward, z_forward):
            backward_qparams = qparams_from_tensors(scale, z_backward, grid, ch_axis, x.dim())
            x_hat, mask = _fake_quantize_arrays(x, backward_qparams, "LearnableFakeQuantize")
        else:
            x_hat = out
        ctx.save_for_backward(x, x_hat, mask, scale.detach(), z_backward)
        ctx.meta = (ch_axis, quant_min, quant_max, grad_factor)
        return out

    @staticmethod
    def backward(ctx, dy):
        x, x_hat, mask, scale, z = ctx.saved_tensors
        ch_axis, quant_min, quant_max, grad_factor = ctx.meta
        dtype = x.dtype
        if ch_axis is not None:
            shape = _channel_shape(x.dim(), ch_axis % x.dim(), scale.numel())
            s = scale.to(dtype).reshape(shape)
            zf = z.to(dtype).reshape(shape)
        else:
            s = scale.to(dtype).reshape(-1)[0]
            zf = z.to(dtype).reshape(-1)[0]
        inv_s = 1.0 / s
        below = ~mask & (x < x_hat)
        dx = dy * mask
        # x_hat - x rounded once, as torch's kernel computes it (one fused multiply-add of the
        # integer code offset k = q - z, exact in float64, and the scale).
        s64 = s.double()
        k = torch.round(x_hat.double() / s64)
        residual = (k * s64 - x.double()).to(dtype)
        inside = dy * residual * inv_s * grad_factor
        outside = torch.where(below, dy * (quant_min - zf), dy * (quant_max - zf)) * grad_factor
        dscale = torch.where(mask, inside, outside)
        dzero = torch.where(mask, torch.zeros_like(dy), dy * (-1) * s * grad_factor)
        if ch_axis is not None:
            axes = [d for d in range(x.dim()) if d != ch_axis % x.dim()]
            dscale = dscale.sum(axes) if axes else dscale
            dzero = dzero.sum(axes) if axes else dzero
        else:
            dscale = dscale.sum().unsqueeze(0)
            dzero = dzero.sum().unsqueeze(0)
        return dx, dscale.to(scale.dtype), dzero, None, None, None, None, None


def learnable_fake_quantize(x, scale, zero_point, ch_axis, quant_min, quant_max, grad_factor, grid):
    """LSQ fake quantization of x; gradients for x, scale and zero_point (see _Learnable)."""
    return _Learnable.apply(x, scale, zero_point, ch_axis, quant_min, quant_max, grad_factor, grid)
