// Internal: the scalar (scale, zero point) formula of calculate_qparams that every tier's
// group_qparams kernel reproduces bit for bit (docs/numerics.md, "calculate_qparams").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "kernels/kernel_table.hpp"

namespace lucid::quantization::kernels {

/// One (scale, zero_point) from a finite range (min_val <= max_val), computed in float32 exactly
/// as PyTorch's observers do so that results agree bit for bit.
inline std::pair<float, std::int32_t> qparams_of_range(float min_val, float max_val,
                                                       const RangeRule& rule) {
  const float min_neg = std::min(min_val, 0.0f);
  const float max_pos = std::max(max_val, 0.0f);
  const auto qmin = static_cast<double>(rule.quant_min);
  const auto qmax = static_cast<double>(rule.quant_max);
  float scale;
  if (rule.symmetric) {
    const float half_range = static_cast<float>((qmax - qmin) / 2.0);
    scale = std::max(-min_neg, max_pos) / half_range;
  } else {
    scale = (max_pos - min_neg) / static_cast<float>(qmax - qmin);
    if (!std::isfinite(scale)) {  // max - min overflowed float32: redo it in double
      scale = static_cast<float>((static_cast<double>(max_pos) - min_neg) / (qmax - qmin));
    }
  }
  scale = std::max(scale, rule.eps);
  if (rule.symmetric) return {scale, rule.symmetric_zero_point};
  const double shifted = qmin - static_cast<double>(std::nearbyint(min_neg / scale));
  return {scale, static_cast<std::int32_t>(std::clamp(shifted, qmin, qmax))};
}

/// The parameters of one group whose range kernel reported [min_val, max_val] (min > max: it saw
/// nothing finite, taken as [0, 0]).
inline Affine group_affine(float min_val, float max_val, const RangeRule& rule) {
  if (min_val > max_val) min_val = max_val = 0.0f;
  const auto [scale, zero_point] = qparams_of_range(min_val, max_val, rule);
  return {1.0f / scale, scale, zero_point};
}

}  // namespace lucid::quantization::kernels
