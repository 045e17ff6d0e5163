// Internal, AVX2 files only: 8-lane loads of float32 / float16 / bfloat16 and code stores.
//
// Everything here has internal linkage (anonymous namespace, intrinsics only,
// no std templates): an inline function compiled with -mavx2 must never be
// merged by the linker into code that runs on CPUs without AVX2.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/kernel_table.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

constexpr int lanes = 8;

/// 8 elements from x + k widened to float32 (exactly).
template <FloatType T>
inline __m256 load8(const void* x, std::int64_t k) {
  if constexpr (T == FloatType::f32) {
    return _mm256_loadu_ps(static_cast<const float*>(x) + k);
  } else {
    const __m128i bits =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::int16_t*>(x) + k));
    if constexpr (T == FloatType::f16) return _mm256_cvtph_ps(bits);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
}

/// The low byte of each of 8 int32 lanes, in order, as the low 8 bytes of the result.
inline __m128i low_bytes(__m256i v) {
  const __m256i pick =
      _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i picked = _mm256_shuffle_epi8(v, pick);
  return _mm_unpacklo_epi32(_mm256_castsi256_si128(picked), _mm256_extracti128_si256(picked, 1));
}

/// The low 16 bits of each of 8 int32 lanes, in order.
inline __m128i low_words(__m256i v) {
  const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0,
                                        1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i picked = _mm256_shuffle_epi8(v, pick);
  return _mm_unpacklo_epi64(_mm256_castsi256_si128(picked), _mm256_extracti128_si256(picked, 1));
}

/// Stores the low 8 / 16 / 32 bits of each lane of `codes` at element k.
template <CodeWidth W>
inline void store8(void* out, std::int64_t k, __m256i codes) {
  if constexpr (W == CodeWidth::b8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(static_cast<std::int8_t*>(out) + k),
                     low_bytes(codes));
  } else if constexpr (W == CodeWidth::b16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<std::int16_t*>(out) + k),
                     low_words(codes));
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(static_cast<std::int32_t*>(out) + k), codes);
  }
}

/// 32 codes (bytes, in order) as 16 bytes of 4-bit fields, code 2i in the low half of byte i:
/// each 16-bit lane's nibbles as c0 + 16 * c1 (one vpmaddubsw, at most 255), then packed to bytes.
inline __m128i fold_nibbles(__m256i codes) {
  const __m256i c = _mm256_and_si256(codes, _mm256_set1_epi8(0x0f));
  const __m256i folded = _mm256_maddubs_epi16(c, _mm256_set1_epi16(0x1001));
  return _mm_packus_epi16(_mm256_castsi256_si128(folded), _mm256_extracti128_si256(folded, 1));
}

/// Stores 32 bytes at p, non-temporally when Stream (p then 32-byte aligned).
template <bool Stream>
inline void store_bytes32(void* p, __m256i v) {
  if constexpr (Stream) {
    _mm256_stream_si256(static_cast<__m256i*>(p), v);
  } else {
    _mm256_storeu_si256(static_cast<__m256i*>(p), v);
  }
}

/// Stores the low bytes of the 32 int32 lanes of c0..c3, in order, at out: lanes masked to
/// 0..255, unsigned saturating packs, and one dword permute to undo the in-lane interleaving.
inline void store32_low_bytes(void* out, __m256i c0, __m256i c1, __m256i c2, __m256i c3) {
  const __m256i low_byte = _mm256_set1_epi32(0xff);
  // Per 128-bit lane: the low halves of c0..c3, then their high halves.
  const __m256i words01 =
      _mm256_packus_epi32(_mm256_and_si256(c0, low_byte), _mm256_and_si256(c1, low_byte));
  const __m256i words23 =
      _mm256_packus_epi32(_mm256_and_si256(c2, low_byte), _mm256_and_si256(c3, low_byte));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(static_cast<__m256i*>(out),
                      _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words01, words23), order));
}

/// 8 stored codes at element k, widened to int32.
template <CodeType C>
inline __m256i load_codes8(const void* codes, std::int64_t k) {
  if constexpr (C == CodeType::i8 || C == CodeType::u8) {
    const __m128i bytes = _mm_loadl_epi64(
        reinterpret_cast<const __m128i*>(static_cast<const std::int8_t*>(codes) + k));
    return C == CodeType::i8 ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
  } else if constexpr (C == CodeType::i16 || C == CodeType::u16) {
    const __m128i words = _mm_loadu_si128(
        reinterpret_cast<const __m128i*>(static_cast<const std::int16_t*>(codes) + k));
    return C == CodeType::i16 ? _mm256_cvtepi16_epi32(words) : _mm256_cvtepu16_epi32(words);
  } else {
    return _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(static_cast<const std::int32_t*>(codes) + k));
  }
}

/// Affine parameters of 8 lanes; lo / hi are the grid bounds minus the zero point.
struct Lanes {
  __m256 inv;
  __m256 scale;
  __m256i zero;
  __m256 lo;
  __m256 hi;
};

inline Lanes make_lanes(__m256 inv, __m256 scale, __m256i zero, Grid grid) {
  return {inv, scale, zero,
          _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_set1_epi32(grid.quant_min), zero)),
          _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_set1_epi32(grid.quant_max), zero))};
}

/// One (scale, zero point) for every element.
struct Uniform {
  static constexpr bool uniform = true;
  Lanes lanes;
  Uniform(Affine p, Grid grid)
      : lanes(make_lanes(_mm256_set1_ps(p.inv_scale), _mm256_set1_ps(p.scale),
                         _mm256_set1_epi32(p.zero_point), grid)) {}
  Lanes at(std::int64_t) const { return lanes; }
};

/// Element k uses inv_scale[k], scale[k] (may be null when unused), zero_point[k].
struct PerElement {
  static constexpr bool uniform = false;
  const float* inv_scale;
  const float* scale;
  const std::int32_t* zero_point;
  Grid grid;
  Lanes at(std::int64_t k) const {
    const __m256 s = scale ? _mm256_loadu_ps(scale + k) : _mm256_setzero_ps();
    return make_lanes(_mm256_loadu_ps(inv_scale + k), s,
                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point + k)), grid);
  }
};

}  // namespace
}  // namespace lucid::quantization::kernels::avx2
