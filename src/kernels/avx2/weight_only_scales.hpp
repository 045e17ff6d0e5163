// Internal (AVX2 files only): half of a weight-only group record's 16 scales (and offsets) as
// float32 vectors.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/weight_only_layout.hpp"

namespace lucid::quantization::weight_only {

/// The 8 scales of channels 8h .. 8h + 7 of a record's meta block (f32, or bf16 / f16 widened
/// exactly).
inline __m256 load_half_scales(const PackedView& v, const std::uint8_t* meta, int h) {
  if (v.scales != ScaleStorage::f32) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 16 * h));
    if (v.scales == ScaleStorage::f16) return _mm256_cvtph_ps(bits);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  return _mm256_loadu_ps(reinterpret_cast<const float*>(meta) + 8 * h);
}

/// Half of a group's affine parameters, ŵ = scale · v − offset for the lane v a kernel multiplies.
struct GroupAffine8 {
  __m256 scale, offset;
};

/// Channels 8h .. 8h + 7 of group j's parameters, `panel` the start of its panel: super6
/// scale = fl(d · sc), offset = fl(dmin · m) (the scalar group_affine); otherwise the stored
/// scales and, for affine formats, offset = fl(s · (z' − zero_shift)) (zero_shift: 128 for the
/// int8 path's shifted int8 lanes, else 0); offset 0 when symmetric.
inline GroupAffine8 load_half_affine(const PackedView& v, const std::uint8_t* panel, std::int64_t j,
                                     const std::uint8_t* meta, int h, int zero_shift = 0) {
  if (v.superblock()) {
    const std::uint8_t* super = panel + PackedView::super_offset(j);
    const __m256 d =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 16 * h)));
    const __m256 dmin =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 32 + 16 * h)));
    const __m256i low =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(meta + 8 * h)));
    const __m256i shifts =
        _mm256_add_epi32(_mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), _mm256_set1_epi32(16 * h));
    std::int32_t sc_high, m_high;
    std::memcpy(&sc_high, meta + 16, 4);
    std::memcpy(&m_high, meta + 20, 4);
    const __m256i three = _mm256_set1_epi32(3), fifteen = _mm256_set1_epi32(15);
    const __m256i sc = _mm256_or_si256(
        _mm256_and_si256(low, fifteen),
        _mm256_slli_epi32(
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(sc_high), shifts), three), 4));
    const __m256i m = _mm256_or_si256(
        _mm256_srli_epi32(low, 4),
        _mm256_slli_epi32(
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(m_high), shifts), three), 4));
    return {_mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)), _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(m))};
  }
  const __m256 s = load_half_scales(v, meta, h);
  if (v.symmetric) return {s, _mm256_setzero_ps()};
  std::int64_t z8;
  std::memcpy(&z8, meta + v.scale_bytes() + 8 * h, 8);
  const __m256i z =
      _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(z8)), _mm256_set1_epi32(zero_shift));
  return {s, _mm256_mul_ps(s, _mm256_cvtepi32_ps(z))};
}

}  // namespace lucid::quantization::weight_only
