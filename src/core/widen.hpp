// Internal: runs of float32 / float16 / bfloat16 elements widened exactly to float32.
#pragma once

#include <cstdint>

#include "lucid/quantization/scalar_type.hpp"

namespace lucid::quantization::detail {

/// out[k] = element k of `x` (float32, float16 or bfloat16; any alignment) as float32, exactly,
/// for k < n. Other types are a programming error (callers check the type).
void widen_to_float32(const void* x, ScalarType type, std::int64_t n, float* out);

}  // namespace lucid::quantization::detail
