// Importance-weighted RTN: each group's parameters chosen to minimise Σ importance_j (w_j − ŵ_j)².
#include "lucid/quantization/weighted_rtn.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "algorithms/weight_matrix.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"

namespace lucid::quantization {
namespace {

double weighted_error(const float* w, const double* imp, std::int64_t width, float scale,
                      std::int32_t zero, const QDtype& qdtype) {
  double err = 0;
  for (std::int64_t j = 0; j < width; ++j) {
    const double d = w[j] - static_cast<double>(dequantize_value(
                                quantize_value(w[j], scale, zero, qdtype), scale, zero));
    err += imp[j] * d * d;
  }
  return err;
}

// Σ imp·w·l / Σ imp·l² over the codes l − z of (scale, zero): the weighted least-squares scale.
float least_squares_scale(const float* w, const double* imp, std::int64_t width, float scale,
                          std::int32_t zero, const QDtype& qdtype) {
  double num = 0;
  double den = 0;
  for (std::int64_t j = 0; j < width; ++j) {
    const double l = quantize_value(w[j], scale, zero, qdtype) - zero;
    num += imp[j] * w[j] * l;
    den += imp[j] * l * l;
  }
  return den > 0 ? static_cast<float>(num / den) : 0.0f;
}

}  // namespace

QuantizedTensor quantize_weighted_rtn(const TensorView& weight, std::span<const double> importance,
                                      const WeightGrid& grid) {
  grid.validate();
  const auto w = detail::read_weight(weight, "weighted_rtn weight");
  const std::int64_t n = w.rows;
  const std::int64_t k = w.cols;
  detail::check_channel_vector(importance, k, "weighted_rtn importance");
  const std::int64_t g = grid.group_size == 0 ? k : grid.group_size;
  const std::int64_t groups = grid.groups(k);
  std::vector<float> scale(static_cast<std::size_t>(n * groups));
  std::vector<std::int32_t> zero(scale.size());
  std::vector<std::int32_t> codes(w.values.size());
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t gi = 0; gi < groups; ++gi) {
      const std::int64_t c0 = gi * g;
      const std::int64_t width = std::min(g, k - c0);
      const float* row = w.values.data() + r * k + c0;
      const double* imp = importance.data() + c0;
      const auto [lo, hi] = std::minmax_element(row, row + width);
      double best = std::numeric_limits<double>::infinity();
      float best_s = 0;
      std::int32_t best_z = 0;
      const auto consider = [&](float s, std::int32_t z) {
        if (!(std::isfinite(s) && s >= default_eps)) return;
        const double err = weighted_error(row, imp, width, s, z, grid.qdtype);
        if (err < best) {
          best = err;
          best_s = s;
          best_z = z;
        }
      };
      for (int i = 0; i < 20; ++i) {
        const float p = 1.0f - static_cast<float>(i) / 40.0f;
        float s = 0;
        std::int32_t z = 0;
        detail::range_qparams(*lo * p, *hi * p, grid, &s, &z);
        consider(s, z);
        if (grid.symmetric) consider(least_squares_scale(row, imp, width, s, z, grid.qdtype), z);
      }
      scale[r * groups + gi] = best_s;
      zero[r * groups + gi] = best_z;
      for (std::int64_t j = 0; j < width; ++j) {
        codes[r * k + c0 + j] = quantize_value(row[j], best_s, best_z, grid.qdtype);
      }
    }
  }
  return detail::make_quantized(n, k, codes, grid, std::move(scale), std::move(zero));
}

}  // namespace lucid::quantization
