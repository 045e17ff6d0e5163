// The shared weight-matrix helpers of the weight algorithms (reading, checks, group parameters).
#include "algorithms/weight_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <cblas.h>

#include "core/qparams_formula.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/pack.hpp"

namespace lucid::quantization::detail {

WeightMatrix read_weight(const TensorView& weight, const char* what) {
  if (weight.shape.size() != 2 || weight.shape[0] < 1 || weight.shape[1] < 1) {
    std::string dims;
    for (auto d : weight.shape)
      dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    throw Error(std::string(what) + ": expected a non-empty rank-2 weight [N, K], got shape [" +
                dims + "]");
  }
  WeightMatrix m{weight.shape[0], weight.shape[1], to_float32(weight, what)};
  for (std::size_t i = 0; i < m.values.size(); ++i) {
    if (!std::isfinite(m.values[i])) {
      throw Error(std::string(what) + ": element " + std::to_string(i) + " is " +
                  std::to_string(m.values[i]) + "; expected finite weights");
    }
  }
  return m;
}

void check_hessian(std::span<const double> hessian, std::int64_t features, const char* what) {
  const auto k = static_cast<std::size_t>(features);
  if (hessian.size() != k * k) {
    throw Error(std::string(what) + ": expected " + std::to_string(k) + "x" + std::to_string(k) +
                " = " + std::to_string(k * k) + " entries for K = " + std::to_string(k) + ", got " +
                std::to_string(hessian.size()));
  }
  constexpr std::size_t tile = 64;  // (i, j) against (j, i) tile by tile: both stay in cache
  for (std::size_t i0 = 0; i0 < k; i0 += tile) {
    for (std::size_t j0 = i0; j0 < k; j0 += tile) {
      for (std::size_t i = i0; i < std::min(k, i0 + tile); ++i) {
        for (std::size_t j = std::max(j0, i); j < std::min(k, j0 + tile); ++j) {
          const double a = hessian[i * k + j];
          const double b = hessian[j * k + i];
          if (!std::isfinite(a) || !std::isfinite(b)) {
            const bool upper_bad = !std::isfinite(a);
            throw Error(std::string(what) + ": entry (" + std::to_string(upper_bad ? i : j) + ", " +
                        std::to_string(upper_bad ? j : i) +
                        ") is not finite; expected finite statistics");
          }
          if (j > i && std::abs(a - b) > 1e-6 * std::max({std::abs(a), std::abs(b), 1e-300})) {
            throw Error(std::string(what) + ": not symmetric at (" + std::to_string(i) + ", " +
                        std::to_string(j) + "): " + std::to_string(a) + " vs " + std::to_string(b));
          }
        }
      }
    }
  }
  for (std::size_t i = 0; i < k; ++i) {
    if (hessian[i * k + i] < 0) {
      throw Error(std::string(what) + ": diagonal entry " + std::to_string(i) + " is " +
                  std::to_string(hessian[i * k + i]) + "; expected >= 0 (a sum of squares)");
    }
  }
}

void check_channel_vector(std::span<const double> values, std::int64_t features, const char* what) {
  if (values.size() != static_cast<std::size_t>(features)) {
    throw Error(std::string(what) + ": expected " + std::to_string(features) +
                " entries (one per input column), got " + std::to_string(values.size()));
  }
  for (std::size_t j = 0; j < values.size(); ++j) {
    if (!std::isfinite(values[j]) || values[j] < 0) {
      throw Error(std::string(what) + ": entry " + std::to_string(j) + " is " +
                  std::to_string(values[j]) + "; expected finite and >= 0");
    }
  }
}

void range_qparams(float min_val, float max_val, const WeightGrid& grid, float* scale,
                   std::int32_t* zero_point) {
  const auto [s, z] = qparams_for_range(min_val, max_val, grid.qscheme(), grid.qdtype, default_eps);
  *scale = s;
  *zero_point = z;
}

void row_group_qparams(const double* w, std::int64_t rows, std::int64_t stride, std::int64_t col0,
                       std::int64_t width, const WeightGrid& grid, float* scale,
                       std::int32_t* zero_point, std::int64_t param_stride) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const double* row = w + r * stride + col0;
    float lo = static_cast<float>(row[0]);
    float hi = lo;
    for (std::int64_t c = 1; c < width; ++c) {
      const auto v = static_cast<float>(row[c]);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    range_qparams(lo, hi, grid, scale + r * param_stride, zero_point + r * param_stride);
  }
}

double trace_quadratic(std::span<const double> delta, std::int64_t n, std::int64_t k,
                       std::span<const double> hessian) {
  std::vector<double> dh(delta.size());  // Δ H
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(k),
              static_cast<int>(k), 1.0, delta.data(), static_cast<int>(k), hessian.data(),
              static_cast<int>(k), 0.0, dh.data(), static_cast<int>(k));
  double trace = 0;
  for (std::size_t i = 0; i < delta.size(); ++i)
    trace += dh[i] * delta[i];
  return trace;
}

QuantizedTensor make_quantized(std::int64_t rows, std::int64_t cols,
                               std::span<const std::int32_t> codes, const WeightGrid& grid,
                               std::vector<float> scale, std::vector<std::int32_t> zero_point) {
  (void)rows;
  QParams qparams = grid.make_qparams(std::move(scale), std::move(zero_point));
  return QuantizedTensor(Shape{rows, cols}, std::move(qparams), pack_codes(codes, grid.qdtype));
}

}  // namespace lucid::quantization::detail
