// AVX-512 quantize / dequantize / fake_quantize kernels (F + BW + VL), 16 lanes at a time.
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/params.hpp"
#include "kernels/stream_prefetch.hpp"
#include "kernels/streamed_body.hpp"

namespace lucid::quantization::kernels::avx512 {
namespace {

// Codes of a grid of at most 16 bits. The clamp happens in float before the
// conversion (round(clamp(y)) == clamp(round(y)) for integer bounds), so no
// lane overflows int32. NaN passes both min and max (they return the second
// operand for NaN) and converts to 0x80000000; adding the zero point leaves
// exactly the zero point in the low 16 bits that store16 keeps.
inline __m512i narrow_codes(__m512 x, const Lanes& p) {
  const __m512 y = _mm512_mul_ps(x, p.inv);
  const __m512 clamped = _mm512_min_ps(p.hi, _mm512_max_ps(p.lo, y));
  return _mm512_add_epi32(_mm512_cvtps_epi32(clamped), p.zero);
}

// Codes of a 32-bit grid: the rounded product plus the zero point, clamped in
// double (exact), as the reference does; NaN lanes get the zero point.
inline __m512i wide_codes(__m512 x, const Lanes& p, Grid grid) {
  const __m512 y = _mm512_mul_ps(x, p.inv);
  const __mmask16 nan = _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
  const __m512 rounded = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512d qmin = _mm512_set1_pd(grid.quant_min);
  const __m512d qmax = _mm512_set1_pd(grid.quant_max);
  const __m512d z0 = _mm512_cvtepi32_pd(_mm512_castsi512_si256(p.zero));
  const __m512d z1 = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(p.zero, 1));
  const __m512d c0 = _mm512_add_pd(low_half_pd(rounded), z0);
  const __m512d c1 = _mm512_add_pd(high_half_pd(rounded), z1);
  const __m256i i0 = _mm512_cvtpd_epi32(_mm512_min_pd(qmax, _mm512_max_pd(qmin, c0)));
  const __m256i i1 = _mm512_cvtpd_epi32(_mm512_min_pd(qmax, _mm512_max_pd(qmin, c1)));
  return _mm512_mask_mov_epi32(join(i0, i1), nan, p.zero);
}

template <FloatType T, CodeWidth W, class Params>
void quantize_lanes(const void* x, std::int64_t n, const Params& params, Grid grid, void* codes) {
  auto block = [&](std::int64_t k, __mmask16 m) {
    const __m512 v = load16<T>(x, k, m);
    const Lanes p = params.at(k, m);
    if constexpr (W == CodeWidth::b32) {
      store16<W>(codes, k, wide_codes(v, p, grid), m);
    } else {
      store16<W>(codes, k, narrow_codes(v, p), m);
    }
  };
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes)
    block(k, 0xffff);
  if (k < n) block(k, first_lanes(n - k));
}

