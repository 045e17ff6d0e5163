// Internal: the three output stages (int32, float32, requantized 8-bit) applied to finished tiles.
//
// Stages are plain C++ shared by every kernel tier, so their results cannot
// depend on the tier; the float operations run one at a time (no FMA; the
// project builds with -ffp-contract=off) in the order gemm.hpp states.
#pragma once

#include <cstdint>
#include <vector>

#include "gemm/driver.hpp"
#include "kernels/gemm_int8.hpp"
#include "lucid/quantization/gemm.hpp"

namespace lucid::quantization::igemm {

/// (a) C = acc.
class Int32Stage final : public TileStage {
 public:
  explicit Int32Stage(const Int32Output& c) : c_(c) {}
  void apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
             std::int64_t col_end, const std::int32_t* acc, std::int64_t acc_stride) const override;

 private:
  Int32Output c_;
};

/// (b) C = float(acc) · (s_A[m] · s_W[n]) + bias[n]; s_A per row or one for all rows.
class FloatStage final : public TileStage {
 public:
  /// `a_scales` holds one scale per row when `per_row`, else one; `w_scales` N.
  FloatStage(const FloatOutput& c, const float* a_scales, bool per_row, const float* w_scales)
      : c_(c), a_scales_(a_scales), per_row_(per_row), w_scales_(w_scales) {}
  void apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
             std::int64_t col_end, const std::int32_t* acc, std::int64_t acc_stride) const override;

 private:
  FloatOutput c_;
  const float* a_scales_;
  bool per_row_;
  const float* w_scales_;
};

/// (c) C = clamp(nearbyint(double(acc + bias_int32[n]) · m[n] + o[n]) + z_out), in double.
class RequantizeStage final : public TileStage {
 public:
  /// Precomputes m[n] and o[n] from validated scales (n = w_scales.size()); `row` is the
  /// entry point's variant of the per-row kernel.
  RequantizeStage(const RequantizedOutput& c, float a_scale, const std::vector<float>& w_scales,
                  RequantizeRowFn row);
  void apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
             std::int64_t col_end, const std::int32_t* acc, std::int64_t acc_stride) const override;

 private:
  RequantizedOutput c_;
  RequantizeRowFn row_;
  std::vector<double> bias_;  // bias_int32[n] (0 without one)
  std::vector<double> multiplier_;
  std::vector<double> offset_;
  double low_;  // the clamp bounds minus z_out, as doubles
  double high_;
};

}  // namespace lucid::quantization::igemm
