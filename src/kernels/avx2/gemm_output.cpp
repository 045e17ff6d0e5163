// The GEMM's requantized output stage for one row of columns, AVX2 variant (8 outputs a step).
//
// The same double operations as the reference in the same order, so the same bytes; max / min
// equal the reference's comparisons as no value is NaN (and no bound is zero: below <= -1,
// above >= 1). The last cols % 8 go to the reference.
#include <immintrin.h>

#include "kernels/affine_spec.hpp"
#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {
namespace {

// 4 outputs from column j on, as int32 (the code plus z_out).
inline __m128i codes4(const std::int32_t* in, std::int64_t j, const igemm::RequantizeRowArgs& p,
                      __m256d below, __m256d above, __m256d low, __m256d high, __m256d z) {
  const __m256d shift = _mm256_set1_pd(round_half_even_shift);
  const __m256d acc = _mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j)));
  const __m256d sum = _mm256_add_pd(acc, _mm256_loadu_pd(p.bias + j));
  const __m256d product = _mm256_mul_pd(sum, _mm256_loadu_pd(p.multiplier + j));
  __m256d x = _mm256_add_pd(product, _mm256_loadu_pd(p.offset + j));
  x = _mm256_min_pd(_mm256_max_pd(x, below), above);
  __m256d q = _mm256_sub_pd(_mm256_add_pd(x, shift), shift);
  q = _mm256_add_pd(_mm256_min_pd(_mm256_max_pd(q, low), high), z);
  return _mm256_cvttpd_epi32(q);
}

}  // namespace

void requantize_row_i32_u8__avx2(const std::int32_t* in, std::int64_t cols,
                                 const igemm::RequantizeRowArgs& p, std::uint8_t* out) {
  const __m256d below = _mm256_set1_pd(p.below), above = _mm256_set1_pd(p.above);
  const __m256d low = _mm256_set1_pd(p.low), high = _mm256_set1_pd(p.high);
  const __m256d z = _mm256_set1_pd(p.zero_point);
  // The low byte of each int32 lane (codes are in [-128, 255]: int8 or uint8 storage alike).
  const __m128i low_bytes =
      _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  std::int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    const __m128i c0 = _mm_shuffle_epi8(codes4(in, j, p, below, above, low, high, z), low_bytes);
    const __m128i c1 =
        _mm_shuffle_epi8(codes4(in, j + 4, p, below, above, low, high, z), low_bytes);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + j), _mm_unpacklo_epi32(c0, c1));
  }
  if (j == cols) return;
  igemm::RequantizeRowArgs rest = p;
  rest.bias += j;
  rest.multiplier += j;
  rest.offset += j;
  requantize_row_i32_u8__reference(in + j, cols - j, rest, out + j);
}

}  // namespace lucid::quantization::kernels
