// HQQ: half-quadratic optimisation of each group's zero point (scale fixed), calibration-free.
#include "lucid/quantization/hqq.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "algorithms/weight_matrix.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"

namespace lucid::quantization {
namespace {

void check_options(const HqqOptions& o) {
  o.grid.validate();
  if (o.grid.symmetric) {
    throw Error(
        "hqq: the grid is symmetric; HQQ optimises the zero point, expected an affine grid "
        "(symmetric = false, e.g. quint4)");
  }
  if (o.scale_search_steps < 0 || !(o.scale_search_range >= 0 && o.scale_search_range < 1)) {
    throw Error("hqq: scale_search_steps " + std::to_string(o.scale_search_steps) + ", range " +
                std::to_string(o.scale_search_range) + "; expected steps >= 0 and 0 <= range < 1");
  }
  if (!(o.lp_norm > 0 && o.lp_norm <= 1) || !(o.beta > 0 && std::isfinite(o.beta)) ||
      !(o.kappa >= 1 && std::isfinite(o.kappa)) || o.iterations < 0) {
    throw Error("hqq: lp_norm " + std::to_string(o.lp_norm) + ", beta " + std::to_string(o.beta) +
                ", kappa " + std::to_string(o.kappa) + ", iterations " +
                std::to_string(o.iterations) +
                "; expected 0 < lp_norm <= 1, beta > 0, kappa >= 1, iterations >= 0");
  }
}

// Σ |w − ŵ| of one group on lucidq's grid with an integer zero point.
double group_abs_error(const float* w, std::int64_t width, float scale, std::int32_t zero,
                       const QDtype& qdtype) {
  double err = 0;
  for (std::int64_t j = 0; j < width; ++j) {
    err += std::abs(static_cast<double>(w[j]) -
                    dequantize_value(quantize_value(w[j], scale, zero, qdtype), scale, zero));
  }
  return err;
}

// The HQQ iterations with a float zero point; returns the zero whose
// reconstruction had the least mean |W − W_r|.
double optimise_zero(const float* w, std::int64_t width, double scale, double zero,
                     const HqqOptions& o) {
  const double qmin = static_cast<double>(o.grid.qdtype.quant_min());
  const double qmax = static_cast<double>(o.grid.qdtype.quant_max());
  std::vector<double> wq(static_cast<std::size_t>(width));
  double beta = o.beta;
  double best_error = std::numeric_limits<double>::infinity();
  double best_zero = zero;
  for (int it = 0; it < o.iterations; ++it) {
    double error = 0;
    double zero_sum = 0;
    for (std::int64_t j = 0; j < width; ++j) {
      wq[j] = std::clamp(std::nearbyint(w[j] / scale + zero), qmin, qmax);
      const double wr = (wq[j] - zero) * scale;
      const double residual = w[j] - wr;
      const double a = std::abs(residual);
      // shrink_p: sign(x)·relu(|x| − |x|^(p−1)/β)
      const double shrunk =
          a == 0 ? 0.0
                 : std::copysign(std::max(0.0, a - std::pow(a, o.lp_norm - 1) / beta), residual);
      zero_sum += wq[j] - (w[j] - shrunk) / scale;
      error += a;
    }
    if (error < best_error) {
      best_error = error;
      best_zero = zero;
    } else if (o.early_stop) {
      break;
    }
    zero = zero_sum / static_cast<double>(width);
    beta *= o.kappa;
  }
  return best_zero;
}

}  // namespace

HqqResult hqq_quantize(const TensorView& weight, const HqqOptions& options) {
  check_options(options);
  const auto w = detail::read_weight(weight, "hqq weight");
  const std::int64_t n = w.rows;
  const std::int64_t k = w.cols;
  const WeightGrid& grid = options.grid;
  const std::int64_t g = grid.group_size == 0 ? k : grid.group_size;
  const std::int64_t groups = grid.groups(k);
  const auto qmin = static_cast<std::int32_t>(grid.qdtype.quant_min());
  const auto qmax = static_cast<std::int32_t>(grid.qdtype.quant_max());
  std::vector<float> scale(static_cast<std::size_t>(n * groups));
  std::vector<std::int32_t> zero(scale.size());
  std::vector<std::int32_t> codes(w.values.size());
  HqqResult result;
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t gi = 0; gi < groups; ++gi) {
      const std::int64_t c0 = gi * g;
      const std::int64_t width = std::min(g, k - c0);
      const float* row = w.values.data() + r * k + c0;
      const auto [lo, hi] = std::minmax_element(row, row + width);
      float s = 0;
      std::int32_t z = 0;
      detail::range_qparams(*lo, *hi, grid, &s, &z);
      const double start = group_abs_error(row, width, s, z, grid.qdtype);
      double best = start;
      const float start_scale = s;
      const int steps = options.scale_search_steps;
      for (int step = -steps; step <= steps; ++step) {
        const float candidate_scale =
            steps == 0
                ? start_scale
                : start_scale * static_cast<float>(1.0 + options.scale_search_range * step / steps);
        const double zf = optimise_zero(row, width, candidate_scale, z, options);
        const auto floor_z = static_cast<std::int32_t>(
            std::clamp(std::floor(zf), static_cast<double>(qmin), static_cast<double>(qmax)));
        for (const std::int32_t candidate : {floor_z, std::min(floor_z + 1, qmax)}) {
          const double err = group_abs_error(row, width, candidate_scale, candidate, grid.qdtype);
          if (err < best) {
            best = err;
            s = candidate_scale;
            z = candidate;
          }
        }
      }
      result.start_abs_error += start;
      result.final_abs_error += best;
      scale[r * groups + gi] = s;
      zero[r * groups + gi] = z;
      for (std::int64_t j = 0; j < width; ++j) {
        codes[r * k + c0 + j] = quantize_value(row[j], s, z, grid.qdtype);
      }
    }
  }
  const auto count = static_cast<double>(w.values.size());
  result.start_abs_error /= count;
  result.final_abs_error /= count;
  result.quantized = detail::make_quantized(n, k, codes, grid, std::move(scale), std::move(zero));
  return result;
}

}  // namespace lucid::quantization
