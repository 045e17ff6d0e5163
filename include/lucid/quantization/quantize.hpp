// quantize / dequantize / fake_quantize (and its straight-through backward).
#pragma once

#include <cstdint>
#include <span>

#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// The code of one value: q = clamp(nearbyint(x * (1.0f / scale)) + zero_point,
/// quant_min, quant_max), with ties to even. This is PyTorch's CPU formula
/// (multiply by the float32 reciprocal, not divide). NaN maps to zero_point;
/// +-Inf and overflow saturate. Throws nothing; the caller validates scale.
std::int32_t quantize_value(float x, float scale, std::int32_t zero_point, const QDtype& qdtype);
/// x_hat = scale * (q - zero_point), rounded once to float32.
float dequantize_value(std::int32_t code, float scale, std::int32_t zero_point);

/// Quantizes `x` (float32, float16 or bfloat16; any shape) with `qparams`.
/// Throws Error when qparams do not fit x's shape or x is not floating point.
QuantizedTensor quantize(const TensorView& x, const QParams& qparams);
/// Chooses qparams from x's own range (choose_qparams) and quantizes with them.
QuantizedTensor quantize(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis = 0,
                         std::int64_t group_size = 0);
/// quantize() into caller-owned storage (no allocation): `out` must hold exactly
/// qparams.qdtype.storage_bytes(x.numel()) bytes. Throws Error like quantize(),
/// and when out has another size.
void quantize_into(const TensorView& x, const QParams& qparams, std::span<std::uint8_t> out);

/// choose_qparams(x, qscheme, qdtype, ch_axis, group_size, eps) followed by
/// quantize(), fused: each group's range, parameters and codes are computed
/// while the group is in cache, in one pass over x. The result is identical
/// to the two-step form. qscheme must be per-channel and group_size >= 1;
/// throws Error otherwise, or when x is not float32 / float16 / bfloat16.
QuantizedTensor quantize_per_group(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                                   std::int64_t group_size, float eps = default_eps);

/// The float32 reconstruction scale * (q - zero_point) of every code.
Tensor dequantize(const QuantizedTensor& q);
/// dequantize() into caller-owned storage of exactly q.numel() floats.
void dequantize_into(const QuantizedTensor& q, std::span<float> out);

/// dequantize(quantize(x, qparams)) in one pass, as float32 with x's shape.
Tensor fake_quantize(const TensorView& x, const QParams& qparams);

/// fake_quantize's output and its straight-through-estimator mask.
struct FakeQuantizeResult {
  Tensor output;  ///< float32, x's shape
  Tensor mask;    ///< boolean, x's shape: quant_min <= nearbyint(x / s) + z <= quant_max (before
                  ///< clamping); false for NaN
};
FakeQuantizeResult fake_quantize_with_mask(const TensorView& x, const QParams& qparams);
/// fake_quantize() into caller-owned storage: `out` (and `mask`, when not
/// empty: 1 = inside the grid) must hold exactly x.numel() elements.
void fake_quantize_into(const TensorView& x, const QParams& qparams, std::span<float> out,
                        std::span<std::uint8_t> mask = {});
/// The straight-through backward: grad_in = grad_out * mask (float32).
/// Throws Error when the shapes differ or the types are not float32 / boolean.
Tensor fake_quantize_backward(const TensorView& grad_out, const TensorView& mask);

}  // namespace lucid::quantization
