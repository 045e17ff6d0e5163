// AVX2 quantize / dequantize / fake_quantize kernels (+F16C), 8 lanes at a time; the last
// n % 8 elements go to the reference kernel, which computes the same bits.
#include "kernels/avx2/byte_codes.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/stream_prefetch.hpp"
#include "kernels/streamed_body.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

template <CodeWidth W>
void* codes_at(void* codes, std::int64_t k) {
  return static_cast<char*>(codes) + k * (W == CodeWidth::b8 ? 1 : W == CodeWidth::b16 ? 2 : 4);
}

// Codes of a grid of at most 16 bits: clamp in float (NaN passes max and min,
// which return the second operand for NaN), convert (NaN -> 0x80000000), add
// the zero point; the low 16 bits of a NaN lane are then the zero point.
inline __m256i narrow_codes(__m256 x, const Lanes& p) {
  const __m256 y = _mm256_mul_ps(x, p.inv);
  const __m256 clamped = _mm256_min_ps(p.hi, _mm256_max_ps(p.lo, y));
  return _mm256_add_epi32(_mm256_cvtps_epi32(clamped), p.zero);
}

// Codes of a 32-bit grid: rounded product plus zero point clamped in double.
inline __m256i wide_codes(__m256 x, const Lanes& p, Grid grid) {
  const __m256 y = _mm256_mul_ps(x, p.inv);
  const __m256 rounded = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256d qmin = _mm256_set1_pd(grid.quant_min);
  const __m256d qmax = _mm256_set1_pd(grid.quant_max);
  const __m256d c0 = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(rounded)),
                                   _mm256_cvtepi32_pd(_mm256_castsi256_si128(p.zero)));
  const __m256d c1 = _mm256_add_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(rounded, 1)),
                                   _mm256_cvtepi32_pd(_mm256_extracti128_si256(p.zero, 1)));
  const __m128i i0 = _mm256_cvtpd_epi32(_mm256_min_pd(qmax, _mm256_max_pd(qmin, c0)));
  const __m128i i1 = _mm256_cvtpd_epi32(_mm256_min_pd(qmax, _mm256_max_pd(qmin, c1)));
  const __m256i codes = _mm256_inserti128_si256(_mm256_castsi128_si256(i0), i1, 1);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(y, y, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(codes, p.zero, nan);
}

// 32 codes of x + k through clamped_bytes32, stored non-temporally when Stream (codes + k then
// 32-byte aligned).
template <FloatType T, bool Stream = false>
inline void codes32(const void* x, std::int64_t k, __m256 inv, __m256 lo, __m256 hi, __m256i zero16,
                    std::int8_t* codes) {
  store_bytes32<Stream>(codes + k, clamped_bytes32<T>(x, k, inv, lo, hi, zero16));
}

template <FloatType T, bool Signed, bool Clamp, bool Stream = false>
inline void saturating_codes32(const void* x, std::int64_t k, __m256 inv, const ByteGrid& g,
                               __m256i& lowest, std::int8_t* codes) {
  store_bytes32<Stream>(codes + k,
                        saturating_bytes32<T, ByteRule{Signed, Clamp}>(x, k, inv, g, lowest));
}

// Elements per block of saturating_blocks: 8 rounds of 32.
constexpr std::int64_t saturating_block = 8 * 4 * lanes;

// Whole blocks through saturating_codes32; a block where a packed step reached -32768 (NaN, huge
// values, steps far below the grid) is redone by codes32, whose float clamp handles them (stored
// the same way: a later store to the same bytes from this thread is the one that stays). Returns
// the elements done.
template <FloatType T, bool Signed, bool Clamp, bool Prefetch, bool Stream>
std::int64_t saturating_blocks_of(const void* x, std::int64_t n, const Lanes& p, Grid grid,
                                  std::int8_t* codes) {
  const ByteGrid g = byte_grid(_mm256_cvtsi256_si32(p.zero), grid);
  std::int64_t k = 0;
  for (; k + saturating_block <= n; k += saturating_block) {
    __m256i lowest = _mm256_set1_epi16(32767);
    for (std::int64_t j = k; j < k + saturating_block; j += 4 * lanes) {
      elementwise_prefetch<Prefetch>(input_at<T>(x, j));
      elementwise_prefetch<Prefetch>(input_at<T>(x, j + 2 * lanes));
      saturating_codes32<T, Signed, Clamp, Stream>(x, j, p.inv, g, lowest, codes);
    }
    if (!saturated(lowest)) continue;
    for (std::int64_t j = k; j < k + saturating_block; j += 4 * lanes)
      codes32<T, Stream>(x, j, p.inv, p.lo, p.hi, g.zero16, codes);
  }
  return k;
}
template <FloatType T, bool Signed, bool Clamp, bool Stream>
std::int64_t saturating_blocks(const void* x, std::int64_t n, const Lanes& p, Grid grid,
                               std::int8_t* codes) {
  return elementwise_prefetch_pays(n * input_element_bytes<T>)
             ? saturating_blocks_of<T, Signed, Clamp, true, Stream>(x, n, p, grid, codes)
             : saturating_blocks_of<T, Signed, Clamp, false, Stream>(x, n, p, grid, codes);
}

