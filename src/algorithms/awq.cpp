// AWQ: the α search of per-input-channel scales, the clip search and the folding rules, on
// calibration statistics.
#include "lucid/quantization/awq.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "algorithms/weight_matrix.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"

namespace lucid::quantization {
namespace {

void check_options(const AwqOptions& options) {
  options.grid.validate();
  if (options.grid_points < 1) {
    throw Error("awq: grid_points is " + std::to_string(options.grid_points) + "; expected >= 1");
  }
  if (options.clip_grid < 1 || !(options.max_shrink >= 0 && options.max_shrink < 1)) {
    throw Error("awq: clip_grid " + std::to_string(options.clip_grid) + ", max_shrink " +
                std::to_string(options.max_shrink) +
                "; expected clip_grid >= 1, 0 <= max_shrink < 1");
  }
}

// W · diag(s) as float32, the weight AWQ quantizes.
std::vector<float> scaled_columns(const std::vector<float>& w, std::int64_t k,
                                  const std::vector<float>& s) {
  std::vector<float> out(w.size());
  for (std::size_t i = 0; i < w.size(); ++i)
    out[i] = w[i] * s[i % static_cast<std::size_t>(k)];
  return out;
}

// Q(W s)/s − W in float64 for a quantized scaled weight.
std::vector<double> original_space_delta(const QuantizedTensor& q, const std::vector<float>& w,
                                         std::int64_t k, const std::vector<float>& s) {
  const Tensor deq = dequantize(q);
  const float* d = deq.data_as<float>();
  std::vector<double> delta(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    delta[i] = static_cast<double>(d[i]) / s[i % static_cast<std::size_t>(k)] - w[i];
  }
  return delta;
}

// Shrinks each (row, group) range of the scaled weight `ws` to the candidate of
// least output error Δ_gᵀ H'_gg Δ_g, H' = S⁻¹ H S⁻¹; returns the clipped weight.
std::vector<float> clip_search(const std::vector<float>& ws, std::int64_t n, std::int64_t k,
                               std::span<const double> hessian, const std::vector<float>& s,
                               const AwqOptions& options) {
  const WeightGrid& grid = options.grid;
  const std::int64_t g = grid.group_size == 0 ? k : grid.group_size;
  const int steps = std::max(1, static_cast<int>(options.clip_grid * options.max_shrink));
  std::vector<float> out(ws);
  std::vector<double> delta(static_cast<std::size_t>(g));
  std::vector<float> clipped(static_cast<std::size_t>(g));
  for (std::int64_t c0 = 0; c0 < k; c0 += g) {
    const std::int64_t width = std::min(g, k - c0);
    std::vector<double> hg(static_cast<std::size_t>(width * width));  // H'_gg
    for (std::int64_t a = 0; a < width; ++a) {
      for (std::int64_t b = 0; b < width; ++b) {
        hg[a * width + b] =
            hessian[(c0 + a) * k + c0 + b] / (static_cast<double>(s[c0 + a]) * s[c0 + b]);
      }
    }
    for (std::int64_t r = 0; r < n; ++r) {
      const float* w = ws.data() + r * k + c0;
      float amax = 0;
      for (std::int64_t j = 0; j < width; ++j)
        amax = std::max(amax, std::abs(w[j]));
      double best_err = std::numeric_limits<double>::infinity();
      float best_max = amax;
      for (int i = 0; i < steps; ++i) {
        const auto max_val =
            static_cast<float>(amax * (1.0 - static_cast<double>(i) / options.clip_grid));
        float lo = max_val;
        float hi = -max_val;
        for (std::int64_t j = 0; j < width; ++j) {
          clipped[j] = std::clamp(w[j], -max_val, max_val);
          lo = std::min(lo, clipped[j]);
          hi = std::max(hi, clipped[j]);
        }
        float scale = 0;
        std::int32_t zero = 0;
        detail::range_qparams(lo, hi, grid, &scale, &zero);
        for (std::int64_t j = 0; j < width; ++j) {
          const auto code = quantize_value(clipped[j], scale, zero, grid.qdtype);
          delta[j] = static_cast<double>(dequantize_value(code, scale, zero)) - w[j];
        }
        double err = 0;
        for (std::int64_t a = 0; a < width; ++a) {
          double row = 0;
          for (std::int64_t b = 0; b < width; ++b)
            row += hg[a * width + b] * delta[b];
          err += row * delta[a];
        }
        if (err < best_err) {
          best_err = err;
          best_max = max_val;
        }
      }
      for (std::int64_t j = 0; j < width; ++j) {
        out[r * k + c0 + j] = std::clamp(w[j], -best_max, best_max);
      }
    }
  }
  return out;
}

}  // namespace

AwqResult awq_quantize(const TensorView& weight, std::span<const double> hessian, std::int64_t rows,
                       std::span<const double> mean_abs, const AwqOptions& options) {
  check_options(options);
  const auto w = detail::read_weight(weight, "awq weight");
  const std::int64_t n = w.rows;
  const std::int64_t k = w.cols;
  detail::check_hessian(hessian, k, "awq hessian");
  detail::check_channel_vector(mean_abs, k, "awq mean_abs");
  if (rows < 1)
    throw Error("awq: rows is " + std::to_string(rows) + "; expected >= 1 calibration row");
  const double norm = static_cast<double>(rows) * static_cast<double>(n);

  AwqResult result;
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < options.grid_points; ++r) {
    const double alpha = static_cast<double>(r) / options.grid_points;
    std::vector<float> s(static_cast<std::size_t>(k));
    for (std::int64_t j = 0; j < k; ++j) {
      s[j] = static_cast<float>(std::max(std::pow(mean_abs[j], alpha), 1e-4));
    }
    const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
    const auto norm_s = static_cast<float>(std::sqrt(static_cast<double>(*lo) * *hi));
    for (float& v : s)
      v /= norm_s;
    const auto ws = scaled_columns(w.values, k, s);
    const auto q = quantize_rtn(TensorView(ws, Shape{n, k}), options.grid);
    const double loss =
        detail::trace_quadratic(original_space_delta(q, w.values, k, s), n, k, hessian) / norm;
    result.loss_per_alpha.push_back(loss);
    if (loss < best) {
      best = loss;
      result.alpha = static_cast<float>(alpha);
      result.scales = s;
      result.quantized = q;
    }
  }
  result.loss = best;
  if (options.clip) {
    const auto ws = scaled_columns(w.values, k, result.scales);
    const auto clipped = clip_search(ws, n, k, hessian, result.scales, options);
    result.quantized = quantize_rtn(TensorView(clipped, Shape{n, k}), options.grid);
    result.loss =
        detail::trace_quadratic(original_space_delta(result.quantized, w.values, k, result.scales),
                                n, k, hessian) /
        norm;
  }
  return result;
}

