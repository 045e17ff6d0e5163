// Internal: the requantized-stage check gemm() and conv2d() share (stage_checks.hpp's, composed).
#pragma once

#include <cstdint>

#include "lucid/quantization/gemm.hpp"

namespace lucid::quantization::igemm {

/// Checks a requantized output stage for n output channels: c.scale, an 8-bit c.qdtype,
/// c.zero_point inside it, at most one bias, and finite float bias values.
void check_requantized_stage(const char* what, const RequantizedOutput& c, std::int64_t n);

}  // namespace lucid::quantization::igemm
