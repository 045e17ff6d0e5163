// The table of ggml tensor types: ids, names, block sizes and bytes per block.
#include <lucid/quantization/error.hpp>
#include <lucid/quantization/ggml_type.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace lucid::quantization {
namespace {

// Block sizes and bytes per block as ggml defines them (ggml-common.h block structs).
constexpr std::array<GgmlTypeTraits, 32> kTypes{{
    {GgmlType::F32, "f32", 1, 4},
    {GgmlType::F16, "f16", 1, 2},
    {GgmlType::Q4_0, "q4_0", 32, 18},
    {GgmlType::Q4_1, "q4_1", 32, 20},
    {GgmlType::Q5_0, "q5_0", 32, 22},
    {GgmlType::Q5_1, "q5_1", 32, 24},
    {GgmlType::Q8_0, "q8_0", 32, 34},
    {GgmlType::Q8_1, "q8_1", 32, 36},
    {GgmlType::Q2_K, "q2_K", 256, 84},
    {GgmlType::Q3_K, "q3_K", 256, 110},
    {GgmlType::Q4_K, "q4_K", 256, 144},
    {GgmlType::Q5_K, "q5_K", 256, 176},
    {GgmlType::Q6_K, "q6_K", 256, 210},
    {GgmlType::Q8_K, "q8_K", 256, 292},
    {GgmlType::IQ2_XXS, "iq2_xxs", 256, 66},
    {GgmlType::IQ2_XS, "iq2_xs", 256, 74},
    {GgmlType::IQ3_XXS, "iq3_xxs", 256, 98},
    {GgmlType::IQ1_S, "iq1_s", 256, 50},
    {GgmlType::IQ4_NL, "iq4_nl", 32, 18},
    {GgmlType::IQ3_S, "iq3_s", 256, 110},
    {GgmlType::IQ2_S, "iq2_s", 256, 82},
    {GgmlType::IQ4_XS, "iq4_xs", 256, 136},
    {GgmlType::I8, "i8", 1, 1},
    {GgmlType::I16, "i16", 1, 2},
    {GgmlType::I32, "i32", 1, 4},
    {GgmlType::I64, "i64", 1, 8},
    {GgmlType::F64, "f64", 1, 8},
    {GgmlType::IQ1_M, "iq1_m", 256, 56},
    {GgmlType::BF16, "bf16", 1, 2},
    {GgmlType::TQ1_0, "tq1_0", 256, 54},
    {GgmlType::TQ2_0, "tq2_0", 256, 66},
    {GgmlType::MXFP4, "mxfp4", 32, 17},
}};

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(std::uint32_t id) {
  for (const GgmlTypeTraits& traits : kTypes) {
    if (static_cast<std::uint32_t>(traits.type) == id) return traits;
  }
  return std::nullopt;
}

const GgmlTypeTraits& ggml_type_traits(GgmlType type) {
  for (const GgmlTypeTraits& traits : kTypes) {
    if (traits.type == type) return traits;
  }
  throw Error("ggml type id " + std::to_string(static_cast<std::uint32_t>(type)) +
              " is not a ggml type");
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  const std::string wanted = lowercase(name);
  for (const GgmlTypeTraits& traits : kTypes) {
    if (lowercase(traits.name) == wanted) return traits.type;
  }
  return std::nullopt;
}

std::int64_t ggml_row_size(GgmlType type, std::int64_t n_per_row) {
  const GgmlTypeTraits& traits = ggml_type_traits(type);
  if (n_per_row < 0 || n_per_row % traits.block_size != 0) {
    throw Error("row length " + std::to_string(n_per_row) + " is not a multiple of " +
                std::string(traits.name) + "'s block size " + std::to_string(traits.block_size));
  }
  return n_per_row / traits.block_size * traits.type_size;
}

}  // namespace lucid::quantization
