// Internal helpers shared by the safetensors reader, writer and fuzz target.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/safetensors.hpp"

namespace lucid::quantization::detail {

/// Bytes per element of a safetensors dtype (1 for BOOL).
std::size_t safetensors_dtype_size(ScalarType type);
/// "F64, F32, F16, BF16, I64, ..." for messages.
std::string safetensors_dtype_list();
/// Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or std::string_view::npos.
std::size_t find_invalid_utf8(std::string_view text);
/// `text` as a JSON string literal for messages (escaped; long text shortened with "...").
std::string quoted(std::string_view text);
/// "[2, 3]".
std::string format_shape(const Shape& shape);

/// The bytes that precede the data: the 8-byte little-endian length and the compact JSON
/// header ("__metadata__" first when non-empty, then `entries` in order) padded with spaces
/// to a multiple of 8 bytes. Does not validate; callers check names and offsets first.
std::string encode_safetensors_header(const std::vector<SafetensorsEntry>& entries,
                                      const std::map<std::string, std::string>& metadata);

}  // namespace lucid::quantization::detail
