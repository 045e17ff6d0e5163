// The argument checks of the int8 GEMM and convolution stages, written once with the caller's
// names.
#pragma once

#include <cstdint>
#include <string_view>

#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/scalar_type.hpp"

namespace lucid::quantization {

// gemm() and conv2d() call these with their fields' names ("a.scale", "c.zero_point"), the Python
// module with its arguments' names ("a_scale", "out_zero_point"): one message for each check.
// Each throws Error "<what>: <name> = <value> (expected ...)".

/// A scale: finite and > 0 ("gemm: a.scale = 0.0 (expected a finite scale > 0)").
void check_scale(std::string_view what, std::string_view name, float scale);

/// The zero point of 8-bit activation codes of `type` (uint8 or int8) in operand `operand`: an
/// integer in the type's range ("... (expected an integer in [0, 255] for uint8 a)").
void check_activation_zero_point(std::string_view what, std::string_view name, ScalarType type,
                                 std::int64_t zero_point, std::string_view operand);

/// The output grid of a requantized stage: 8-bit (quint8, qint8 or a narrower 8-bit range).
void check_output_qdtype(std::string_view what, std::string_view name, const QDtype& qdtype);

/// The output zero point of a requantized stage: inside `qdtype`'s range.
void check_output_zero_point(std::string_view what, std::string_view name, const QDtype& qdtype,
                             std::int64_t zero_point);

/// At most one of a float bias (`bias`) and an int32 bias (`bias_int32`) is given.
void check_one_bias(std::string_view what, std::string_view bias, std::string_view bias_int32,
                    bool has_bias, bool has_bias_int32);

}  // namespace lucid::quantization
