// AVX2 requantize kernels: int32 accumulators -> 8-bit codes in double, 32 (then 8) at a time;
// the last n % 8 go to the reference kernel.
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/simd.hpp"
#include "kernels/stream_prefetch.hpp"
#include "kernels/streamed_body.hpp"

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

// 4 rounded products nearbyint(double(acc) * m) as int32: |acc * m| <= |acc| < 2^31 when m <= 1,
// so the conversion (round half to even) never overflows.
inline __m128i products4(const std::int32_t* acc, std::int64_t k, __m256d m) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + k));
  return _mm256_cvtpd_epi32(_mm256_mul_pd(_mm256_cvtepi32_pd(a), m));
}

// 32 codes for a multiplier m <= 1 without the double clamp: the rounded products packed to
// int16 with signed saturation, the zero point added with saturation, clamped to the grid in
// int16 unless it is a whole signed or unsigned byte (Clamp false: the byte pack saturates as the
// grid clamps), packed to bytes with the grid's signedness. Exact: a product beyond int16 is
// beyond the grid on the same side. Stream: stored non-temporally (out + k 32-byte aligned).
template <bool Signed, bool Clamp, bool Stream>
inline void saturating_codes32(const std::int32_t* acc, std::int64_t k, __m256d m, __m256i zero16,
                               __m256i lo16, __m256i hi16, std::uint8_t* out) {
  const auto words8 = [&](std::int64_t at) {  // 8 products as int16, in order
    return _mm_packs_epi32(products4(acc, at, m), products4(acc, at + 4, m));
  };
  const auto words16 = [&](std::int64_t at) {
    __m256i w = _mm256_inserti128_si256(_mm256_castsi128_si256(words8(at)), words8(at + 8), 1);
    w = _mm256_adds_epi16(w, zero16);
    if constexpr (Clamp) w = _mm256_min_epi16(hi16, _mm256_max_epi16(lo16, w));
    return w;
  };
  const __m256i a = words16(k), b = words16(k + 16);
  const __m256i bytes = Signed ? _mm256_packs_epi16(a, b) : _mm256_packus_epi16(a, b);
  store_bytes32<Stream>(out + k, _mm256_permute4x64_epi64(bytes, 0xd8));
}

template <bool Signed, bool Clamp, bool Stream>
std::int64_t saturating_requantize_of(const std::int32_t* acc, std::int64_t n, float multiplier,
                                      std::int32_t zero_point, Grid grid, std::uint8_t* out) {
  const __m256d m = _mm256_set1_pd(multiplier);
  const __m256i zero16 = _mm256_set1_epi16(static_cast<std::int16_t>(zero_point));
  const __m256i lo16 = _mm256_set1_epi16(static_cast<std::int16_t>(grid.quant_min));
  const __m256i hi16 = _mm256_set1_epi16(static_cast<std::int16_t>(grid.quant_max));
  std::int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    elementwise_prefetch(acc + k);
    elementwise_prefetch(acc + k + 16);
    saturating_codes32<Signed, Clamp, Stream>(acc, k, m, zero16, lo16, hi16, out);
  }
  return k;
}

// The codes of a multiplier <= 1, 32 at a time (the grid's signedness and whether it is a whole
// byte chosen once); returns the elements done.
template <bool Stream>
std::int64_t saturating_requantize(const std::int32_t* acc, std::int64_t n, float multiplier,
                                   std::int32_t zero_point, Grid grid, std::uint8_t* out) {
  const bool is_signed = grid.quant_min < 0;
  const bool whole_byte = is_signed ? grid.quant_min == -128 && grid.quant_max == 127
                                    : grid.quant_min == 0 && grid.quant_max == 255;
  if (is_signed) {
    return whole_byte ? saturating_requantize_of<true, false, Stream>(acc, n, multiplier,
                                                                      zero_point, grid, out)
                      : saturating_requantize_of<true, true, Stream>(acc, n, multiplier, zero_point,
                                                                     grid, out);
  }
  return whole_byte ? saturating_requantize_of<false, false, Stream>(acc, n, multiplier, zero_point,
                                                                     grid, out)
                    : saturating_requantize_of<false, true, Stream>(acc, n, multiplier, zero_point,
                                                                    grid, out);
}

// Multipliers <= 1 take saturating_requantize, others the double clamp, 32 then 8 at a time.
void requantize__avx2(const std::int32_t* acc, std::int64_t n, float multiplier,
                      std::int32_t zero_point, Grid grid, std::uint8_t* out) {
  const __m256 m = _mm256_set1_ps(multiplier);
  const __m256i z = _mm256_set1_epi32(zero_point);
  std::int64_t k = 0;
  if (multiplier <= 1.0f)
    k = saturating_requantize<false>(acc, n, multiplier, zero_point, grid, out);
  for (; k + 4 * lanes <= n; k += 4 * lanes) {
    elementwise_prefetch(acc + k);
    elementwise_prefetch(acc + k + 16);
    store32_low_bytes(out + k, codes8(load_acc(acc, k), m, z, grid),
                      codes8(load_acc(acc, k + lanes), m, z, grid),
                      codes8(load_acc(acc, k + 2 * lanes), m, z, grid),
                      codes8(load_acc(acc, k + 3 * lanes), m, z, grid));
  }
  for (; k + lanes <= n; k += lanes)
    store8<CodeWidth::b8>(out, k, codes8(load_acc(acc, k), m, z, grid));
  if (k < n) reference_table().requantize(acc + k, n - k, multiplier, zero_point, grid, out + k);
}

// requantize__avx2 with non-temporal stores of the codes (outputs larger than the caches;
// docs/kernels.md, "Elementwise kernels"); multipliers > 1 (the double route) store plainly.
void requantize_streaming__avx2(const std::int32_t* acc, std::int64_t n, float multiplier,
                                std::int32_t zero_point, Grid grid, std::uint8_t* out) {
  if (!(multiplier <= 1.0f)) {
    requantize__avx2(acc, n, multiplier, zero_point, grid, out);
    return;
  }
  with_streamed_body<32>(
      out, n,
      [&](std::int64_t b, std::int64_t e) {
        requantize__avx2(acc + b, e - b, multiplier, zero_point, grid, out + b);
      },
      [&](std::int64_t b, std::int64_t e) {  // whole 32-byte vectors: every code done here
        saturating_requantize<true>(acc + b, e - b, multiplier, zero_point, grid, out + b);
      });
}

void requantize_vec__avx2(const std::int32_t* acc, std::int64_t n, const float* multiplier,
                          const std::int32_t* zero_point, Grid grid, std::uint8_t* out) {
  const auto codes_at = [&](std::int64_t k) {
    const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point + k));
    return codes8(load_acc(acc, k), _mm256_loadu_ps(multiplier + k), z, grid);
  };
  std::int64_t k = 0;
  for (; k + 4 * lanes <= n; k += 4 * lanes) {
    elementwise_prefetch(acc + k);
    elementwise_prefetch(acc + k + 16);
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
  table.requantize_streaming = requantize_streaming__avx2;
  table.requantize_vec = requantize_vec__avx2;
}

}  // namespace lucid::quantization::kernels::avx2
