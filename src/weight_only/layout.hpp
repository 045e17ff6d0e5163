// Internal: the storage behind PackedWeightsLowBit (the kernels' view of it:
// kernels/weight_only_layout.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/weight_only_layout.hpp"
#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/qscheme.hpp"
#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/weight_only.hpp"

namespace lucid::quantization {

struct PackedWeightsLowBit::Layout {
  WeightOnlyFormat format;
  QDtype qdtype = qint4;                             ///< the grid of the codes (to_quantized)
  QScheme qscheme = QScheme::PER_CHANNEL_SYMMETRIC;  ///< reported by to_quantized
  std::int32_t code_offset = 0;                      ///< q = lane + code_offset for affine formats
  ByteBuffer storage;                                ///< 64-byte aligned bytes behind view.data
  std::vector<float> int8_weight_sums;               ///< behind view.int8_weight_sums
  weight_only::PackedView view;
};

}  // namespace lucid::quantization
