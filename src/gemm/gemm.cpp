// gemm(): validation of activations, weights and outputs, then the driver with the chosen output
// stage.
#include "lucid/quantization/gemm.hpp"

#include <string>

#include "gemm/driver.hpp"
#include "gemm/output_checks.hpp"
#include "gemm/output_stage.hpp"
#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/stage_checks.hpp"

namespace lucid::quantization {
namespace {

constexpr const char* what = "gemm";

// C may be null only when M = 0 (nothing is written then).
void check_output(const void* data, std::int64_t row_stride, std::int64_t n, std::int64_t m) {
  if (data == nullptr && m > 0) {
    throw Error(std::string(what) + ": c.data is null (expected M · N outputs)");
  }
  if (row_stride < n) {
    throw Error(std::string(what) + ": c.row_stride = " + std::to_string(row_stride) +
                " (expected >= N = " + std::to_string(n) + ")");
  }
}

// Validates A against W and returns it as the kernels read it; `zero_point`
// receives the effective zero point (z + 128 for int8 codes).
igemm::ActivationRows check_activations(const ActivationMatrix& a, const PackedWeightsInt8& w,
                                        std::int32_t& zero_point) {
  const std::int64_t k = w.columns();  // throws for empty weights
  if (a.data == nullptr && a.rows > 0) {
    throw Error(std::string(what) + ": a.data is null (expected M · K codes)");
  }
  if (a.type != ScalarType::uint8 && a.type != ScalarType::int8) {
    throw Error(std::string(what) + ": a.type = " + to_string(a.type) +
                " (expected uint8 or int8)");
  }
  if (a.rows < 0) {
    throw Error(std::string(what) + ": a.rows = " + std::to_string(a.rows) + " (expected >= 0)");
  }
  if (a.row_stride < k) {
    throw Error(std::string(what) + ": a.row_stride = " + std::to_string(a.row_stride) +
                " (expected >= K = " + std::to_string(k) + ")");
  }
  check_activation_zero_point(what, "a.zero_point", a.type, a.zero_point, "a");
  const bool flip = a.type == ScalarType::int8;
  zero_point = a.zero_point + (flip ? 128 : 0);
  igemm::ActivationRows rows;
  rows.data = static_cast<const std::uint8_t*>(a.data);
  rows.stride = a.row_stride;
  rows.rows = a.rows;
  rows.flip = flip;
  rows.zero_points = &zero_point;
  return rows;
}

}  // namespace

void gemm(const ActivationMatrix& a, const PackedWeightsInt8& w, const Int32Output& c) {
  std::int32_t zero_point = 0;
  const igemm::ActivationRows rows = check_activations(a, w, zero_point);
  check_output(c.data, c.row_stride, w.rows(), a.rows);
  igemm::run_gemm(rows, w.layout(), kernels::active().gemm, igemm::Int32Stage(c));
}

void gemm(const ActivationMatrix& a, const PackedWeightsInt8& w, const FloatOutput& c) {
  std::int32_t zero_point = 0;
  const igemm::ActivationRows rows = check_activations(a, w, zero_point);
  check_scale(what, "a.scale", a.scale);
  check_output(c.data, c.row_stride, w.rows(), a.rows);
  igemm::run_gemm(rows, w.layout(), kernels::active().gemm,
                  igemm::FloatStage(c, &a.scale, false, w.scales().data()));
}

void gemm(const ActivationMatrix& a, const PackedWeightsInt8& w, const RequantizedOutput& c) {
  std::int32_t zero_point = 0;
  const igemm::ActivationRows rows = check_activations(a, w, zero_point);
  check_scale(what, "a.scale", a.scale);
  check_output(c.data, c.row_stride, w.rows(), a.rows);
  igemm::check_requantized_stage(what, c, w.rows());
  const kernels::KernelTable& kt = kernels::active();
  igemm::run_gemm(rows, w.layout(), kt.gemm,
                  igemm::RequantizeStage(c, a.scale, w.layout().scales, kt.gemm_requantize_row));
}

}  // namespace lucid::quantization
