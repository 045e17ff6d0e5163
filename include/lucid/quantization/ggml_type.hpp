// The ggml tensor types (as GGUF stores them): ids, names, block sizes and bytes per block.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lucid::quantization {

/// A ggml tensor type, with ggml's numeric id (the value GGUF stores). Ids that ggml has
/// removed (4, 5, 31-33, 36-38) are not members.
enum class GgmlType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

/// What a ggml type is: its name as ggml prints it ("q4_K"), how many values one block
/// holds and how many bytes that block takes.
struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;
  std::int64_t block_size;
  std::int64_t type_size;
};

/// The traits of a type id as read from a file, or nullopt for an id ggml does not define
/// (or has removed).
std::optional<GgmlTypeTraits> ggml_type_traits(std::uint32_t id);
/// The traits of a member of GgmlType.
const GgmlTypeTraits& ggml_type_traits(GgmlType type);
/// Parses a type name, case-insensitively ("Q4_K", "q4_k", "bf16"). nullopt when unknown.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);
/// Bytes of one row of n_per_row values. Throws Error (naming the type, the length and the
/// block size) when n_per_row is negative or not a multiple of the block size.
std::int64_t ggml_row_size(GgmlType type, std::int64_t n_per_row);

}  // namespace lucid::quantization
