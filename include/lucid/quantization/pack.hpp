// Storage of codes: packing 4-bit and 2-bit codes into bytes and back, and
// reading / writing 8-, 16- and 32-bit storage.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lucid/quantization/qdtype.hpp"

namespace lucid::quantization {

/// Writes `codes` into qdtype's storage: 4-bit codes two per byte and 2-bit
/// codes four per byte, element 0 in the lowest bits, signed codes in two's
/// complement; wider codes little-endian. The last byte's unused bits are 0.
/// Throws Error naming the first code outside [quant_min, quant_max].
std::vector<std::uint8_t> pack_codes(std::span<const std::int32_t> codes, const QDtype& qdtype);

/// The inverse of pack_codes: `count` codes read from `storage`, sign-extended
/// for signed dtypes. Throws Error when storage is shorter than
/// qdtype.storage_bytes(count).
std::vector<std::int32_t> unpack_codes(std::span<const std::uint8_t> storage, std::int64_t count,
                                       const QDtype& qdtype);

}  // namespace lucid::quantization