// 64 codes of an 8-bit grid (one zero point), four vectors at a time: the clamped,
// rounded steps (NaN: 0x80000000) are packed to int16 with signed saturation
// (in-range steps pass, NaN becomes -32768), the zero point is added there
// (wrapping: a NaN lane keeps exactly the zero point in its low byte, as
// narrow_codes does), the low bytes are packed and one permute restores the
// order the per-128-bit-lane packs interleave. Two packs and a permute replace
// four int32 adds and four two-uop vpmovdb per 64 codes. Stream: stored non-temporally (codes
// 64-byte aligned).
template <FloatType T, bool Prefetch, bool Stream = false>
std::int64_t quantize_int8_blocks(const void* x, std::int64_t n, const Lanes& p, Affine affine,
                                  std::uint8_t* codes) {
  const __m512i zero16 = _mm512_set1_epi16(static_cast<short>(affine.zero_point));
  const __m512i low_byte = _mm512_set1_epi16(0x00ff);
  // Output dword c comes from packed dword (c % 4) * 4 + c / 4.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  std::int64_t k = 0;
  for (; k + 4 * lanes <= n; k += 4 * lanes) {
    __m512i steps[4];
    for (int a = 0; a < 4; ++a) {
      elementwise_prefetch<Prefetch>(input_at<T>(x, k + a * lanes));
      const __m512 y = _mm512_mul_ps(load16<T>(x, k + a * lanes, 0xffff), p.inv);
      steps[a] = _mm512_cvtps_epi32(_mm512_min_ps(p.hi, _mm512_max_ps(p.lo, y)));
    }
    const __m512i w0 = _mm512_add_epi16(_mm512_packs_epi32(steps[0], steps[1]), zero16);
    const __m512i w1 = _mm512_add_epi16(_mm512_packs_epi32(steps[2], steps[3]), zero16);
    const __m512i bytes =
        _mm512_packus_epi16(_mm512_and_si512(w0, low_byte), _mm512_and_si512(w1, low_byte));
    const __m512i ordered = _mm512_permutexvar_epi32(order, bytes);
    if constexpr (Stream) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(codes + k), ordered);
    } else {
      _mm512_storeu_si512(codes + k, ordered);
    }
  }
  return k;
}

template <FloatType T, CodeWidth W>
void quantize__avx512(const void* x, std::int64_t n, Affine p, Grid grid, void* codes) {
  const Uniform params(p, grid);
  std::int64_t k = 0;
  if constexpr (W == CodeWidth::b8) {
    auto* bytes = static_cast<std::uint8_t*>(codes);
    k = elementwise_prefetch_pays(n * input_element_bytes<T>)
            ? quantize_int8_blocks<T, true>(x, n, params.lanes, p, bytes)
            : quantize_int8_blocks<T, false>(x, n, params.lanes, p, bytes);
  }
  quantize_lanes<T, W>(input_at<T>(x, k), n - k, params, grid,
                       static_cast<std::uint8_t*>(codes) + k);
}

// quantize__avx512 at width b8 with non-temporal stores of the codes (outputs larger than the
// caches: no read for ownership; docs/kernels.md, "Elementwise kernels").
template <FloatType T>
void quantize_streaming__avx512(const void* x, std::int64_t n, Affine p, Grid grid, void* codes) {
  auto* bytes = static_cast<std::uint8_t*>(codes);
  const Lanes uniform = Uniform(p, grid).lanes;
  with_streamed_body<64>(
      bytes, n,
      [&](std::int64_t b, std::int64_t e) {
        quantize__avx512<T, CodeWidth::b8>(input_at<T>(x, b), e - b, p, grid, bytes + b);
      },
      [&](std::int64_t b, std::int64_t e) {  // whole 64-byte vectors: every code done here
        quantize_int8_blocks<T, true, true>(input_at<T>(x, b), e - b, uniform, p, bytes + b);
      });
}

template <FloatType T, CodeWidth W>
void quantize_vec__avx512(const void* x, std::int64_t n, const float* inv_scale,
                          const std::int32_t* zero_point, Grid grid, void* codes) {
  quantize_lanes<T, W>(x, n, PerElement{inv_scale, nullptr, zero_point, grid}, grid, codes);
}

