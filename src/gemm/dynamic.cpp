// gemm_dynamic / linear_dynamic: float activations quantized per row (or per tensor), then the int8
// GEMM.
#include <cmath>
#include <string>
#include <vector>

#include "core/kernel_args.hpp"
#include "gemm/driver.hpp"
#include "gemm/output_stage.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gemm.hpp"

namespace lucid::quantization {
namespace {

constexpr const char* what = "gemm_dynamic";
constexpr int f32 = static_cast<int>(kernels::FloatType::f32);

// Throws naming the first non-finite element of row `row` (k floats at x).
[[noreturn]] void throw_nonfinite(const float* x, std::int64_t row, std::int64_t k) {
  std::int64_t col = 0;
  while (col + 1 < k && std::isfinite(x[col]))
    ++col;
  throw Error(std::string(what) + ": a[" + std::to_string(row) + ", " + std::to_string(col) +
              "] = " + std::to_string(x[col]) + " (expected finite activations)");
}

}  // namespace

void gemm_dynamic(const float* a, std::int64_t m, std::int64_t a_row_stride,
                  const PackedWeightsInt8& w, const float* bias, float* c,
                  std::int64_t c_row_stride, const DynamicQuantization& options) {
  const std::int64_t k = w.columns();  // throws for empty weights
  const std::int64_t n = w.rows();
  if (m < 0) throw Error(std::string(what) + ": m = " + std::to_string(m) + " (expected >= 0)");
  if (a == nullptr && m > 0) throw Error(std::string(what) + ": a is null (expected M · K floats)");
  if (c == nullptr && m > 0) throw Error(std::string(what) + ": c is null (expected M · N floats)");
  if (a_row_stride < k) {
    throw Error(std::string(what) + ": a_row_stride = " + std::to_string(a_row_stride) +
                " (expected >= K = " + std::to_string(k) + ")");
  }
  if (c_row_stride < n) {
    throw Error(std::string(what) + ": c_row_stride = " + std::to_string(c_row_stride) +
                " (expected >= N = " + std::to_string(n) + ")");
  }
  const QDtype qdtype = options.qdtype;
  if (qdtype.bits() != 8) {
    throw Error(std::string(what) + ": options.qdtype = " + qdtype.name() +
                " (expected an 8-bit grid: quint8 or qint8)");
  }
  if (m == 0) return;  // an empty batch: nothing to write
  const kernels::KernelTable& kt = kernels::active();

  // Ranges first (a non-finite value throws before anything is written).
  std::vector<float> mins(static_cast<std::size_t>(m)), maxs(mins);
  std::vector<std::int64_t> nonfinite(static_cast<std::size_t>(m), 0);
  const int range_pieces = kernels::threads_for(m * k);
  kernels::parallel_pieces(m, range_pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const auto r = static_cast<std::size_t>(row);
      float lo = INFINITY, hi = -INFINITY;
      nonfinite[r] = kt.minmax[f32](a + row * a_row_stride, k, &lo, &hi);
      mins[r] = lo;
      maxs[r] = hi;
    }
  });
  for (std::int64_t row = 0; row < m; ++row) {
    if (nonfinite[static_cast<std::size_t>(row)] != 0)
      throw_nonfinite(a + row * a_row_stride, row, k);
  }

  // Parameters per row (or one pair for the tensor, from the overall range).
  std::vector<float> scales(static_cast<std::size_t>(m));
  std::vector<std::int32_t> zero_points(static_cast<std::size_t>(m));
  if (options.per_row) {
    for (std::size_t r = 0; r < scales.size(); ++r) {
      const QParams qp = calculate_qparams(mins[r], maxs[r], QScheme::PER_TENSOR_AFFINE, qdtype);
      scales[r] = qp.scale[0];
      zero_points[r] = qp.zero_point[0];
    }
  } else {
    float lo = mins[0], hi = maxs[0];
    for (std::size_t r = 1; r < mins.size(); ++r) {
      lo = std::min(lo, mins[r]);
      hi = std::max(hi, maxs[r]);
    }
    const QParams qp = calculate_qparams(lo, hi, QScheme::PER_TENSOR_AFFINE, qdtype);
    scales.assign(scales.size(), qp.scale[0]);
    zero_points.assign(zero_points.size(), qp.zero_point[0]);
  }

  // Codes exactly as quantize() writes them, then effective zero points for the kernels.
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(m * k));
  const kernels::Grid grid = detail::grid_of(qdtype);
  kernels::parallel_pieces(m, range_pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const float s = scales[static_cast<std::size_t>(row)];
      kt.quantize[f32][static_cast<int>(kernels::CodeWidth::b8)](
          a + row * a_row_stride, k,
          kernels::Affine{1.0f / s, s, zero_points[static_cast<std::size_t>(row)]}, grid,
          codes.data() + row * k);
    }
  });
  const bool flip = qdtype.is_signed();
  if (flip) {
    for (std::int32_t& z : zero_points)
      z += 128;
  }
  igemm::ActivationRows rows;
  rows.data = codes.data();
  rows.stride = k;
  rows.rows = m;
  rows.flip = flip;
  rows.zero_points = zero_points.data();
  rows.per_row = true;
  igemm::run_gemm(rows, w.layout(), kt.gemm,
                  igemm::FloatStage(FloatOutput{c, c_row_stride, bias}, scales.data(), true,
                                    w.scales().data()));
}

Tensor linear_dynamic(const TensorView& x, const PackedWeightsInt8& w, const TensorView* bias,
                      const DynamicQuantization& options) {
  const std::int64_t k = w.columns();
  const std::int64_t n = w.rows();
  if (x.type != ScalarType::float32) {
    throw Error("linear_dynamic: x has element type " + to_string(x.type) + " (expected float32)");
  }
  if (x.shape.empty() || x.shape.back() != k) {
    throw Error("linear_dynamic: x has shape " + to_string(x.shape) +
                " (expected [..., K = " + std::to_string(k) + "])");
  }
  if (bias != nullptr && (bias->type != ScalarType::float32 || bias->shape != Shape{n})) {
    throw Error("linear_dynamic: bias is " + to_string(bias->type) + " " + to_string(bias->shape) +
                " (expected float32 [N = " + std::to_string(n) + "])");
  }
  Shape shape = x.shape;
  shape.back() = n;
  Tensor out(ScalarType::float32, shape);
  const std::int64_t m = x.numel() / k;
  gemm_dynamic(x.data_as<float>(), m, k, w, bias != nullptr ? bias->data_as<float>() : nullptr,
               out.data_as<float>(), n, options);
  return out;
}

}  // namespace lucid::quantization
