// AVX2 requantize kernels: int32 accumulators -> 8-bit codes in double, 32 (then 8) at a time;
// the last n % 8 go to the reference kernel.
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/simd.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

// 4 accumulators: nearbyint(acc * m) clamped to [lo, hi] (grid minus zero point) in double.
inline __m128i steps4(__m128i acc, __m256d multiplier, __m256d lo, __m256d hi) {
  const __m256d product = _mm256_mul_pd(_mm256_cvtepi32_pd(acc), multiplier);
  return _mm256_cvtpd_epi32(_mm256_min_pd(hi, _mm256_max_pd(lo, product)));
}

inline __m256i codes8(__m256i acc, __m256 multiplier, __m256i zero, Grid grid) {
  const __m256d qmin = _mm256_set1_pd(grid.quant_min);
  const __m256d qmax = _mm256_set1_pd(grid.quant_max);
  const __m256d z0 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(zero));
  const __m256d z1 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(zero, 1));
  const __m128i s0 =
      steps4(_mm256_castsi256_si128(acc), _mm256_cvtps_pd(_mm256_castps256_ps128(multiplier)),
             _mm256_sub_pd(qmin, z0), _mm256_sub_pd(qmax, z0));
  const __m128i s1 = steps4(_mm256_extracti128_si256(acc, 1),
                            _mm256_cvtps_pd(_mm256_extractf128_ps(multiplier, 1)),
                            _mm256_sub_pd(qmin, z1), _mm256_sub_pd(qmax, z1));
  return _mm256_add_epi32(_mm256_inserti128_si256(_mm256_castsi128_si256(s0), s1, 1), zero);
}

inline __m256i load_acc(const std::int32_t* acc, std::int64_t k) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + k));
}

void requantize__avx2(const std::int32_t* acc, std::int64_t n, float multiplier,
                      std::int32_t zero_point, Grid grid, std::uint8_t* out) {
  const __m256 m = _mm256_set1_ps(multiplier);
  const __m256i z = _mm256_set1_epi32(zero_point);
  std::int64_t k = 0;
  for (; k + 4 * lanes <= n; k += 4 * lanes) {
    store32_low_bytes(out + k, codes8(load_acc(acc, k), m, z, grid),
                      codes8(load_acc(acc, k + lanes), m, z, grid),
                      codes8(load_acc(acc, k + 2 * lanes), m, z, grid),
                      codes8(load_acc(acc, k + 3 * lanes), m, z, grid));
  }
  for (; k + lanes <= n; k += lanes)
    store8<CodeWidth::b8>(out, k, codes8(load_acc(acc, k), m, z, grid));
  if (k < n) reference_table().requantize(acc + k, n - k, multiplier, zero_point, grid, out + k);
}

void requantize_vec__avx2(const std::int32_t* acc, std::int64_t n, const float* multiplier,
                          const std::int32_t* zero_point, Grid grid, std::uint8_t* out) {
  const auto codes_at = [&](std::int64_t k) {
    const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point + k));
    return codes8(load_acc(acc, k), _mm256_loadu_ps(multiplier + k), z, grid);
  };
  std::int64_t k = 0;
  for (; k + 4 * lanes <= n; k += 4 * lanes) {
    store32_low_bytes(out + k, codes_at(k), codes_at(k + lanes), codes_at(k + 2 * lanes),
                      codes_at(k + 3 * lanes));
  }
  for (; k + lanes <= n; k += lanes)
    store8<CodeWidth::b8>(out, k, codes_at(k));
  if (k < n) {
    reference_table().requantize_vec(acc + k, n - k, multiplier + k, zero_point + k, grid, out + k);
  }
}

}  // namespace

void fill_requantize_kernels(KernelTable& table) {
  table.requantize = requantize__avx2;
  table.requantize_vec = requantize_vec__avx2;
}

}  // namespace lucid::quantization::kernels::avx2