// fake_quantize for grids of at most 16 bits, where s * (q - z) rounds the
// same in float32 as in double (|q - z| < 2^24 makes the double product exact).
// Stream: non-temporal stores, for an out that is 64-byte aligned and n a multiple of 16.
template <FloatType T, bool Stream = false, class Params>
void fake_quantize_lanes(const void* x, std::int64_t n, const Params& params, float* out,
                         std::uint8_t* mask) {
  const __m128i ones = _mm_set1_epi8(1);
  auto block = [&](std::int64_t k, __mmask16 m) {
    const Lanes p = params.at(k, m);
    const __m512 y = _mm512_mul_ps(load16<T>(x, k, m), p.inv);
    const __m512 rounded = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (mask) {  // inside the grid before clamping; false for NaN (ordered compares)
      const __mmask16 inside = _mm512_mask_cmp_ps_mask(
          _mm512_cmp_ps_mask(rounded, p.lo, _CMP_GE_OQ), rounded, p.hi, _CMP_LE_OQ);
      _mm_mask_storeu_epi8(mask + k, m, _mm_maskz_mov_epi8(inside, ones));
    }
    const __m512 clamped = _mm512_min_ps(p.hi, _mm512_max_ps(p.lo, rounded));
    // NaN lanes -> +0 and -0 -> +0 in one masked add (the reference's q - z is an integer).
    const __mmask16 ordered = _mm512_cmp_ps_mask(y, y, _CMP_ORD_Q);
    const __m512 steps = _mm512_maskz_add_ps(ordered, clamped, _mm512_setzero_ps());
    if constexpr (Stream) {
      _mm512_stream_ps(out + k, _mm512_mul_ps(steps, p.scale));
    } else {
      _mm512_mask_storeu_ps(out + k, m, _mm512_mul_ps(steps, p.scale));
    }
  };
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes)
    block(k, 0xffff);
  if (k < n) block(k, first_lanes(n - k));
}

template <FloatType T>
void fake_quantize__avx512(const void* x, std::int64_t n, Affine p, Grid grid, float* out,
                           std::uint8_t* mask) {
  fake_quantize_lanes<T>(x, n, Uniform(p, grid), out, mask);
}

// fake_quantize__avx512 with non-temporal stores of out (outputs larger than the caches;
// docs/kernels.md, "Elementwise kernels"); the mask is stored plainly.
template <FloatType T>
void fake_quantize_streaming__avx512(const void* x, std::int64_t n, Affine p, Grid grid, float* out,
                                     std::uint8_t* mask) {
  with_streamed_body<64>(
      out, n,
      [&](std::int64_t b, std::int64_t e) {
        fake_quantize_lanes<T>(input_at<T>(x, b), e - b, Uniform(p, grid), out + b,
                               mask ? mask + b : mask);
      },
      [&](std::int64_t b, std::int64_t e) {
        fake_quantize_lanes<T, true>(input_at<T>(x, b), e - b, Uniform(p, grid), out + b,
                                     mask ? mask + b : mask);
      });
}

template <FloatType T>
void fake_quantize_vec__avx512(const void* x, std::int64_t n, const float* inv_scale,
                               const float* scale, const std::int32_t* zero_point, Grid grid,
                               float* out, std::uint8_t* mask) {
  fake_quantize_lanes<T>(x, n, PerElement{inv_scale, scale, zero_point, grid}, out, mask);
}

// s * (q - z). For codes of at most 16 bits the float32 product is exact-then-rounded-once
// like the reference's double product; int32 codes take the double route.
// Stream: non-temporal stores, for all 16 lanes (m = 0xffff) at a 64-byte aligned out + k.
template <CodeType C, bool Stream = false>
inline void dequantize_block(const void* codes, std::int64_t k, __mmask16 m, __m512 scale,
                             __m512i zero, float* out) {
  const __m512i q = load_codes16<C>(codes, k, m);
  if constexpr (C == CodeType::i32) {
    const __m512d s0 = low_half_pd(scale), s1 = high_half_pd(scale);
    const __m512d d0 = _mm512_sub_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(q)),
                                     _mm512_cvtepi32_pd(_mm512_castsi512_si256(zero)));
    const __m512d d1 = _mm512_sub_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(q, 1)),
                                     _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(zero, 1)));
    const __m256 low = _mm512_cvtpd_ps(_mm512_mul_pd(s0, d0));
    const __m256 high = _mm512_cvtpd_ps(_mm512_mul_pd(s1, d1));
    if constexpr (Stream) {
      _mm256_stream_ps(out + k, low);
      _mm256_stream_ps(out + k + 8, high);
    } else {
      _mm256_mask_storeu_ps(out + k, static_cast<__mmask8>(m), low);
      _mm256_mask_storeu_ps(out + k + 8, static_cast<__mmask8>(m >> 8), high);
    }
  } else {
    const __m512 steps = _mm512_cvtepi32_ps(_mm512_sub_epi32(q, zero));
    const __m512 values = _mm512_mul_ps(steps, scale);
    if constexpr (Stream) {
      _mm512_stream_ps(out + k, values);
    } else if (m == 0xffff) {
      _mm512_storeu_ps(out + k, values);
    } else {
      _mm512_mask_storeu_ps(out + k, m, values);
    }
  }
}

