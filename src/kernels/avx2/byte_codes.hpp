// Internal, AVX2 files only: 32 8-bit codes from 32 floats, with the float clamp or with the
// saturating packs (the per-tensor and the per-group quantize kernels share them).
//
// Internal linkage throughout, as in simd.hpp: these inline functions are compiled with -mavx2.
#pragma once

#include "kernels/avx2/simd.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

// 32 codes of x + k with one (inv, lo, hi, zero point): the clamped, rounded steps packed to int16
// with signed saturation (exact: |step| <= 255), the zero point added there (wrapping: a NaN lane's
// 0x80000000 saturates to 0x8000 and keeps exactly the zero point in its low byte), the low
// bytes packed and one dword permute restoring the order.
template <FloatType T>
inline __m256i clamped_bytes32(const void* x, std::int64_t k, __m256 inv, __m256 lo, __m256 hi,
                               __m256i zero16) {
  const auto steps = [&](std::int64_t at) {
    const __m256 y = _mm256_mul_ps(load8<T>(x, at), inv);
    return _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_max_ps(lo, y)));
  };
  const __m256i low_byte = _mm256_set1_epi16(0xff);
  const __m256i w01 = _mm256_packs_epi32(steps(k), steps(k + lanes));
  const __m256i w23 = _mm256_packs_epi32(steps(k + 2 * lanes), steps(k + 3 * lanes));
  const __m256i c01 = _mm256_and_si256(_mm256_add_epi16(w01, zero16), low_byte);
  const __m256i c23 = _mm256_and_si256(_mm256_add_epi16(w23, zero16), low_byte);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  return _mm256_permutevar8x32_epi32(_mm256_packus_epi16(c01, c23), order);
}

// An 8-bit grid for saturating_bytes32: the zero point in int16 lanes, the grid's ends in bytes.
struct ByteGrid {
  __m256i zero16, lo8, hi8;
};

inline ByteGrid byte_grid(std::int32_t zero_point, Grid grid) {
  return {_mm256_set1_epi16(static_cast<std::int16_t>(zero_point)),
          _mm256_set1_epi8(static_cast<char>(grid.quant_min)),
          _mm256_set1_epi8(static_cast<char>(grid.quant_max))};
}

// How saturating_bytes32 makes its bytes, fixed at compile time:
// - is_signed: the grid's signedness (the byte pack saturates to it);
// - clamp: the grid is narrower than a whole byte, so the bytes are clamped to it after the pack;
// - track: the lowest packed step is kept, for callers whose input may hold NaN, Inf or steps
//   beyond int16 (false when every step is known to lie within +-255: GroupValues::own_range);
// - add_zero: a zero point is added (false when every zero point of the call is 0).
struct ByteRule {
  bool is_signed, clamp, track = true, add_zero = true;
};

// 32 codes of x + k without the float clamp: the rounded steps packed to int16 with signed
// saturation, the zero point added with saturation, packed to bytes with the grid's signedness
// (saturating), clamped to the grid in bytes when R.clamp (otherwise the pack's saturation is the
// clamp; a narrower grid lies inside the pack's range, so clamping after it equals clamping
// before), one dword permute restoring the order. Exact for every lane whose packed step is above
// -32768: beyond int16 a step saturates as its code does. A NaN or |x * inv| >= 2^31 (0x80000000
// from the conversion) or a step <= -32768 packs to -32768; with R.track, `lowest` keeps the
// smallest packed step for the caller to redo such codes.
template <FloatType T, ByteRule R>
inline __m256i saturating_bytes32(const void* x, std::int64_t k, __m256 inv, const ByteGrid& g,
                                  __m256i& lowest) {
  const auto steps = [&](std::int64_t at) {
    return _mm256_cvtps_epi32(_mm256_mul_ps(load8<T>(x, at), inv));
  };
  __m256i c01 = _mm256_packs_epi32(steps(k), steps(k + lanes));
  __m256i c23 = _mm256_packs_epi32(steps(k + 2 * lanes), steps(k + 3 * lanes));
  if constexpr (R.track) lowest = _mm256_min_epi16(lowest, _mm256_min_epi16(c01, c23));
  if constexpr (R.add_zero) {
    c01 = _mm256_adds_epi16(c01, g.zero16);
    c23 = _mm256_adds_epi16(c23, g.zero16);
  }
  __m256i bytes = R.is_signed ? _mm256_packs_epi16(c01, c23) : _mm256_packus_epi16(c01, c23);
  if constexpr (R.clamp) {
    bytes = R.is_signed ? _mm256_min_epi8(g.hi8, _mm256_max_epi8(g.lo8, bytes))
                        : _mm256_min_epu8(g.hi8, _mm256_max_epu8(g.lo8, bytes));
  }
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  return _mm256_permutevar8x32_epi32(bytes, order);
}

// Whether any lane of `lowest` (packed steps) is -32768: a code saturating_bytes32 may have
// got wrong.
inline bool saturated(__m256i lowest) {
  return _mm256_movemask_epi8(_mm256_cmpeq_epi16(lowest, _mm256_set1_epi16(-32768))) != 0;
}

}  // namespace
}  // namespace lucid::quantization::kernels::avx2
