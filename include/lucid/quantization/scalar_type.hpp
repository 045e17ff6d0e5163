// Element types of plain tensors (float32, float16, bfloat16, integers) and
// exact float16 / bfloat16 <-> float32 conversions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lucid::quantization {

/// The element type of a plain (unquantized) tensor. The names follow
/// safetensors' dtype strings ("F32", "BF16", ...) via to_safetensors_name().
enum class ScalarType : std::uint8_t {
  float32,
  float16,
  bfloat16,
  float64,
  int8,
  uint8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  boolean,
};

/// Bytes per element.
std::size_t element_size(ScalarType type);
/// True for float32, float16, bfloat16 and float64.
bool is_floating_point(ScalarType type);
/// Lowercase name, e.g. "bfloat16".
std::string to_string(ScalarType type);
/// Parses a lowercase name ("float32", "f32", "bf16", "float16", "f16", "int8", ...).
/// Throws Error naming the text and the accepted names when unknown.
ScalarType scalar_type_from_string(std::string_view name);

/// bfloat16 bits -> float32 (exact).
inline float bfloat16_to_float(std::uint16_t bits);
/// float32 -> bfloat16 bits, rounding to nearest even; NaN stays a (quiet) NaN.
inline std::uint16_t float_to_bfloat16(float value);
/// IEEE half bits -> float32 (exact, subnormals included).
float float16_to_float(std::uint16_t bits);
/// float32 -> IEEE half bits, rounding to nearest even, overflow to +-Inf, NaN kept.
std::uint16_t float_to_float16(float value);

}  // namespace lucid::quantization

#include <cstring>

namespace lucid::quantization {

inline float bfloat16_to_float(std::uint16_t bits) {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

inline std::uint16_t float_to_bfloat16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

}  // namespace lucid::quantization
