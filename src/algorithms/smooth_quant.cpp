// SmoothQuant's per-channel smoothing factors s_j = max|X_j|^α / max|W_j|^(1−α).
#include "lucid/quantization/smooth_quant.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "algorithms/weight_matrix.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization {

std::vector<float> smooth_quant_scales(std::span<const float> act_abs_max,
                                       std::span<const TensorView> weights, double alpha) {
  if (!(alpha >= 0 && alpha <= 1)) {
    throw Error("smooth_quant: alpha is " + std::to_string(alpha) + "; expected 0 <= alpha <= 1");
  }
  if (weights.empty()) throw Error("smooth_quant: no weights given; expected one or more [N, K]");
  const auto k = static_cast<std::int64_t>(act_abs_max.size());
  std::vector<double> w_max(act_abs_max.size(), 0.0);
  for (const TensorView& view : weights) {
    const auto w = detail::read_weight(view, "smooth_quant weight");
    if (w.cols != k) {
      throw Error("smooth_quant: a weight has " + std::to_string(w.cols) +
                  " input columns; expected " + std::to_string(k) + " (one per act_abs_max entry)");
    }
    for (std::int64_t r = 0; r < w.rows; ++r) {
      for (std::int64_t j = 0; j < k; ++j) {
        w_max[j] = std::max(w_max[j], static_cast<double>(std::abs(w.values[r * k + j])));
      }
    }
  }
  std::vector<float> s(act_abs_max.size());
  for (std::int64_t j = 0; j < k; ++j) {
    const double a = act_abs_max[j];
    if (!std::isfinite(a) || a < 0) {
      throw Error("smooth_quant: act_abs_max " + std::to_string(j) + " is " + std::to_string(a) +
                  "; expected finite and >= 0");
    }
    const double wm = std::max(w_max[j], 1e-5);
    s[j] = static_cast<float>(std::max(std::pow(a, alpha) / std::pow(wm, 1 - alpha), 1e-5));
  }
  return s;
}

}  // namespace lucid::quantization