template <CodeType C>
void dequantize__avx512(const void* codes, std::int64_t n, float scale, std::int32_t zero_point,
                        float* out) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i z = _mm512_set1_epi32(zero_point);
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes)
    dequantize_block<C>(codes, k, 0xffff, s, z, out);
  if (k < n) dequantize_block<C>(codes, k, first_lanes(n - k), s, z, out);
}

// dequantize__avx512 with non-temporal stores (outputs larger than the caches;
// docs/kernels.md, "Elementwise kernels").
template <CodeType C>
void dequantize_streaming__avx512(const void* codes, std::int64_t n, float scale,
                                  std::int32_t zero_point, float* out) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i z = _mm512_set1_epi32(zero_point);
  with_streamed_body<64>(
      out, n,
      [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t k = b; k < e; k += lanes)
          dequantize_block<C>(codes, k, first_lanes(e - k), s, z, out);
      },
      [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t k = b; k < e; k += lanes)
          dequantize_block<C, true>(codes, k, 0xffff, s, z, out);
      });
}

template <CodeType C>
void dequantize_vec__avx512(const void* codes, std::int64_t n, const float* scale,
                            const std::int32_t* zero_point, float* out) {
  for (std::int64_t k = 0; k < n; k += lanes) {
    const __mmask16 m = first_lanes(n - k);
    dequantize_block<C>(codes, k, m, _mm512_maskz_loadu_ps(m, scale + k),
                        _mm512_maskz_loadu_epi32(m, zero_point + k), out);
  }
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.quantize[t][0] = quantize__avx512<T, CodeWidth::b8>;
  table.quantize[t][1] = quantize__avx512<T, CodeWidth::b16>;
  table.quantize[t][2] = quantize__avx512<T, CodeWidth::b32>;
  table.quantize_streaming[t] = quantize_streaming__avx512<T>;
  table.quantize_vec[t][0] = quantize_vec__avx512<T, CodeWidth::b8>;
  table.quantize_vec[t][1] = quantize_vec__avx512<T, CodeWidth::b16>;
  table.quantize_vec[t][2] = quantize_vec__avx512<T, CodeWidth::b32>;
  table.fake_quantize[t][0] = fake_quantize__avx512<T>;
  table.fake_quantize_streaming[t][0] = fake_quantize_streaming__avx512<T>;
  table.fake_quantize_vec[t][0] = fake_quantize_vec__avx512<T>;
  // [t][1] (32-bit grids, |q - z| up to 2^32) keeps the reference kernel.
}

template <CodeType C>
void fill_for_code(KernelTable& table) {
  table.dequantize[static_cast<int>(C)] = dequantize__avx512<C>;
  table.dequantize_streaming[static_cast<int>(C)] = dequantize_streaming__avx512<C>;
  table.dequantize_vec[static_cast<int>(C)] = dequantize_vec__avx512<C>;
}

}  // namespace

void fill_quantize_kernels(KernelTable& table) {
  fill_for_input<FloatType::f32>(table);
  fill_for_input<FloatType::f16>(table);
  fill_for_input<FloatType::bf16>(table);
  fill_for_code<CodeType::i8>(table);
  fill_for_code<CodeType::u8>(table);
  fill_for_code<CodeType::i16>(table);
  fill_for_code<CodeType::u16>(table);
  fill_for_code<CodeType::i32>(table);
}

}  // namespace lucid::quantization::kernels::avx512
