// Per-row (or per-tensor) dynamic quantization of float32 rows to 8-bit codes.
#include "core/row_quantization.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/kernel_args.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/qparams.hpp"

namespace lucid::quantization::detail {

void throw_first_nonfinite(const float* x, std::int64_t k, std::int64_t row,
                           const NonFiniteMessage& message) {
  std::int64_t col = 0;
  while (col + 1 < k && std::isfinite(x[col]))
    ++col;
  throw Error(std::string(message.prefix) + "[" + std::to_string(row) + ", " + std::to_string(col) +
              "] = " + std::to_string(x[col]) + " (" + std::string(message.expected) + ")");
}

bool quantize_rows(const kernels::KernelTable& kt, const RowQuantization& q,
                   const NonFiniteMessage& message, bool fallback, std::vector<float>& scales,
                   std::vector<std::int32_t>& zero_points) {
  constexpr int f32 = static_cast<int>(kernels::FloatType::f32);
  const auto rows = static_cast<std::size_t>(q.rows);
  std::vector<float> mins(rows), maxs(rows);
  std::vector<std::int64_t> nonfinite(rows, 0);
  const int pieces = kernels::threads_for(q.rows * q.k);
  kernels::parallel_pieces(q.rows, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      mins[ri] = INFINITY;
      maxs[ri] = -INFINITY;
      nonfinite[ri] = kt.minmax[f32](q.x + r * q.x_stride, q.k, &mins[ri], &maxs[ri]);
    }
  });
  for (std::int64_t r = 0; r < q.rows; ++r) {
    if (nonfinite[static_cast<std::size_t>(r)] == 0) continue;
    if (fallback) return false;
    throw_first_nonfinite(q.x + r * q.x_stride, q.k, r, message);
  }
  scales.resize(rows);
  zero_points.resize(rows);
  if (q.per_row) {
    for (std::size_t r = 0; r < rows; ++r) {
      const QParams qp = calculate_qparams(mins[r], maxs[r], q.scheme, q.qdtype);
      scales[r] = qp.scale[0];
      zero_points[r] = qp.zero_point[0];
    }
  } else if (rows > 0) {
    const float lo = *std::min_element(mins.begin(), mins.end());
    const float hi = *std::max_element(maxs.begin(), maxs.end());
    const QParams qp = calculate_qparams(lo, hi, q.scheme, q.qdtype);
    scales.assign(rows, qp.scale[0]);
    zero_points.assign(rows, qp.zero_point[0]);
  }
  const kernels::Grid grid = grid_of(q.qdtype);
  kernels::parallel_pieces(q.rows, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      kt.quantize[f32][static_cast<int>(kernels::CodeWidth::b8)](
          q.x + r * q.x_stride, q.k,
          kernels::Affine{1.0f / scales[ri], scales[ri], zero_points[ri]}, grid,
          q.codes + r * q.code_stride);
    }
  });
  return true;
}

}  // namespace lucid::quantization::detail
