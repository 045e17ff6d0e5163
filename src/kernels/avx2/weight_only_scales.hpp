// Internal (AVX2 files only): half of a weight-only group record's 16 scales as one float32 vector.
#pragma once

#include <immintrin.h>

#include <cstdint>

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

}  // namespace lucid::quantization::weight_only