namespace {
void check_scales(std::span<const float> scales, const char* what) {
  for (std::size_t j = 0; j < scales.size(); ++j) {
    if (!std::isfinite(scales[j]) || scales[j] <= 0) {
      throw Error(std::string(what) + ": scale " + std::to_string(j) + " is " +
                  std::to_string(scales[j]) + "; expected finite and > 0");
    }
  }
}
}  // namespace

void fold_scales_into_norm(std::span<float> gamma, std::span<float> beta,
                           std::span<const float> scales) {
  check_scales(scales, "fold_scales_into_norm");
  if (gamma.size() != scales.size() || (!beta.empty() && beta.size() != scales.size())) {
    throw Error("fold_scales_into_norm: gamma has " + std::to_string(gamma.size()) +
                " entries and beta " + std::to_string(beta.size()) + "; expected " +
                std::to_string(scales.size()) + " (beta may be empty)");
  }
  for (std::size_t j = 0; j < scales.size(); ++j) {
    gamma[j] /= scales[j];
    if (!beta.empty()) beta[j] /= scales[j];
  }
}

void fold_scales_into_previous_linear(std::span<float> weight, std::int64_t out_features,
                                      std::span<float> bias, std::span<const float> scales) {
  check_scales(scales, "fold_scales_into_previous_linear");
  const auto m = static_cast<std::size_t>(out_features);
  const auto count = scales.size();
  if (out_features < 1 || weight.size() % m != 0 || count > m ||
      (!bias.empty() && bias.size() != m)) {
    throw Error("fold_scales_into_previous_linear: weight of " + std::to_string(weight.size()) +
                " values, " + std::to_string(out_features) + " output rows, bias of " +
                std::to_string(bias.size()) + " and " + std::to_string(count) +
                " scales; expected [M, ·] with M >= scales and bias empty or [M]");
  }
  const std::size_t cols = weight.size() / m;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t row = m - count + i;
    for (std::size_t c = 0; c < cols; ++c)
      weight[row * cols + c] /= scales[i];
    if (!bias.empty()) bias[row] /= scales[i];
  }
}

void scale_weight_columns(std::span<float> weight, std::int64_t in_features,
                          std::span<const float> scales) {
  check_scales(scales, "scale_weight_columns");
  if (in_features < 1 || scales.size() != static_cast<std::size_t>(in_features) ||
      weight.size() % scales.size() != 0) {
    throw Error("scale_weight_columns: weight of " + std::to_string(weight.size()) +
                " values and " + std::to_string(scales.size()) + " scales for K = " +
                std::to_string(in_features) + "; expected [N, K] and K scales");
  }
  for (std::size_t i = 0; i < weight.size(); ++i)
    weight[i] *= scales[i % scales.size()];
}

}  // namespace lucid::quantization
