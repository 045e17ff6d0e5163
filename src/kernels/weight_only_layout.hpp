// Internal: the packed weight-only layout the kernels read (panels of 16 channels, group records)
// and its scalar accessors.
//
// docs/formats.md ("Weight-only group formats") is the prose version. A
// weight W[N, K] is cut into panels of 16 output channels (the last padded
// with channels whose codes and scales are 0). A panel is a sequence of group
// records, one per group j along K. Record j holds
//   codes : len_padded(j) × 16 codes in 64-byte blocks (Int4Block / Int8Block),
//   meta  : 16 scales (f32: 64 bytes, bf16 / f16: 32 bytes), then for affine formats
//           16 uint8 stored zero points; no padding, so a record streams exactly
//           code bits + scale (and zero point) bits per weight (the static_asserts below).
// Every record but the last of a panel has the same size, so record j starts
// at j · record_bytes (records are therefore not 64-byte aligned: the kernels load unaligned).
// len_padded rounds the group length up to 8, the codes beyond K are 0 and the kernels
// multiply them by activations padded with 0.
//
// Super-block records (ScaleStorage::super6: int4 affine, groups of 32, K a multiple of 256):
// the panel is a sequence of super-blocks of 8 groups, each a 64-byte SuperRecord (16 float16 d,
// then 16 float16 dmin) followed by 8 group records of 256 code bytes and a 24-byte SubParams
// meta block (16 six-bit sub-scales sc and 16 six-bit sub-minimums m), 2304 bytes per 16 × 256
// weights. Record j starts at record_offset(j); ŵ = fl(d · sc) · v − fl(dmin · m).
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

#include "lucid/quantization/scalar_type.hpp"

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
struct ScalesF16 {
  std::uint16_t scale[panel_width];
};
struct ZeroPoints {
  std::uint8_t zero_point[panel_width];
};
static_assert(sizeof(Int4Block) == 64, "an int4 block is one cache line");
static_assert(sizeof(Int8Block) == 64, "an int8 block is one cache line");
/// The super-block factors of 16 channels (ScaleStorage::super6).
struct SuperRecord {
  std::uint16_t d[panel_width];     ///< float16 scale of the sub-scales
  std::uint16_t dmin[panel_width];  ///< float16 scale of the sub-minimums
};
/// A super6 group record's meta block: low[c] = (sc & 15) | (m & 15) << 4; bits 2c, 2c + 1 of
/// sc_high / m_high hold sc >> 4 / m >> 4 of channel c.
struct SubParams {
  std::uint8_t low[panel_width];
  std::uint32_t sc_high;
  std::uint32_t m_high;
};
static_assert(sizeof(ScalesF32) == 64 && sizeof(ScalesBf16) == 32 && sizeof(ScalesF16) == 32 &&
              sizeof(ZeroPoints) == 16 && sizeof(SuperRecord) == 64 && sizeof(SubParams) == 24);

/// How a record stores its 16 scales.
enum class ScaleStorage : std::uint8_t { f32, bf16, f16, super6 };

/// Groups per super-block of the super6 layout, and the elements of one.
constexpr std::int64_t super_groups = 8;
constexpr std::int64_t super_group_length = 32;
constexpr std::int64_t super_length = super_groups * super_group_length;
/// Bytes of one super6 group record (codes + SubParams) and of one super-block.
constexpr std::int64_t super_record_bytes = super_group_length * panel_width / 2 + 24;
constexpr std::int64_t super_block_bytes = 64 + super_groups * super_record_bytes;
// 4 + 12 / 32 + 32 / 256 bits per weight, exactly Q4_K's.
static_assert(8.0 * super_block_bytes / (panel_width * super_length) == 4.5);

