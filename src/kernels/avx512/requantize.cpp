// AVX-512 requantize kernels: int32 accumulators -> 8-bit codes, in double like the reference.
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/simd.hpp"
#include "kernels/stream_prefetch.hpp"

namespace lucid::quantization::kernels::avx512 {
namespace {

// 8 accumulators: nearbyint(acc * m) clamped to [lo, hi] (grid minus zero
// point) in double; the clamp before the conversion keeps it in int32.
inline __m256i steps8(__m256i acc, __m512d multiplier, __m512d lo, __m512d hi) {
  const __m512d product = _mm512_mul_pd(_mm512_cvtepi32_pd(acc), multiplier);
  return _mm512_cvtpd_epi32(_mm512_min_pd(hi, _mm512_max_pd(lo, product)));
}

// 16 codes from per-lane multipliers and zero points.
inline __m512i codes16(__m512i acc, __m512 multiplier, __m512i zero, Grid grid) {
  const __m512d qmin = _mm512_set1_pd(grid.quant_min);
  const __m512d qmax = _mm512_set1_pd(grid.quant_max);
  const __m512d z0 = _mm512_cvtepi32_pd(_mm512_castsi512_si256(zero));
  const __m512d z1 = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(zero, 1));
  const __m256i s0 = steps8(_mm512_castsi512_si256(acc), low_half_pd(multiplier),
                            _mm512_sub_pd(qmin, z0), _mm512_sub_pd(qmax, z0));
  const __m256i s1 = steps8(_mm512_extracti64x4_epi64(acc, 1), high_half_pd(multiplier),
                            _mm512_sub_pd(qmin, z1), _mm512_sub_pd(qmax, z1));
  return _mm512_add_epi32(join(s0, s1), zero);
}

void requantize__avx512(const std::int32_t* acc, std::int64_t n, float multiplier,
                        std::int32_t zero_point, Grid grid, std::uint8_t* out) {
  const __m512 m = _mm512_set1_ps(multiplier);
  const __m512i z = _mm512_set1_epi32(zero_point);
  for (std::int64_t k = 0; k < n; k += lanes) {
    const __mmask16 lanes_in = first_lanes(n - k);
    elementwise_prefetch(acc + k);
    const __m512i a = _mm512_maskz_loadu_epi32(lanes_in, acc + k);
    store16<CodeWidth::b8>(out, k, codes16(a, m, z, grid), lanes_in);
  }
}

void requantize_vec__avx512(const std::int32_t* acc, std::int64_t n, const float* multiplier,
                            const std::int32_t* zero_point, Grid grid, std::uint8_t* out) {
  for (std::int64_t k = 0; k < n; k += lanes) {
    const __mmask16 lanes_in = first_lanes(n - k);
    elementwise_prefetch(acc + k);
    const __m512i a = _mm512_maskz_loadu_epi32(lanes_in, acc + k);
    const __m512 m = _mm512_maskz_loadu_ps(lanes_in, multiplier + k);
    const __m512i z = _mm512_maskz_loadu_epi32(lanes_in, zero_point + k);
    store16<CodeWidth::b8>(out, k, codes16(a, m, z, grid), lanes_in);
  }
}

}  // namespace

void fill_requantize_kernels(KernelTable& table) {
  table.requantize = requantize__avx512;
  table.requantize_vec = requantize_vec__avx512;
}

}  // namespace lucid::quantization::kernels::avx512
