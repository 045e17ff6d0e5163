"""WeightOnlyLinear: float activations times group-wise int4 / int8 weights, decoded in the kernel.

A thin Python shell over lucidq.PackedWeightsLowBit and weight_only_linear; every
number comes from the C++ core (docs/numerics.md, "Weight-only GEMM").

>>> import lucidq as Q, numpy as np
>>> rng = np.random.default_rng(0)
>>> w = rng.standard_normal((64, 256)).astype(np.float32)
>>> layer = Q.WeightOnlyLinear.from_float(w, None, bits=4, group_size=128)
>>> layer(np.ones((2, 256), np.float32)).shape
(2, 64)
"""

import numpy as np

from ._lucidq import (
    Error,
    PackedWeightsLowBit,
    QuantizedTensor,
    weight_only_activations,
    weight_only_linear,
)

_ACTIVATIONS = ("auto", "float32", "int8", "int8_blocks")

__all__ = ["WeightOnlyLinear"]


class WeightOnlyLinear:
    """y = x · ŵᵀ + bias with ŵ stored group-wise in int4 or int8 (immutable).

    weight: a PackedWeightsLowBit; bias: None or float32 [out_features].
    Build it with from_float() or from_quantized(); call it on NumPy input
    [..., in_features] (float32, float16, float64 rounded to float32, or bfloat16
    bit patterns in uint16 with input_dtype="bfloat16"); the output is float32
    [..., out_features].
    """

    def __init__(self, weight, bias=None, activations="auto"):
        if activations not in _ACTIVATIONS:
            raise Error(
                f"WeightOnlyLinear: activations = {activations!r} "
                '(expected "auto", "float32", "int8" or "int8_blocks")'
            )
        self._activations = activations
        if not isinstance(weight, PackedWeightsLowBit):
            raise Error(
                f"WeightOnlyLinear: weight is a {type(weight).__name__} "
                "(expected a PackedWeightsLowBit; use from_float or from_quantized)"
            )
        self._weight = weight
        self._bias = None
        if bias is not None:
            b = np.asarray(bias)
            if b.dtype.kind not in "fiu":
                raise Error(
                    f"WeightOnlyLinear: bias has dtype {b.dtype} (expected real numbers)"
                )
            b = np.array(b, dtype=np.float32)  # a private copy: the layer is immutable
            if b.shape != (weight.rows,):
                raise Error(
                    f"WeightOnlyLinear: bias has shape {b.shape} "
                    f"(expected [out_features] = ({weight.rows},))"
                )
            b.flags.writeable = False
            self._bias = b

    @classmethod
    def from_float(
        cls,
        weight,
        bias=None,
        bits=4,
        group_size=128,
        symmetric=True,
        scale_type="f32",
        activations="auto",
        grid="search",
    ):
        """Quantizes float weights [out_features, in_features] group-wise.

        bits: 4 or 8; group_size: 32, 64, 128, 256, or None / 0 for per-channel;
        symmetric: signed grid, zero point 0 (else affine, unsigned grid);
        scale_type: "f32", "bf16", "f16", or "super6" (bits=4, group_size=32,
        symmetric=False only, in_features a multiple of 256: 6-bit scales and
        minimums under float16 super-blocks of 256, ggml Q4_K's 4.5 bits with a
        lower error; the 4.5-bit recommendation); grid: "search" (the error-minimizing
        grid over every level, the default) or "min_max" (the core's min/max
        qparams); activations: "float32" (float FMAs, weight
        error only), "int8" (each row of x quantized dynamically to uint8 and
        multiplied exactly in int32: faster, adds the activation
        quantization error), "int8_blocks" (x quantized to int8 with one
        scale per weight group, as ggml's q8_0 at groups of 32: exact int32
        group products, less activation error than "int8") or "auto"
        (int8_blocks, or "int8" for per-channel weights, when the CPU has a
        fast kernel for it, AVX512-VNNI or AVX2, and x is finite; for any
        number of rows).
        """
        packed = PackedWeightsLowBit.quantize(
            weight,
            bits=bits,
            group_size=group_size,
            symmetric=symmetric,
            scale_type=scale_type,
            grid=grid,
        )
        return cls(packed, bias, activations)

    @classmethod
    def from_quantized(cls, weight, bias=None, activations="auto"):
        """Packs a QuantizedTensor [out_features, in_features] (4 or 8 bits)."""
        if not isinstance(weight, QuantizedTensor):
            raise Error(
                f"WeightOnlyLinear.from_quantized: weight is a {type(weight).__name__} "
                "(expected a QuantizedTensor)"
            )
        return cls(PackedWeightsLowBit.from_quantized(weight), bias, activations)

    @property
    def weight(self):
        return self._weight

    @property
    def bias(self):
        return self._bias

    @property
    def activations(self):
        """"auto", "float32" or "int8" (see from_float)."""
        return self._activations

    def activation_path(self, rows):
        """The path a call on `rows` rows of finite x takes: "float32", "int8_dynamic" or "int8_blocks"."""
        return weight_only_activations(self._weight, rows, self._activations)

    @property
    def in_features(self):
        return self._weight.columns

    @property
    def out_features(self):
        return self._weight.rows

    @property
    def format(self):
        """{"bits", "group_size", "symmetric", "scale_type", "grid"} (group_size 0 = per-channel)."""
        return self._weight.format

    def to_quantized(self):
        return self._weight.to_quantized()

    def dequantized_weight(self):
        """ŵ as float32 [out_features, in_features] (for inspection; the product never forms it)."""
        return self._weight.decode()

    def __call__(self, x, input_dtype=None):
        return weight_only_linear(
            x, self._weight, self._bias, input_dtype=input_dtype, activations=self._activations
        )

    def __repr__(self):
        f = self.format
        group = "per-channel" if f["group_size"] == 0 else f"group_size={f['group_size']}"
        return (
            f"WeightOnlyLinear(in_features={self.in_features}, out_features={self.out_features}, "
            f"bits={f['bits']}, {group}, symmetric={f['symmetric']}, "
            f"scale_type={f['scale_type']!r}, bias={self._bias is not None}, "
            f"activations={self._activations!r})"
        )