// 8-bit codes 32 at a time: the low byte of every lane, as store8 keeps it (a NaN lane's low
// byte is its zero point). One zero point for all goes in blocks through saturating_blocks, then
// 32 at a time through codes32. Returns the elements done. Stream (one zero point only): the
// codes stored non-temporally, codes 32-byte aligned.
template <FloatType T, bool Stream = false, class Params>
std::int64_t quantize_bytes32(const void* x, std::int64_t n, const Params& params, Grid grid,
                              std::int8_t* codes) {
  std::int64_t k = 0;
  if constexpr (Params::uniform) {
    const Lanes& p = params.lanes;
    const bool is_signed = grid.quant_min < 0;
    const bool whole_byte = is_signed ? grid.quant_min == -128 && grid.quant_max == 127
                                      : grid.quant_min == 0 && grid.quant_max == 255;
    if (is_signed) {
      k = whole_byte ? saturating_blocks<T, true, false, Stream>(x, n, p, grid, codes)
                     : saturating_blocks<T, true, true, Stream>(x, n, p, grid, codes);
    } else {
      k = whole_byte ? saturating_blocks<T, false, false, Stream>(x, n, p, grid, codes)
                     : saturating_blocks<T, false, true, Stream>(x, n, p, grid, codes);
    }
    const __m256i zero16 = _mm256_packs_epi32(p.zero, p.zero);  // |zero point| <= 255: exact
    for (; k + 4 * lanes <= n; k += 4 * lanes)
      codes32<T, Stream>(x, k, p.inv, p.lo, p.hi, zero16, codes);
    return k;
  } else {
    static_assert(!Stream, "streamed codes take one zero point");
  }
  const auto code = [&](std::int64_t at) { return narrow_codes(load8<T>(x, at), params.at(at)); };
  for (; k + 4 * lanes <= n; k += 4 * lanes) {
    store32_low_bytes(codes + k, code(k), code(k + lanes), code(k + 2 * lanes),
                      code(k + 3 * lanes));
  }
  return k;
}

// The vector part: returns how many leading elements were done (a multiple of 8).
template <FloatType T, CodeWidth W, class Params>
std::int64_t quantize_lanes(const void* x, std::int64_t n, const Params& params, Grid grid,
                            void* codes) {
  std::int64_t k = 0;
  if constexpr (W == CodeWidth::b8)
    k = quantize_bytes32<T>(x, n, params, grid, static_cast<std::int8_t*>(codes));
  for (; k + lanes <= n; k += lanes) {
    const Lanes p = params.at(k);
    if constexpr (W == CodeWidth::b32) {
      store8<W>(codes, k, wide_codes(load8<T>(x, k), p, grid));
    } else {
      store8<W>(codes, k, narrow_codes(load8<T>(x, k), p));
    }
  }
  return k;
}

template <FloatType T, CodeWidth W>
void quantize__avx2(const void* x, std::int64_t n, Affine p, Grid grid, void* codes) {
  const std::int64_t done = quantize_lanes<T, W>(x, n, Uniform(p, grid), grid, codes);
  if (done == n) return;
  reference_table().quantize[static_cast<int>(T)][static_cast<int>(W)](
      input_at<T>(x, done), n - done, p, grid, codes_at<W>(codes, done));
}

// quantize__avx2 at width b8 with non-temporal stores of the codes (outputs larger than the
// caches: no read for ownership; docs/kernels.md, "Elementwise kernels").
template <FloatType T>
void quantize_streaming__avx2(const void* x, std::int64_t n, Affine p, Grid grid, void* codes) {
  auto* bytes = static_cast<std::int8_t*>(codes);
  with_streamed_body<32>(
      bytes, n,
      [&](std::int64_t b, std::int64_t e) {
        quantize__avx2<T, CodeWidth::b8>(input_at<T>(x, b), e - b, p, grid, bytes + b);
      },
      [&](std::int64_t b, std::int64_t e) {  // whole 32-byte vectors: every code done here
        quantize_bytes32<T, true>(input_at<T>(x, b), e - b, Uniform(p, grid), grid, bytes + b);
      });
}

