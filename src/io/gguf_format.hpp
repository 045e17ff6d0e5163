// Internal: the GGUF rules the reader and the writer share (tensor records, alignment).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "lucid/quantization/gguf.hpp"

namespace lucid::quantization::detail {

/// The largest "general.alignment" accepted (ggml's limit, 1 MiB).
inline constexpr std::uint64_t kGgufMaxAlignment = std::uint64_t{1} << 20;

/// Checks one tensor record (name 1-63 bytes, 1-4 non-negative dimensions whose product and
/// byte size fit in int64, a known ggml type id, a row length that is a multiple of its
/// block) and returns its type and byte size. Throws Error `tensor "NAME": ...` (callers
/// prefix the file).
std::pair<GgmlType, std::uint64_t> check_gguf_tensor(std::string_view name,
                                                     std::span<const std::int64_t> ne,
                                                     std::uint32_t type_id);

/// The alignment `metadata` declares ("general.alignment": a u32 power of two up to 1 MiB),
/// or 32 when absent. Throws Error `"general.alignment": ...` otherwise.
std::uint64_t gguf_alignment(const GgufMetadata& metadata);

/// `offset` rounded up to a multiple of `alignment` (a power of two); saturates near 2^64.
std::uint64_t gguf_align(std::uint64_t offset, std::uint64_t alignment);

}  // namespace lucid::quantization::detail
