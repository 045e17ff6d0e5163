// Internal (AVX-512 files only): a weight-only group record's 16 scales as one float32 vector.
#pragma once

#include <immintrin.h>

#include <cstdint>

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

}  // namespace lucid::quantization::weight_only
