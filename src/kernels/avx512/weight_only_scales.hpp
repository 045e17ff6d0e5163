// Internal (AVX-512 files only): a weight-only group record's 16 scales (and offsets) as float32
// vectors.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/weight_only_layout.hpp"

namespace lucid::quantization::weight_only {

/// The 16 scales of a group record's meta block (f32, or bf16 / f16 widened exactly).
inline __m512 load_group_scales(const PackedView& v, const std::uint8_t* meta) {
  if (v.scales != ScaleStorage::f32) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(meta));
    if (v.scales == ScaleStorage::f16) return _mm512_cvtph_ps(bits);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  return _mm512_loadu_ps(reinterpret_cast<const float*>(meta));
}

/// fl(s · (z' − zero_shift)) for the 16 stored zero points z' of an affine record.
inline __m512 affine_offsets(const PackedView& v, const std::uint8_t* meta, __m512 scales,
                             int zero_shift) {
  const __m512i z = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128(
                                         reinterpret_cast<const __m128i*>(meta + v.scale_bytes()))),
                                     _mm512_set1_epi32(zero_shift));
  return _mm512_mul_ps(scales, _mm512_cvtepi32_ps(z));
}

/// A group's 16 affine parameters, ŵ = scale · v − offset for the lane v a kernel multiplies.
struct GroupAffine16 {
  __m512 scale, offset;
};

/// Group j's parameters from its meta block, `panel` the start of its panel: super6
/// scale = fl(d · sc), offset = fl(dmin · m) (the scalar group_affine); otherwise the stored
/// scales and, for affine formats, offset = fl(s · (z' − zero_shift)) (zero_shift: 128 for
/// the int8 path's shifted int8 lanes, else 0); offset 0 when symmetric.
inline GroupAffine16 load_group_affine(const PackedView& v, const std::uint8_t* panel,
                                       std::int64_t j, const std::uint8_t* meta,
                                       int zero_shift = 0) {
  if (v.superblock()) {
    const std::uint8_t* super = panel + PackedView::super_offset(j);
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super)));
    const __m512 dmin =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + 32)));
    const __m512i low =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(meta)));
    const __m512i shifts =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    std::int32_t sc_high, m_high;
    std::memcpy(&sc_high, meta + 16, 4);
    std::memcpy(&m_high, meta + 20, 4);
    const __m512i three = _mm512_set1_epi32(3), fifteen = _mm512_set1_epi32(15);
    const __m512i sc = _mm512_or_si512(
        _mm512_and_si512(low, fifteen),
        _mm512_slli_epi32(
            _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(sc_high), shifts), three), 4));
    const __m512i m = _mm512_or_si512(
        _mm512_srli_epi32(low, 4),
        _mm512_slli_epi32(
            _mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32(m_high), shifts), three), 4));
    return {_mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)), _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(m))};
  }
  const __m512 s = load_group_scales(v, meta);
  if (v.symmetric) return {s, _mm512_setzero_ps()};
  return {s, affine_offsets(v, meta, s, zero_shift)};
}

}  // namespace lucid::quantization::weight_only
