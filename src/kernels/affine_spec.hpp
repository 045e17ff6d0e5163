// Internal: the scalar affine formulas every tier must reproduce bit for bit: the spec
// (docs/numerics.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.hpp"
#include "lucid/quantization/scalar_type.hpp"

namespace lucid::quantization::kernels {

/// Element k of a float32 / float16 / bfloat16 array at any alignment, widened exactly.
template <FloatType T>
inline float load_element(const void* x, std::int64_t k) {
  const auto* bytes = static_cast<const unsigned char*>(x);
  if constexpr (T == FloatType::f32) {
    float value;
    std::memcpy(&value, bytes + 4 * k, 4);
    return value;
  } else {
    std::uint16_t bits;
    std::memcpy(&bits, bytes + 2 * k, 2);
    return T == FloatType::f16 ? float16_to_float(bits) : bfloat16_to_float(bits);
  }
}

/// 1.5 · 2^52: for |x| <= 2^51, (x + shift) − shift is x rounded to an integer in the default
/// rounding mode (ties to even), as the sum has no fraction bits left. Not folded by the
/// compiler (the project never builds with -ffast-math).
constexpr double round_half_even_shift = 6755399441055744.0;

/// nearbyint(x) for |x| <= 2^51, in two additions (see round_half_even_shift).
inline double round_half_even(double x) {
  return (x + round_half_even_shift) - round_half_even_shift;
}

/// The float32 form: 1.5 · 2^23 leaves no fraction bits, so for |x| <= 2^22 the two additions
/// give nearbyint(x) in float (a loop of them vectorises, where nearbyintf is a call per element
/// on the baseline ISA).
inline float round_half_even(float x) {
  constexpr float shift = 12582912.0f;
  return (x + shift) - shift;
}

/// nearbyint(x * inv_scale) + zero_point before clamping: the product and the
/// rounding in float32 (PyTorch's formula), the sum exact in double. NaN stays NaN.
inline double unclamped_code(float x, float inv_scale, std::int32_t zero_point) {
  const float product = x * inv_scale;
  return static_cast<double>(std::nearbyint(product)) + zero_point;
}

/// The stored code: the unclamped code clamped to the grid, NaN -> zero_point.
inline std::int32_t clamp_code(double code, std::int32_t zero_point, Grid grid) {
  if (std::isnan(code)) return zero_point;
  return static_cast<std::int32_t>(
      std::clamp(code, static_cast<double>(grid.quant_min), static_cast<double>(grid.quant_max)));
}

/// True when the unclamped code lies inside the grid (the straight-through mask).
inline bool inside_grid(double code, Grid grid) {
  return code >= static_cast<double>(grid.quant_min) && code <= static_cast<double>(grid.quant_max);
}

/// scale * (code - zero_point), formed in double (exact for |code - zero_point| <= 2^29)
/// and rounded once to float32.
inline float dequantize_code(std::int32_t code, float scale, std::int32_t zero_point) {
  return static_cast<float>(static_cast<double>(scale) *
                            static_cast<double>(static_cast<std::int64_t>(code) - zero_point));
}

/// clamp(nearbyint(double(acc) * double(multiplier)) + zero_point, grid), in double.
inline std::int32_t requantize_code(std::int32_t acc, float multiplier, std::int32_t zero_point,
                                    Grid grid) {
  const double product = static_cast<double>(acc) * static_cast<double>(multiplier);
  return clamp_code(std::nearbyint(product) + zero_point, zero_point, grid);
}

}  // namespace lucid::quantization::kernels
