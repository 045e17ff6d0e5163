// The GEMM output stages: int32 copy, float32 scale + bias, double-precision requantization.
#include "gemm/output_stage.hpp"

#include <algorithm>
#include <cstring>

#if defined(LUCIDQ_X86_KERNELS)
#include <immintrin.h>
#endif

#include "lucid/quantization/runtime.hpp"

namespace lucid::quantization::igemm {
namespace {

// nearbyint for |x| <= 2^51 in the default rounding mode (ties to even):
// adding 1.5 · 2^52 leaves no fraction bits, so the addition itself rounds.
inline double round_even(double x) {
  constexpr double magic = 6755399441055744.0;  // 1.5 · 2^52 (not folded: no -ffast-math)
  return (x + magic) - magic;
}

#if defined(LUCIDQ_X86_KERNELS)
// RequantizeStage::apply's row loop, 8 outputs per step (the baseline build vectorizes it 2
// wide, with scalar tails): the same double operations in the same order, so the same bytes.
// max / min equal the loop's comparisons as no value is NaN. (The maskz forms with a full
// mask avoid GCC 12's -Wmaybe-uninitialized on the unmasked intrinsics.)
[[gnu::target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")]] void requantize_row_avx512(
    const std::int32_t* in, const double* bias, const double* m, const double* o, std::uint8_t* out,
    std::int64_t cols, const double (&bounds)[5]) {
  const __m512d below = _mm512_set1_pd(bounds[0]), above = _mm512_set1_pd(bounds[1]);
  const __m512d low = _mm512_set1_pd(bounds[2]), high = _mm512_set1_pd(bounds[3]);
  const __m512d z = _mm512_set1_pd(bounds[4]);
  const __m512d magic = _mm512_set1_pd(6755399441055744.0);
  for (std::int64_t j = 0; j < cols; j += 8) {
    const auto mask = static_cast<__mmask8>(cols - j >= 8 ? 0xff : (1u << (cols - j)) - 1);
    const __m512d acc = _mm512_maskz_cvtepi32_pd(0xff, _mm256_maskz_loadu_epi32(mask, in + j));
    const __m512d sum = _mm512_add_pd(acc, _mm512_maskz_loadu_pd(mask, bias + j));
    const __m512d product = _mm512_mul_pd(sum, _mm512_maskz_loadu_pd(mask, m + j));
    __m512d x = _mm512_add_pd(product, _mm512_maskz_loadu_pd(mask, o + j));
    x = _mm512_maskz_min_pd(0xff, _mm512_maskz_max_pd(0xff, x, below), above);
    __m512d q = _mm512_sub_pd(_mm512_add_pd(x, magic), magic);
    q = _mm512_add_pd(_mm512_maskz_min_pd(0xff, _mm512_maskz_max_pd(0xff, q, low), high), z);
    _mm256_mask_cvtepi32_storeu_epi8(out + j, mask, _mm512_maskz_cvttpd_epi32(0xff, q));
  }
}
#endif

}  // namespace

void Int32Stage::apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
                       std::int64_t col_end, const std::int32_t* acc,
                       std::int64_t acc_stride) const {
  const auto bytes = static_cast<std::size_t>(col_end - col_begin) * sizeof(std::int32_t);
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(c_.data + (row_begin + r) * c_.row_stride + col_begin, acc + r * acc_stride, bytes);
}

void FloatStage::apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
                       std::int64_t col_end, const std::int32_t* acc,
                       std::int64_t acc_stride) const {
  const std::int64_t cols = col_end - col_begin;
  const float* ws = w_scales_ + col_begin;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float sa = a_scales_[per_row_ ? row_begin + r : 0];
    const std::int32_t* in = acc + r * acc_stride;
    float* out = c_.data + (row_begin + r) * c_.row_stride + col_begin;
    if (c_.bias != nullptr) {
      const float* bias = c_.bias + col_begin;
      for (std::int64_t j = 0; j < cols; ++j) {
        const float scaled = static_cast<float>(in[j]) * (sa * ws[j]);
        out[j] = scaled + bias[j];
      }
    } else {
      for (std::int64_t j = 0; j < cols; ++j)
        out[j] = static_cast<float>(in[j]) * (sa * ws[j]);
    }
  }
}

RequantizeStage::RequantizeStage(const RequantizedOutput& c, float a_scale,
                                 const std::vector<float>& w_scales)
    : c_(c),
      bias_(w_scales.size(), 0.0),
      multiplier_(w_scales.size()),
      offset_(w_scales.size(), 0.0) {
  for (std::size_t n = 0; n < w_scales.size(); ++n) {
    multiplier_[n] = static_cast<double>(a_scale) * static_cast<double>(w_scales[n]) /
                     static_cast<double>(c.scale);
    if (c.bias != nullptr)
      offset_[n] = static_cast<double>(c.bias[n]) / static_cast<double>(c.scale);
    if (c.bias_int32 != nullptr) bias_[n] = static_cast<double>(c.bias_int32[n]);
  }
  const auto low = std::max<std::int64_t>(c.qdtype.quant_min(), c.relu ? c.zero_point : INT64_MIN);
  low_ = static_cast<double>(low - c.zero_point);
  high_ = static_cast<double>(c.qdtype.quant_max() - c.zero_point);
}

void RequantizeStage::apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
                            std::int64_t col_end, const std::int32_t* acc,
                            std::int64_t acc_stride) const {
  const std::int64_t cols = col_end - col_begin;
  const double* bias = bias_.data() + col_begin;
  const double* m = multiplier_.data() + col_begin;
  const double* o = offset_.data() + col_begin;
  const auto z = static_cast<double>(c_.zero_point);
  const double below = low_ - 1.0, above = high_ + 1.0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t* in = acc + r * acc_stride;
    auto* out = static_cast<std::uint8_t*>(c_.data) + (row_begin + r) * c_.row_stride + col_begin;
#if defined(LUCIDQ_X86_KERNELS)
    if (active_isa() == Isa::avx512) {
      requantize_row_avx512(in, bias, m, o, out, cols, {below, above, low_, high_, z});
      continue;
    }
#endif
    for (std::int64_t j = 0; j < cols; ++j) {
      // double(acc + bias_int32) is exactly double(acc) + double(bias_int32): both
      // are below 2^31 in magnitude, so their sum needs at most 33 bits.
      const double sum = static_cast<double>(in[j]) + bias[j];
      const double product = sum * m[j];
      double x = product + o[j];
      // Clamping first to a bound outside the grid changes nothing after rounding
      // and keeps |x| small enough for round_even (x is finite: every input is).
      x = x < below ? below : x;
      x = x > above ? above : x;
      double q = round_even(x);
      q = q < low_ ? low_ : q;
      q = q > high_ ? high_ : q;
      // The code's low byte is the int8 or uint8 storage alike.
      out[j] = static_cast<std::uint8_t>(static_cast<std::int32_t>(q + z));
    }
  }
}

}  // namespace lucid::quantization::igemm