/// Bytes of one full record: `group` codes of `bits` for 16 channels, their scales and, for
/// affine formats, zero points (PackedView::record_bytes for every record but a ragged last).
constexpr std::int64_t record_bytes_of(int bits, std::int64_t group, ScaleStorage scales,
                                       bool symmetric) {
  return group * panel_width * bits / 8 + (scales == ScaleStorage::f32 ? 64 : 32) +
         (symmetric ? 0 : 16);
}
/// Bits each weight streams in a format: record bits / (16 · group), exactly.
constexpr double bits_per_weight_of(int bits, std::int64_t group, ScaleStorage scales,
                                    bool symmetric) {
  return 8.0 * static_cast<double>(record_bytes_of(bits, group, scales, symmetric)) /
         static_cast<double>(panel_width * group);
}
// The dense layouts (docs/formats.md, "Weight-only group formats"): code bits + scale bits /
// group (+ 8 / group for an affine zero point), no padding.
static_assert(bits_per_weight_of(4, 32, ScaleStorage::f16, true) == 4.5);
static_assert(bits_per_weight_of(4, 32, ScaleStorage::bf16, true) == 4.5);
static_assert(bits_per_weight_of(4, 32, ScaleStorage::f32, true) == 5.0);
static_assert(bits_per_weight_of(4, 32, ScaleStorage::f16, false) == 4.75);
static_assert(bits_per_weight_of(4, 64, ScaleStorage::f16, true) == 4.25);
static_assert(bits_per_weight_of(4, 128, ScaleStorage::bf16, true) == 4.125);
static_assert(bits_per_weight_of(4, 128, ScaleStorage::f32, true) == 4.25);
static_assert(bits_per_weight_of(4, 256, ScaleStorage::f16, true) == 4.0625);
static_assert(bits_per_weight_of(8, 32, ScaleStorage::f16, true) == 8.5);
static_assert(bits_per_weight_of(8, 32, ScaleStorage::f32, true) == 9.0);
static_assert(bits_per_weight_of(8, 128, ScaleStorage::bf16, false) == 8.1875);

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
  ScaleStorage scales = ScaleStorage::f32;
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
  std::int64_t scale_bytes() const { return scales == ScaleStorage::f32 ? 64 : 32; }
  std::int64_t meta_bytes() const {
    return scales == ScaleStorage::super6 ? 24 : scale_bytes() + (symmetric ? 0 : 16);
  }
  bool superblock() const { return scales == ScaleStorage::super6; }
  /// Bytes from a panel's start to record j.
  std::int64_t record_offset(std::int64_t j) const {
    if (!superblock()) return j * record_bytes;
    return j / super_groups * super_block_bytes + 64 + j % super_groups * record_bytes;
  }
  const std::uint8_t* record(std::int64_t panel, std::int64_t j) const {
    return data + panel * panel_bytes + record_offset(j);
  }
  /// Bytes from a panel's start to the SuperRecord of group j's super-block (super6 only).
  static std::int64_t super_offset(std::int64_t j) { return j / super_groups * super_block_bytes; }
  const std::uint8_t* super_record(std::int64_t panel, std::int64_t j) const {
    return data + panel * panel_bytes + super_offset(j);
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
  if (v.scales != ScaleStorage::f32) {
    std::uint16_t bits;
    std::memcpy(&bits, meta + 2 * c, 2);
    return v.scales == ScaleStorage::bf16 ? bfloat16_to_float(bits) : float16_to_float(bits);
  }
  float value;
  std::memcpy(&value, meta + 4 * c, 4);
  return value;
}

/// Sub-scale sc (0..63) and sub-minimum m of channel c in a super6 meta block.
inline std::int32_t super_sub_scale(const std::uint8_t* meta, std::int64_t c) {
  std::uint32_t high;
  std::memcpy(&high, meta + 16, 4);
  return static_cast<std::int32_t>((meta[c] & 0xfu) | ((high >> (2 * c)) & 3u) << 4);
}
inline std::int32_t super_sub_min(const std::uint8_t* meta, std::int64_t c) {
  std::uint32_t high;
  std::memcpy(&high, meta + 20, 4);
  return static_cast<std::int32_t>((meta[c] >> 4) | ((high >> (2 * c)) & 3u) << 4);
}

/// A group's float32 affine parameters for channel c: ŵ = scale · v − offset.
struct GroupAffine {
  float scale, offset;
};

/// Stored zero point z' of channel c (0 for symmetric formats).
inline std::int32_t meta_zero_point(const PackedView& v, const std::uint8_t* meta, std::int64_t c) {
  return v.symmetric ? 0 : meta[v.scale_bytes() + c];
}

/// The zero point matching int8_lane: int8_lane − int8_zero_point = q − z.
inline std::int32_t int8_zero_point(const PackedView& v, const std::uint8_t* meta, std::int64_t c) {
  const std::int32_t z = meta_zero_point(v, meta, c);
  return (!v.symmetric && v.bits == 8) ? z - 128 : z;
}

/// The int8-activation path's parameters of group j, channel c (meta = its meta block):
/// super6: scale fl(d · sc), offset fl(dmin · m); otherwise scale s and offset fl(s · zw) with
/// zw = int8_zero_point (0 when symmetric), so that ŵ = scale · int8_lane − offset.
inline GroupAffine group_affine(const PackedView& v, std::int64_t panel, std::int64_t j,
                                const std::uint8_t* meta, std::int64_t c) {
  if (v.superblock()) {
    const std::uint8_t* super = v.super_record(panel, j);
    std::uint16_t d, dmin;
    std::memcpy(&d, super + 2 * c, 2);
    std::memcpy(&dmin, super + 32 + 2 * c, 2);
    return {float16_to_float(d) * static_cast<float>(super_sub_scale(meta, c)),
            float16_to_float(dmin) * static_cast<float>(super_sub_min(meta, c))};
  }
  const float s = meta_scale(v, meta, c);
  return {s, s * static_cast<float>(int8_zero_point(v, meta, c))};
}

}  // namespace lucid::quantization::weight_only
