"""Static W8A8 Linear and LinearReLU: 8-bit codes in, 8-bit codes out, on lucidq's int8 GEMM.

Each call is one integer pass (lucidq.gemm_requantize through nn.QuantizedLinear): the
input's codes [..., K] (any leading axes, flattened to rows without a copy) times
the packed int8 per-channel weights, requantized onto the calibrated output grid with the
float bias folded in, ReLU fused into the clamp for LinearReLU. The input qparams come with
the input (as in torch, where they travel on the quantized tensor); one QuantizedLinear is
kept per input grid seen.
"""

from torch import nn

from ... import _lucidq
from ...nn import QuantizedLinear
from .._observed import output_qparams
from .._paths import label
from ..qtensor import codes_of, wrap_codes
from ._io import float_bias
from ._state import QuantizedState
from ._weights import int8_weight

__all__ = ["Linear", "LinearReLU"]


class Linear(QuantizedState, nn.Module):
    """Quantized counterpart of nn.Linear (torch.ao.nn.quantized.Linear).

    packed: a lucidq.PackedWeightsInt8 [out_features, in_features]; bias: None or float32
    [out_features]; scale / zero_point / qdtype: the output grid.
    """

    RELU = False

    def __init__(self, packed, bias, scale, zero_point, qdtype=_lucidq.quint8):
        super().__init__()
        self.packed_weight = packed
        self.bias = bias
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype
        self._layers = {}  # (input scale, zero point, qdtype name) -> QuantizedLinear
        self._last = [None]  # [(scale, zero point, qdtype, layer)] of the last input grid
        self._depth = packed.columns

    @property
    def in_features(self):
        return self.packed_weight.columns

    @property
    def out_features(self):
        return self.packed_weight.rows

    @classmethod
    def from_float(cls, mod):
        """From a prepared and calibrated float Linear (or fused LinearReLU, or a QAT module):
        output qparams from its activation_post_process, weights from its weight_fake_quant
        (QAT) or a fresh qconfig.weight() observer (PTQ)."""
        where = label(mod)
        out = output_qparams(mod)
        if hasattr(mod, "weight_fake_quant"):
            weight_observer = mod.weight_fake_quant
            weight, bias = mod.weight_and_bias() if hasattr(mod, "weight_and_bias") else (
                mod.weight, mod.bias)
        else:
            linear = mod[0] if isinstance(mod, nn.Sequential) else mod
            weight_observer = mod.qconfig.weight()
            weight, bias = linear.weight, linear.bias
        packed = int8_weight(weight, weight_observer, where)
        new = cls(packed, float_bias(bias), out.scale[0], out.zero_point[0], out.qdtype)
        new._lucidq_path = getattr(mod, "_lucidq_path", None)
        return new

    def _layer(self, q):
        """The QuantizedLinear for q's input grid (the last one is reused without a lookup)."""
        last = self._last[0]
        if last is not None and last[0] == q.scale and last[1] == q.zero_point and (
                last[2] is q.qdtype):
            return last[3]
        key = (q.scale, q.zero_point, q.qdtype.name)
        layer = self._layers.get(key)
        if layer is None:
            layer = QuantizedLinear(
                self.packed_weight,
                self.bias,
                input_scale=q.scale,
                input_zero_point=q.zero_point,
                output_scale=self.scale,
                output_zero_point=self.zero_point,
                input_qdtype=q.qdtype,
                output_qdtype=self.qdtype,
                relu=self.RELU,
            )
            self._layers[key] = layer
        self._last[0] = (q.scale, q.zero_point, q.qdtype, layer)
        return layer

    def forward(self, x):
        q = codes_of(x, self)
        codes = q.array
        if codes.ndim < 1 or codes.shape[-1] != self._depth:
            raise _lucidq.Error(
                f"{label(self)}: input has shape {tuple(codes.shape)} (expected [..., "
                f"{self._depth}], in_features = {self._depth})"
            )
        out = self._layer(q).forward_codes(codes)
        return wrap_codes(out, self.scale, self.zero_point, self.qdtype)

    def weight_codes(self):
        """The int8 weight codes [out_features, in_features] (a NumPy array)."""
        return self.packed_weight.unpack()

    def weight_scales(self):
        """The float32 weight scales [out_features]."""
        return self.packed_weight.scales

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"scale={self.scale:.6g}, zero_point={self.zero_point}, qdtype={self.qdtype.name}, "
            f"per_channel={self.packed_weight.per_channel}, bias={self.bias is not None}"
        )


class LinearReLU(Linear):
    """Quantized fused Linear + ReLU (the ReLU is the requantization clamp from zero_point)."""

    RELU = True
