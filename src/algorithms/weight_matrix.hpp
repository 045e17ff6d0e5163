// Internal: the float32 weight matrix, statistic checks and per-group grid helpers the weight
// algorithms share.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/weight_grid.hpp"

namespace lucid::quantization::detail {

/// A Linear weight [rows = N, cols = K] as row-major float32.
struct WeightMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<float> values;
};

/// Reads `weight` (rank 2, float32 / float16 / bfloat16, all finite); throws
/// Error naming `what`, the shape or the first non-finite element.
WeightMatrix read_weight(const TensorView& weight, const char* what);
/// Checks a [K, K] matrix: size, finite entries, symmetry (relative 1e-6) and a non-negative
/// diagonal.
void check_hessian(std::span<const double> hessian, std::int64_t features, const char* what);
/// Checks a [K] vector: size, finite, >= 0.
void check_channel_vector(std::span<const double> values, std::int64_t features, const char* what);

/// One (scale, zero point) per row for columns [col0, col0 + width) of the
/// row-major matrix `w` (row stride `stride`): the min-max parameters of the
/// grid, exactly as quantize_rtn computes them.
void row_group_qparams(const double* w, std::int64_t rows, std::int64_t stride, std::int64_t col0,
                       std::int64_t width, const WeightGrid& grid, float* scale,
                       std::int32_t* zero_point, std::int64_t param_stride);
/// The same for a range (min, max) of one group.
void range_qparams(float min_val, float max_val, const WeightGrid& grid, float* scale,
                   std::int32_t* zero_point);

/// tr(Δ H Δᵀ) for Δ [n, k] and H [k, k], both row-major float64 (no checks).
double trace_quadratic(std::span<const double> delta, std::int64_t n, std::int64_t k,
                       std::span<const double> hessian);

/// Packs row-major int32 codes [N, K] with the grid's parameters [N, G] into a QuantizedTensor.
QuantizedTensor make_quantized(std::int64_t rows, std::int64_t cols,
                               std::span<const std::int32_t> codes, const WeightGrid& grid,
                               std::vector<float> scale, std::vector<std::int32_t> zero_point);

}  // namespace lucid::quantization::detail
