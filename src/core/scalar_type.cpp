// ScalarType names and sizes, and float16 <-> float32 conversion.
#include "lucid/quantization/scalar_type.hpp"

#include <array>
#include <cstring>

#include "core/widen.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

struct TypeInfo {
  ScalarType type;
  std::size_t size;
  const char* name;
  const char* short_name;
};

constexpr std::array<TypeInfo, 13> kTypes{{
    {ScalarType::float32, 4, "float32", "f32"},
    {ScalarType::float16, 2, "float16", "f16"},
    {ScalarType::bfloat16, 2, "bfloat16", "bf16"},
    {ScalarType::float64, 8, "float64", "f64"},
    {ScalarType::int8, 1, "int8", "i8"},
    {ScalarType::uint8, 1, "uint8", "u8"},
    {ScalarType::int16, 2, "int16", "i16"},
    {ScalarType::uint16, 2, "uint16", "u16"},
    {ScalarType::int32, 4, "int32", "i32"},
    {ScalarType::uint32, 4, "uint32", "u32"},
    {ScalarType::int64, 8, "int64", "i64"},
    {ScalarType::uint64, 8, "uint64", "u64"},
    {ScalarType::boolean, 1, "bool", "bool"},
}};

const TypeInfo& info(ScalarType type) {
  return kTypes.at(static_cast<std::size_t>(type));
}

}  // namespace

std::size_t element_size(ScalarType type) {
  return info(type).size;
}

bool is_floating_point(ScalarType type) {
  return type == ScalarType::float32 || type == ScalarType::float16 ||
         type == ScalarType::bfloat16 || type == ScalarType::float64;
}

std::string to_string(ScalarType type) {
  return info(type).name;
}

ScalarType scalar_type_from_string(std::string_view name) {
  for (const TypeInfo& t : kTypes) {
    if (name == t.name || name == t.short_name) return t.type;
  }
  if (name == "float") return ScalarType::float32;
  if (name == "half") return ScalarType::float16;
  std::string accepted;
  for (const TypeInfo& t : kTypes)
    accepted += std::string(accepted.empty() ? "" : ", ") + t.name;
  throw Error("element type \"" + std::string(name) + "\" is unknown (expected one of " + accepted +
              ")");
}

float float16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  std::uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {
    // Subnormal half: value = mantissa * 2^-24, normalised into a float32.
    std::uint32_t shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    out = sign | ((113u - shift) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

std::uint16_t float_to_float16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: keep it quiet and non-zero.
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x1ffu));
  }
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: Inf
  if (magnitude < 0x38800000u) {               // below 2^-14: subnormal half (or zero)
    if (magnitude < 0x33000000u) return sign;  // below 2^-25 rounds to zero
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;  // bits dropped: value = mantissa * 2^(exp-150)
    const std::uint32_t kept = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    const std::uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent and round the mantissa to 10 bits, ties to even.
  const std::uint32_t rebased = magnitude - 0x38000000u;
  const std::uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

}  // namespace lucid::quantization

namespace lucid::quantization::detail {

void widen_to_float32(const void* x, ScalarType type, std::int64_t n, float* out) {
  const auto* bytes = static_cast<const unsigned char*>(x);
  if (type == ScalarType::float32) {
    if (n > 0) std::memcpy(out, bytes, static_cast<std::size_t>(n) * sizeof(float));
    return;
  }
  const bool half = type == ScalarType::float16;
  for (std::int64_t k = 0; k < n; ++k) {
    std::uint16_t bits;
    std::memcpy(&bits, bytes + 2 * k, 2);  // the data may be unaligned
    out[k] = half ? float16_to_float(bits) : bfloat16_to_float(bits);
  }
}

}  // namespace lucid::quantization::detail
