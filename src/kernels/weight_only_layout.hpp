// Internal: the packed weight-only layout the kernels read (panels of 16 channels, group records)
// and its scalar accessors.
//
// docs/formats.md ("Weight-only group formats") is the prose version. A
// weight W[N, K] is cut into panels of 16 output channels (the last padded
// with channels whose codes and scales are 0). A panel is a sequence of group
// records, one per group j along K. Record j holds
//   codes : len_padded(j) × 16 codes in 64-byte blocks (Int4Block / Int8Block),
//   meta  : 16 scales (f32: 64 bytes, bf16: 32 bytes), then for affine formats
//           16 uint8 stored zero points; padded to a multiple of 64 bytes.
// Every record but the last of a panel has the same size, so record j starts
// at j · record_bytes. len_padded rounds the group length up to 8, the codes
// beyond K are 0 and the kernels multiply them by activations padded with 0.
//
// Stored code values ("lanes"): symmetric formats keep the signed code
// (int4 as its two's-complement nibble); affine formats keep the unsigned
// u = q − code_offset and the stored zero point z' = z − code_offset, where
// code_offset is the grid's minimum for signed dtypes, 0 otherwise. Either way
// the value of a lane v and the stored zero point z' give ŵ = s · (v − z').
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lucid::quantization::weight_only {

/// Output channels per panel (one AVX-512 register of float32 accumulators).
constexpr std::int64_t panel_width = 16;
/// Codes along K are padded to a multiple of this (one int4 block).
constexpr std::int64_t k_step = 8;

/// 16 channels × 8 consecutive k of int4: dword c holds channel c's codes, code
/// k0 + t in bits [4t, 4t + 4) (low bits first).
struct Int4Block {
  std::uint32_t lanes[panel_width];
};
/// 4 consecutive k × 16 channels of int8: byte [t][c] is channel c's code at k0 + t.
struct Int8Block {
  std::uint8_t codes[4][panel_width];
};
struct ScalesF32 {
  float scale[panel_width];
};
struct ScalesBf16 {
  std::uint16_t scale[panel_width];
};
struct ZeroPoints {
  std::uint8_t zero_point[panel_width];
};
static_assert(sizeof(Int4Block) == 64, "an int4 block is one cache line");
static_assert(sizeof(Int8Block) == 64, "an int8 block is one cache line");
static_assert(sizeof(ScalesF32) == 64 && sizeof(ScalesBf16) == 32 && sizeof(ZeroPoints) == 16);

/// What the tier kernels read: plain values only (no std types across ISA files).
struct PackedView {
  const std::uint8_t* data = nullptr;  ///< 64-byte aligned
  std::int64_t n = 0;                  ///< output channels
  std::int64_t k = 0;                  ///< reduction depth
  std::int64_t k_padded = 0;           ///< k rounded up to k_step
  std::int64_t group_length = 0;       ///< elements per group (k for per-channel)
  std::int64_t groups = 0;             ///< groups per row
  std::int64_t panels = 0;             ///< ceil(n / 16)
  std::int64_t record_bytes = 0;       ///< bytes of every record but the last
  std::int64_t panel_bytes = 0;        ///< bytes of one panel
  int bits = 4;
  bool symmetric = true;
  bool bf16_scales = false;
  bool huge_pages = false;  ///< data is a transparent-huge-page mapping (ByteBuffer ≥ 4 MiB)
  /// Per channel (panels · 16 floats, padding channels 0), for the int8-activation path:
  /// C[n] = Σ_j s[n, j] · W[n, j], W[n, j] = Σ_{k in j} int8_lane, accumulated as
  /// C = fma(s, float(W), C) in group order.
  const float* int8_weight_sums = nullptr;

  /// Codes of group j stored (multiple of k_step).
  std::int64_t padded_length(std::int64_t j) const {
    if (j + 1 < groups) return group_length;
    const std::int64_t last = k - j * group_length;
    return (last + k_step - 1) / k_step * k_step;
  }
  /// Bytes of the codes of a group of `padded` stored codes.
  std::int64_t code_bytes(std::int64_t padded) const { return padded * panel_width * bits / 8; }
  std::int64_t scale_bytes() const { return bf16_scales ? 32 : 64; }
  std::int64_t meta_bytes() const {
    const std::int64_t raw = scale_bytes() + (symmetric ? 0 : 16);
    return (raw + 63) / 64 * 64;
  }
  const std::uint8_t* record(std::int64_t panel, std::int64_t j) const {
    return data + panel * panel_bytes + j * record_bytes;
  }
};

/// Stored lane value of channel c (0..15) at offset t inside its group's codes.
inline std::int32_t lane_value(const PackedView& v, const std::uint8_t* codes, std::int64_t c,
                               std::int64_t t) {
  if (v.bits == 4) {
    std::uint32_t word;
    std::memcpy(&word, codes + ((t / 8) * panel_width + c) * 4, 4);
    const auto nibble = static_cast<std::int32_t>((word >> (4 * (t % 8))) & 0xfu);
    return v.symmetric ? (nibble ^ 8) - 8 : nibble;
  }
  const std::uint8_t byte = codes[(t / 4) * 64 + (t % 4) * panel_width + c];
  return v.symmetric ? static_cast<std::int32_t>(static_cast<std::int8_t>(byte)) : byte;
}

/// The signed byte the int8-activation path multiplies for a lane: the lane value itself, except
/// affine int8 (unsigned 0..255), which is shifted by −128 onto the int8 range.
inline std::int32_t int8_lane(const PackedView& v, const std::uint8_t* codes, std::int64_t c,
                              std::int64_t t) {
  const std::int32_t lane = lane_value(v, codes, c, t);
  return (!v.symmetric && v.bits == 8) ? lane - 128 : lane;
}

/// Scale of channel c in the record's meta block.
inline float meta_scale(const PackedView& v, const std::uint8_t* meta, std::int64_t c) {
  if (v.bf16_scales) {
    std::uint16_t bits;
    std::memcpy(&bits, meta + 2 * c, 2);
    std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &wide, 4);
    return value;
  }
  float value;
  std::memcpy(&value, meta + 4 * c, 4);
  return value;
}

/// Stored zero point z' of channel c (0 for symmetric formats).
inline std::int32_t meta_zero_point(const PackedView& v, const std::uint8_t* meta, std::int64_t c) {
  return v.symmetric ? 0 : meta[v.scale_bytes() + c];
}

/// The zero point matching int8_lane: int8_lane − int8_zero_point = q − z.
inline std::int32_t int8_zero_point(const PackedView& v, const std::uint8_t* meta, std::int64_t c) {
  const std::int32_t z = meta_zero_point(v, meta, c);
  return (!v.symmetric && v.bits == 8) ? z - 128 : z;
}

}  // namespace lucid::quantization::weight_only
