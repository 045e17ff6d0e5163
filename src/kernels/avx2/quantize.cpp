// AVX2 quantize / dequantize / fake_quantize kernels (+F16C), 8 lanes at a time; the last
// n % 8 elements go to the reference kernel, which computes the same bits.
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/simd.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

template <FloatType T>
const void* input_at(const void* x, std::int64_t k) {
  return static_cast<const char*>(x) + k * (T == FloatType::f32 ? 4 : 2);
}

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

// 8-bit codes 32 at a time: the low byte of every lane, as store8 keeps it (a NaN lane's low
// byte is its zero point). Returns the elements done.
template <FloatType T, class Params>
std::int64_t quantize_bytes32(const void* x, std::int64_t n, const Params& params,
                              std::int8_t* codes) {
  const auto code = [&](std::int64_t k) { return narrow_codes(load8<T>(x, k), params.at(k)); };
  std::int64_t k = 0;
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
    k = quantize_bytes32<T>(x, n, params, static_cast<std::int8_t*>(codes));
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

// fake_quantize for grids of at most 16 bits (|q - z| < 2^24: the float32
// product s * (q - z) rounds like the reference's double product).
template <FloatType T, class Params>
std::int64_t fake_quantize_lanes(const void* x, std::int64_t n, const Params& params, float* out,
                                 std::uint8_t* mask) {
  const __m256i one = _mm256_set1_epi32(1);
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes) {
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
    _mm256_storeu_ps(out + k, _mm256_mul_ps(steps, p.scale));
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
template <CodeType C>
inline void dequantize8(const void* codes, std::int64_t k, __m256 scale, __m256i zero, float* out) {
  const __m256i q = load_codes8<C>(codes, k);
  if constexpr (C == CodeType::i32) {
    const __m256d d0 = _mm256_sub_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(q)),
                                     _mm256_cvtepi32_pd(_mm256_castsi256_si128(zero)));
    const __m256d d1 = _mm256_sub_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(q, 1)),
                                     _mm256_cvtepi32_pd(_mm256_extracti128_si256(zero, 1)));
    const __m256d s0 = _mm256_cvtps_pd(_mm256_castps256_ps128(scale));
    const __m256d s1 = _mm256_cvtps_pd(_mm256_extractf128_ps(scale, 1));
    _mm_storeu_ps(out + k, _mm256_cvtpd_ps(_mm256_mul_pd(s0, d0)));
    _mm_storeu_ps(out + k + 4, _mm256_cvtpd_ps(_mm256_mul_pd(s1, d1)));
  } else {
    const __m256 steps = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, zero));
    _mm256_storeu_ps(out + k, _mm256_mul_ps(steps, scale));
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

// Each group through the same code as quantize__avx2, inlined (no call per group).
template <FloatType T>
void quantize_groups__avx2(const void* x, std::int64_t groups, std::int64_t group_size,
                           const float* inv_scale, const float* scale,
                           const std::int32_t* zero_point, Grid grid, std::int8_t* codes) {
  for (std::int64_t g = 0; g < groups; ++g) {
    const void* xg = input_at<T>(x, g * group_size);
    const Affine p{inv_scale[g], scale[g], zero_point[g]};
    const std::int64_t done =
        quantize_lanes<T, CodeWidth::b8>(xg, group_size, Uniform(p, grid), grid, codes);
    if (done < group_size) {
      reference_table().quantize[static_cast<int>(T)][0](input_at<T>(xg, done), group_size - done,
                                                         p, grid, codes + done);
    }
    codes += group_size;
  }
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.quantize[t][0] = quantize__avx2<T, CodeWidth::b8>;
  table.quantize[t][1] = quantize__avx2<T, CodeWidth::b16>;
  table.quantize[t][2] = quantize__avx2<T, CodeWidth::b32>;
  table.quantize_vec[t][0] = quantize_vec__avx2<T, CodeWidth::b8>;
  table.quantize_vec[t][1] = quantize_vec__avx2<T, CodeWidth::b16>;
  table.quantize_vec[t][2] = quantize_vec__avx2<T, CodeWidth::b32>;
  table.quantize_groups[t] = quantize_groups__avx2<T>;
  table.fake_quantize[t][0] = fake_quantize__avx2<T>;
  table.fake_quantize_vec[t][0] = fake_quantize_vec__avx2<T>;
  // [t][1] (32-bit grids, |q - z| up to 2^32) keeps the reference kernel.
}

template <CodeType C>
void fill_for_code(KernelTable& table) {
  table.dequantize[static_cast<int>(C)] = dequantize__avx2<C>;
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
