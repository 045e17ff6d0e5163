// Internal (AVX-512 VNNI files only): the float32 steps the int8-activation weight-only kernels
// share.
//
// Both kernels (weight_only_u8_tiles.cpp: decoded tiles for many rows; weight_only_u8_regs.cpp:
// in-register decode for a few rows) end every group and every product with exactly these
// operations, in the order of weight_only_u8_16c__reference
// (src/kernels/reference/weight_only.cpp).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx512/weight_only_scales.hpp"
#include "kernels/weight_only.hpp"

namespace lucid::quantization::weight_only::int8_stage {

/// fl(s · zw) for the 16 channels of an affine record (zw = int8_zero_point); 0 when symmetric.
template <int Bits, bool Symmetric>
inline __m512 scaled_zero_points(const PackedView& v, const std::uint8_t* meta, __m512 scales) {
  if constexpr (Symmetric) {
    (void)v;
    (void)meta;
    (void)scales;
    return _mm512_setzero_ps();
  } else {
    return affine_offsets(v, meta, scales, Bits == 8 ? 128 : 0);
  }
}

/// The int8 operand of an int8 block (4 k × 16 channels), transposed to 16 channels × 4 k
/// (dword 4L + t <- dword 4t + L, then bytes 4i + t <- 4t + i per lane); affine lanes are
/// moved onto the int8 range (u − 128).
template <bool Symmetric>
inline __m512i decode_int8(__m512i block) {
  const __m512i dword_order =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i byte_order =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  __m512i t = _mm512_shuffle_epi8(_mm512_permutexvar_epi32(dword_order, block), byte_order);
  if constexpr (!Symmetric) t = _mm512_xor_si512(t, _mm512_set1_epi8(static_cast<char>(0x80)));
  return t;
}

/// One group's flush: acc = fma(s, float(dot), acc); affine: acc = fnmadd(fl(s · zw), X', acc).
template <bool Symmetric>
inline __m512 flush(__m512 acc, __m512 scales, __m512i dot, __m512 scaled_zw, float group_sum) {
  acc = _mm512_fmadd_ps(scales, _mm512_cvtepi32_ps(dot), acc);
  if constexpr (!Symmetric) acc = _mm512_fnmadd_ps(scaled_zw, _mm512_set1_ps(group_sum), acc);
  (void)scaled_zw;
  (void)group_sum;
  return acc;
}

/// The end of the product for row `row` and the 16 channels from `col`:
/// acc = fnmadd(z_x, C, acc); y = fma(s_x, acc, bias), stored for the channels below N.
inline void finish(const Int8Args& a, std::int64_t row, std::int64_t col, __m512 acc) {
  const std::int64_t left = a.w.n - col;
  const __mmask16 mask =
      left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
  const __m512 sums = _mm512_loadu_ps(a.w.int8_weight_sums + col);
  const __m512 bias =
      a.bias != nullptr ? _mm512_maskz_loadu_ps(mask, a.bias + col) : _mm512_setzero_ps();
  acc = _mm512_fnmadd_ps(_mm512_set1_ps(a.x_zero[row]), sums, acc);
  acc = _mm512_fmadd_ps(_mm512_set1_ps(a.x_scale[row]), acc, bias);
  _mm512_mask_storeu_ps(a.y + row * a.y_stride + col, mask, acc);
}

/// The 16 stored zero points z' of an affine record as int32 (0 for symmetric formats).
template <bool Symmetric>
inline __m512i stored_zero_points(const PackedView& v, const std::uint8_t* meta) {
  if constexpr (Symmetric) {
    (void)v;
    (void)meta;
    return _mm512_setzero_si512();
  } else {
    return _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + v.scale_bytes())));
  }
}

/// One group's flush with block-wise activations (Int8Args::x_block_scales): dot holds
/// Σ xq · u − offset · Σ xq for symmetric grids (= Σ xq · q); affine grids take the stored zero
/// points off here, D = dot − z' · Σ xq. Then acc = fma(fl(s · s_x), float(D), acc).
template <bool Symmetric>
inline __m512 flush_block(__m512 acc, __m512 scales, __m512 x_scale, __m512i dot,
                          __m512i zero_points, std::int32_t x_sum) {
  if constexpr (!Symmetric) {
    dot = _mm512_sub_epi32(dot, _mm512_mullo_epi32(zero_points, _mm512_set1_epi32(x_sum)));
  }
  (void)zero_points;
  (void)x_sum;
  return _mm512_fmadd_ps(_mm512_mul_ps(scales, x_scale), _mm512_cvtepi32_ps(dot), acc);
}

/// One super6 group's flush with block-wise activations: dot = P = Σ xq · v, then
/// acc = fma(fl(s · s_x), float(P), acc) and acc = fnmadd(fl(o · s_x), float(Σ xq), acc).
inline __m512 flush_super_block(__m512 acc, GroupAffine16 g, __m512 x_scale, __m512i dot,
                                std::int32_t x_sum) {
  acc = _mm512_fmadd_ps(_mm512_mul_ps(g.scale, x_scale), _mm512_cvtepi32_ps(dot), acc);
  return _mm512_fnmadd_ps(_mm512_mul_ps(g.offset, x_scale),
                          _mm512_set1_ps(static_cast<float>(x_sum)), acc);
}

/// The end of a block-wise product for row `row` and the 16 channels from `col`:
/// y = acc + bias (bias 0 when null), stored for the channels below N.
inline void finish_blocks(const Int8Args& a, std::int64_t row, std::int64_t col, __m512 acc) {
  const std::int64_t left = a.w.n - col;
  const __mmask16 mask =
      left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
  const __m512 bias =
      a.bias != nullptr ? _mm512_maskz_loadu_ps(mask, a.bias + col) : _mm512_setzero_ps();
  _mm512_mask_storeu_ps(a.y + row * a.y_stride + col, mask, _mm512_add_ps(acc, bias));
}

}  // namespace lucid::quantization::weight_only::int8_stage
