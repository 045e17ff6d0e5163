// Internal: the (scale, zero_point) formula of calculate_qparams, for fused callers.
#pragma once

#include <cstdint>
#include <utility>

#include "lucid/quantization/qparams.hpp"

namespace lucid::quantization::detail {

/// One (scale, zero_point) from a validated range (finite, min <= max), exactly
/// as calculate_qparams computes it (docs/numerics.md, "calculate_qparams").
std::pair<float, std::int32_t> qparams_for_range(float min_val, float max_val, QScheme qscheme,
                                                 const QDtype& qdtype, float eps);

}  // namespace lucid::quantization::detail
