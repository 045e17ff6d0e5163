// The GEMM output stages: int32 copy, float32 scale + bias, double-precision requantization.
#include "gemm/output_stage.hpp"

#include <algorithm>
#include <cstring>

namespace lucid::quantization::igemm {

void Int32Stage::apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
                       std::int64_t col_end, const std::int32_t* acc,
                       std::int64_t acc_stride) const {
  const auto bytes = static_cast<std::size_t>(col_end - col_begin) * sizeof(std::int32_t);
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(c_.data + (row_begin + r) * c_.row_stride + col_begin, acc + r * acc_stride, bytes);
}

void FloatStage::apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
                       std::int64_t col_end, const std::int32_t* acc,
                       std::int64_t acc_stride) const {
  const std::int64_t cols = col_end - col_begin;
  const float* ws = w_scales_ + col_begin;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float sa = a_scales_[per_row_ ? row_begin + r : 0];
    const std::int32_t* in = acc + r * acc_stride;
    float* out = c_.data + (row_begin + r) * c_.row_stride + col_begin;
    if (c_.bias != nullptr) {
      const float* bias = c_.bias + col_begin;
      for (std::int64_t j = 0; j < cols; ++j) {
        const float scaled = static_cast<float>(in[j]) * (sa * ws[j]);
        out[j] = scaled + bias[j];
      }
    } else {
      for (std::int64_t j = 0; j < cols; ++j)
        out[j] = static_cast<float>(in[j]) * (sa * ws[j]);
    }
  }
}

RequantizeStage::RequantizeStage(const RequantizedOutput& c, float a_scale,
                                 const std::vector<float>& w_scales, RequantizeRowFn row)
    : c_(c),
      row_(row),
      bias_(w_scales.size(), 0.0),
      multiplier_(w_scales.size()),
      offset_(w_scales.size(), 0.0) {
  for (std::size_t n = 0; n < w_scales.size(); ++n) {
    multiplier_[n] = static_cast<double>(a_scale) * static_cast<double>(w_scales[n]) /
                     static_cast<double>(c.scale);
    if (c.bias != nullptr)
      offset_[n] = static_cast<double>(c.bias[n]) / static_cast<double>(c.scale);
    if (c.bias_int32 != nullptr) bias_[n] = static_cast<double>(c.bias_int32[n]);
  }
  const auto low = std::max<std::int64_t>(c.qdtype.quant_min(), c.relu ? c.zero_point : INT64_MIN);
  low_ = static_cast<double>(low - c.zero_point);
  high_ = static_cast<double>(c.qdtype.quant_max() - c.zero_point);
}

void RequantizeStage::apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
                            std::int64_t col_end, const std::int32_t* acc,
                            std::int64_t acc_stride) const {
  RequantizeRowArgs args;
  args.bias = bias_.data() + col_begin;
  args.multiplier = multiplier_.data() + col_begin;
  args.offset = offset_.data() + col_begin;
  args.below = low_ - 1.0;
  args.above = high_ + 1.0;
  args.low = low_;
  args.high = high_;
  args.zero_point = static_cast<double>(c_.zero_point);
  for (std::int64_t r = 0; r < rows; ++r) {
    auto* out = static_cast<std::uint8_t*>(c_.data) + (row_begin + r) * c_.row_stride + col_begin;
    row_(acc + r * acc_stride, col_end - col_begin, args, out);
  }
}

}  // namespace lucid::quantization::igemm
