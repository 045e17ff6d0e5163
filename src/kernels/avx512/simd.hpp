// Internal, AVX-512 files only: loads of float32 / float16 / bfloat16 and code stores, 16 lanes.
//
// Everything here has internal linkage (anonymous namespace, intrinsics only,
// no std templates): an inline function compiled with -mavx512* must never be
// merged by the linker into code that runs on CPUs without AVX-512.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/kernel_table.hpp"

namespace lucid::quantization::kernels::avx512 {
namespace {

constexpr int lanes = 16;

/// The first `remaining` lanes (all 16 when remaining >= 16).
inline __mmask16 first_lanes(std::int64_t remaining) {
  return remaining >= lanes ? static_cast<__mmask16>(0xffff)
                            : static_cast<__mmask16>((1u << remaining) - 1u);
}

/// 16 elements from x + k widened to float32 (exactly); lanes outside `m` read as 0.
template <FloatType T>
inline __m512 load16(const void* x, std::int64_t k, __mmask16 m) {
  if constexpr (T == FloatType::f32) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(x) + k);
  } else {
    const __m256i bits = _mm256_maskz_loadu_epi16(m, static_cast<const std::int16_t*>(x) + k);
    if constexpr (T == FloatType::f16) return _mm512_cvtph_ps(bits);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
}

/// Stores the low 8 / 16 / 32 bits of each lane of `codes` at element k (lanes in `m`).
template <CodeWidth W>
inline void store16(void* out, std::int64_t k, __m512i codes, __mmask16 m) {
  if constexpr (W == CodeWidth::b8) {
    auto* p = static_cast<std::int8_t*>(out) + k;
    if (m == 0xffff) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(codes));
    } else {
      _mm512_mask_cvtepi32_storeu_epi8(p, m, codes);
    }
  } else if constexpr (W == CodeWidth::b16) {
    auto* p = static_cast<std::int16_t*>(out) + k;
    if (m == 0xffff) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(codes));
    } else {
      _mm512_mask_cvtepi32_storeu_epi16(p, m, codes);
    }
  } else {
    _mm512_mask_storeu_epi32(static_cast<std::int32_t*>(out) + k, m, codes);
  }
}

/// 16 stored codes at element k, widened to int32 (lanes outside `m` read as 0).
template <CodeType C>
inline __m512i load_codes16(const void* codes, std::int64_t k, __mmask16 m) {
  if constexpr (C == CodeType::i8 || C == CodeType::u8) {
    const __m128i bytes = _mm_maskz_loadu_epi8(m, static_cast<const std::int8_t*>(codes) + k);
    return C == CodeType::i8 ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
  } else if constexpr (C == CodeType::i16 || C == CodeType::u16) {
    const __m256i words = _mm256_maskz_loadu_epi16(m, static_cast<const std::int16_t*>(codes) + k);
    return C == CodeType::i16 ? _mm512_cvtepi16_epi32(words) : _mm512_cvtepu16_epi32(words);
  } else {
    return _mm512_maskz_loadu_epi32(m, static_cast<const std::int32_t*>(codes) + k);
  }
}

/// Lanes 0-7 and 8-15 of a float vector as two double vectors (exact).
inline __m512d low_half_pd(__m512 v) {
  return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}
inline __m512d high_half_pd(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/// Joins two 8-lane int32 halves into one 16-lane vector.
inline __m512i join(__m256i low, __m256i high) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

}  // namespace
}  // namespace lucid::quantization::kernels::avx512