template <FloatType T, CodeWidth W>
void quantize_vec__avx2(const void* x, std::int64_t n, const float* inv_scale,
                        const std::int32_t* zero_point, Grid grid, void* codes) {
  const std::int64_t done =
      quantize_lanes<T, W>(x, n, PerElement{inv_scale, nullptr, zero_point, grid}, grid, codes);
  if (done == n) return;
  reference_table().quantize_vec[static_cast<int>(T)][static_cast<int>(W)](
      input_at<T>(x, done), n - done, inv_scale + done, zero_point + done, grid,
      codes_at<W>(codes, done));
}

// Stores 4 or 8 floats, with a non-temporal store when Stream (p then 16- or 32-byte aligned).
template <bool Stream>
inline void store_floats4(float* p, __m128 v) {
  if constexpr (Stream) {
    _mm_stream_ps(p, v);
  } else {
    _mm_storeu_ps(p, v);
  }
}
template <bool Stream>
inline void store_floats8(float* p, __m256 v) {
  if constexpr (Stream) {
    _mm256_stream_ps(p, v);
  } else {
    _mm256_storeu_ps(p, v);
  }
}

// fake_quantize for grids of at most 16 bits (|q - z| < 2^24: the float32
// product s * (q - z) rounds like the reference's double product). Stream: non-temporal stores
// of out, which is then 32-byte aligned, and the input prefetched.
template <FloatType T, bool Stream = false, class Params>
std::int64_t fake_quantize_lanes(const void* x, std::int64_t n, const Params& params, float* out,
                                 std::uint8_t* mask) {
  const __m256i one = _mm256_set1_epi32(1);
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes) {
    elementwise_prefetch<Stream>(input_at<T>(x, k));  // streamed outputs are large
    const Lanes p = params.at(k);
    const __m256 y = _mm256_mul_ps(load8<T>(x, k), p.inv);
    const __m256 rounded = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (mask) {  // inside the grid before clamping; ordered compares are false for NaN
      const __m256 inside = _mm256_and_ps(_mm256_cmp_ps(rounded, p.lo, _CMP_GE_OQ),
                                          _mm256_cmp_ps(rounded, p.hi, _CMP_LE_OQ));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(mask + k),
                       low_bytes(_mm256_and_si256(_mm256_castps_si256(inside), one)));
    }
    const __m256 clamped = _mm256_min_ps(p.hi, _mm256_max_ps(p.lo, rounded));
    // + 0 turns -0 into +0; the ordered mask turns NaN lanes into +0.
    const __m256 steps =
        _mm256_and_ps(_mm256_add_ps(clamped, _mm256_setzero_ps()), _mm256_cmp_ps(y, y, _CMP_ORD_Q));
    store_floats8<Stream>(out + k, _mm256_mul_ps(steps, p.scale));
  }
  return k;
}

template <FloatType T>
void fake_quantize__avx2(const void* x, std::int64_t n, Affine p, Grid grid, float* out,
                         std::uint8_t* mask) {
  const std::int64_t done = fake_quantize_lanes<T>(x, n, Uniform(p, grid), out, mask);
  if (done == n) return;
  reference_table().fake_quantize[static_cast<int>(T)][0](input_at<T>(x, done), n - done, p, grid,
                                                          out + done, mask ? mask + done : mask);
}

// fake_quantize__avx2 with non-temporal stores of out (outputs larger than the caches;
// docs/kernels.md, "Elementwise kernels"); the mask is stored plainly.
template <FloatType T>
void fake_quantize_streaming__avx2(const void* x, std::int64_t n, Affine p, Grid grid, float* out,
                                   std::uint8_t* mask) {
  with_streamed_body<32>(
      out, n,
      [&](std::int64_t b, std::int64_t e) {
        fake_quantize__avx2<T>(input_at<T>(x, b), e - b, p, grid, out + b, mask ? mask + b : mask);
      },
      [&](std::int64_t b, std::int64_t e) {
        fake_quantize_lanes<T, true>(input_at<T>(x, b), e - b, Uniform(p, grid), out + b,
                                     mask ? mask + b : mask);
      });
}

template <FloatType T>
void fake_quantize_vec__avx2(const void* x, std::int64_t n, const float* inv_scale,
                             const float* scale, const std::int32_t* zero_point, Grid grid,
                             float* out, std::uint8_t* mask) {
  const std::int64_t done =
      fake_quantize_lanes<T>(x, n, PerElement{inv_scale, scale, zero_point, grid}, out, mask);
  if (done == n) return;
  reference_table().fake_quantize_vec[static_cast<int>(T)][0](
      input_at<T>(x, done), n - done, inv_scale + done, scale + done, zero_point + done, grid,
      out + done, mask ? mask + done : mask);
}

