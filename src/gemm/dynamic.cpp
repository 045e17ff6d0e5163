// gemm_dynamic / linear_dynamic: float activations quantized per row (or per tensor), then the int8
// GEMM.
#include <string>
#include <vector>

#include "core/row_quantization.hpp"
#include "gemm/driver.hpp"
#include "gemm/output_stage.hpp"
#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gemm.hpp"

namespace lucid::quantization {
namespace {

constexpr const char* what = "gemm_dynamic";

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

  // Codes exactly as quantize() writes them, one (scale, zero point) per row or for all rows
  // (a non-finite value throws before anything is written).
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(m * k));
  std::vector<float> scales;
  std::vector<std::int32_t> zero_points;
  const detail::RowQuantization rows_in{.x = a,
                                        .rows = m,
                                        .k = k,
                                        .x_stride = a_row_stride,
                                        .scheme = QScheme::PER_TENSOR_AFFINE,
                                        .qdtype = qdtype,
                                        .per_row = options.per_row,
                                        .codes = codes.data(),
                                        .code_stride = k};
  detail::quantize_rows(kt, rows_in, {"gemm_dynamic: a", "expected finite activations"}, false,
                        scales, zero_points);
  // Effective zero points for the kernels.
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
