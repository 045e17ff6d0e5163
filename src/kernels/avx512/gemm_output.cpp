// The GEMM's requantized output stage for one row of columns, AVX-512 variant (8 outputs a step).
//
// The same double operations as the reference in the same order, so the same bytes (the
// baseline build vectorizes the reference 2 wide, with scalar tails). max / min equal the
// reference's comparisons as no value is NaN. (The maskz forms with a full mask avoid GCC 12's
// -Wmaybe-uninitialized on the unmasked intrinsics.)
#include <immintrin.h>

#include "kernels/affine_spec.hpp"
#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {

void requantize_row_i32_u8__avx512(const std::int32_t* in, std::int64_t cols,
                                   const igemm::RequantizeRowArgs& p, std::uint8_t* out) {
  const __m512d below = _mm512_set1_pd(p.below), above = _mm512_set1_pd(p.above);
  const __m512d low = _mm512_set1_pd(p.low), high = _mm512_set1_pd(p.high);
  const __m512d z = _mm512_set1_pd(p.zero_point);
  const __m512d shift = _mm512_set1_pd(round_half_even_shift);
  for (std::int64_t j = 0; j < cols; j += 8) {
    const auto mask = static_cast<__mmask8>(cols - j >= 8 ? 0xff : (1u << (cols - j)) - 1);
    const __m512d acc = _mm512_maskz_cvtepi32_pd(0xff, _mm256_maskz_loadu_epi32(mask, in + j));
    const __m512d sum = _mm512_add_pd(acc, _mm512_maskz_loadu_pd(mask, p.bias + j));
    const __m512d product = _mm512_mul_pd(sum, _mm512_maskz_loadu_pd(mask, p.multiplier + j));
    __m512d x = _mm512_add_pd(product, _mm512_maskz_loadu_pd(mask, p.offset + j));
    x = _mm512_maskz_min_pd(0xff, _mm512_maskz_max_pd(0xff, x, below), above);
    __m512d q = _mm512_sub_pd(_mm512_add_pd(x, shift), shift);
    q = _mm512_add_pd(_mm512_maskz_min_pd(0xff, _mm512_maskz_max_pd(0xff, q, low), high), z);
    _mm256_mask_cvtepi32_storeu_epi8(out + j, mask, _mm512_maskz_cvttpd_epi32(0xff, q));
  }
}

}  // namespace lucid::quantization::kernels
