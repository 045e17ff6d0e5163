// Internal: the packed representation behind PackedConvWeights.
#pragma once

#include <cstdint>
#include <vector>

#include "lucid/quantization/conv.hpp"
#include "lucid/quantization/gemm.hpp"
#include "lucid/quantization/qdtype.hpp"

namespace lucid::quantization {

/// Codes in OIHW order (for unpack), and either one packed GEMM operand per group
/// (rows = that group's output channels, columns in (i, j, c) order to match NHWC
/// windows) or, for depthwise weights, the taps as int16 [KH · KW][C_out].
struct PackedConvWeights::Layout {
  std::int64_t out_channels = 0, in_per_group = 0, kernel_h = 0, kernel_w = 0, groups = 1;
  bool per_channel = true;
  QDtype qdtype = qint8;
  std::vector<float> scales;  // C_out
  std::vector<std::int8_t> oihw;
  std::vector<PackedWeightsInt8> group_weights;  // GEMM paths; empty when depthwise
  std::vector<std::int16_t> depthwise_taps;      // depthwise path; empty otherwise

  bool depthwise() const { return in_per_group == 1 && groups > 1; }
  std::int64_t out_per_group() const { return out_channels / groups; }
  std::int64_t depth() const { return in_per_group * kernel_h * kernel_w; }
};

}  // namespace lucid::quantization