// s * (q - z): float32 for codes of at most 16 bits, double for int32 codes.
template <CodeType C, bool Stream = false>
inline void dequantize8(const void* codes, std::int64_t k, __m256 scale, __m256i zero, float* out) {
  const __m256i q = load_codes8<C>(codes, k);
  if constexpr (C == CodeType::i32) {
    const __m256d d0 = _mm256_sub_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(q)),
                                     _mm256_cvtepi32_pd(_mm256_castsi256_si128(zero)));
    const __m256d d1 = _mm256_sub_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(q, 1)),
                                     _mm256_cvtepi32_pd(_mm256_extracti128_si256(zero, 1)));
    const __m256d s0 = _mm256_cvtps_pd(_mm256_castps256_ps128(scale));
    const __m256d s1 = _mm256_cvtps_pd(_mm256_extractf128_ps(scale, 1));
    store_floats4<Stream>(out + k, _mm256_cvtpd_ps(_mm256_mul_pd(s0, d0)));
    store_floats4<Stream>(out + k + 4, _mm256_cvtpd_ps(_mm256_mul_pd(s1, d1)));
  } else {
    const __m256 steps = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, zero));
    store_floats8<Stream>(out + k, _mm256_mul_ps(steps, scale));
  }
}

constexpr int code_bytes(CodeType c) {
  return c == CodeType::i8 || c == CodeType::u8 ? 1 : c == CodeType::i32 ? 4 : 2;
}

template <CodeType C>
void dequantize__avx2(const void* codes, std::int64_t n, float scale, std::int32_t zero_point,
                      float* out) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i z = _mm256_set1_epi32(zero_point);
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes)
    dequantize8<C>(codes, k, s, z, out);
  if (k == n) return;
  reference_table().dequantize[static_cast<int>(C)](
      static_cast<const char*>(codes) + k * code_bytes(C), n - k, scale, zero_point, out + k);
}

// dequantize__avx2 with non-temporal stores (outputs larger than the caches: no read for
// ownership, no eviction of the input; docs/kernels.md, "Elementwise kernels").
template <CodeType C>
void dequantize_streaming__avx2(const void* codes, std::int64_t n, float scale,
                                std::int32_t zero_point, float* out) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i z = _mm256_set1_epi32(zero_point);
  with_streamed_body<32>(
      out, n,
      [&](std::int64_t b, std::int64_t e) {
        dequantize__avx2<C>(static_cast<const char*>(codes) + b * code_bytes(C), e - b, scale,
                            zero_point, out + b);
      },
      [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t k = b; k < e; k += lanes)
          dequantize8<C, true>(codes, k, s, z, out);
      });
}

template <CodeType C>
void dequantize_vec__avx2(const void* codes, std::int64_t n, const float* scale,
                          const std::int32_t* zero_point, float* out) {
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes) {
    dequantize8<C>(codes, k, _mm256_loadu_ps(scale + k),
                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point + k)), out);
  }
  if (k == n) return;
  reference_table().dequantize_vec[static_cast<int>(C)](
      static_cast<const char*>(codes) + k * code_bytes(C), n - k, scale + k, zero_point + k,
      out + k);
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.quantize[t][0] = quantize__avx2<T, CodeWidth::b8>;
  table.quantize[t][1] = quantize__avx2<T, CodeWidth::b16>;
  table.quantize[t][2] = quantize__avx2<T, CodeWidth::b32>;
  table.quantize_streaming[t] = quantize_streaming__avx2<T>;
  table.quantize_vec[t][0] = quantize_vec__avx2<T, CodeWidth::b8>;
  table.quantize_vec[t][1] = quantize_vec__avx2<T, CodeWidth::b16>;
  table.quantize_vec[t][2] = quantize_vec__avx2<T, CodeWidth::b32>;
  table.fake_quantize[t][0] = fake_quantize__avx2<T>;
  table.fake_quantize_streaming[t][0] = fake_quantize_streaming__avx2<T>;
  table.fake_quantize_vec[t][0] = fake_quantize_vec__avx2<T>;
  // [t][1] (32-bit grids, |q - z| up to 2^32) keeps the reference kernel.
}

template <CodeType C>
void fill_for_code(KernelTable& table) {
  table.dequantize[static_cast<int>(C)] = dequantize__avx2<C>;
  table.dequantize_streaming[static_cast<int>(C)] = dequantize_streaming__avx2<C>;
  table.dequantize_vec[static_cast<int>(C)] = dequantize_vec__avx2<C>;
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

}  // namespace lucid::quantization::kernels::avx2
