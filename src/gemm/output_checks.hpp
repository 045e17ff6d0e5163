// Internal: the argument checks gemm() and conv2d() share for scales and output stages.
#pragma once

#include <cstdint>

#include "lucid/quantization/gemm.hpp"

namespace lucid::quantization::igemm {

/// Throws Error "<what>: <name> = <scale> (expected a finite value > 0)" unless finite and > 0.
void check_scale(const char* what, const char* name, float scale);

/// Checks a requantized output stage for n output channels: c.scale, an 8-bit c.qdtype,
/// c.zero_point inside it, at most one bias, and finite float bias values.
void check_requantized_stage(const char* what, const RequantizedOutput& c, std::int64_t n);

}  // namespace lucid::quantization::igemm
