// AVX-512 range kernels: min / max and abs-max of the finite elements, 16 lanes at a time,
// with a fast path for blocks that hold no NaN or Inf.
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/simd.hpp"

namespace lucid::quantization::kernels::avx512 {
namespace {

// Lanes of `m` holding a finite value (NaN compares false).
inline __mmask16 finite_lanes(__m512 v, __mmask16 m) {
  return _mm512_mask_cmp_ps_mask(m, _mm512_abs_ps(v), _mm512_set1_ps(__builtin_inff()), _CMP_LT_OQ);
}

inline std::int64_t count_missing(__mmask16 m, __mmask16 finite) {
  return __builtin_popcount(static_cast<unsigned>(m & ~finite));
}

// Elements per block of the fast loops: 8 rounds of 4 vectors.
constexpr std::int64_t block = 8 * 4 * lanes;

// The exact path: min / max of the finite elements of [k, k + count) into lo / hi
// (count a multiple of 16, or the tail); returns how many were not finite.
template <FloatType T>
std::int64_t minmax_exact(const void* x, std::int64_t k, std::int64_t count, __m512& lo,
                          __m512& hi) {
  std::int64_t nonfinite = 0;
  for (const std::int64_t end = k + count; k < end; k += lanes) {
    const __mmask16 m = first_lanes(end - k);
    const __m512 v = load16<T>(x, k, m);
    const __mmask16 finite = finite_lanes(v, m);
    lo = _mm512_mask_min_ps(lo, finite, lo, v);
    hi = _mm512_mask_max_ps(hi, finite, hi, v);
    nonfinite += count_missing(m, finite);
  }
  return nonfinite;
}

// Whole blocks take a plain min / max over four accumulators per bound, plus
// v * 0 summed into `bad` (0 for finite v, NaN for Inf or NaN): one FMA per
// vector instead of a finiteness test per lane. A block whose sum is NaN is
// discarded and re-run on the exact path. min and max are exact and order-free,
// so blocks, accumulators and the re-run leave the result unchanged (up to the
// sign of a zero, which the reference leaves unspecified too).
template <FloatType T>
std::int64_t minmax__avx512(const void* x, std::int64_t n, float* min, float* max) {
  __m512 lo = _mm512_set1_ps(*min);
  __m512 hi = _mm512_set1_ps(*max);
  const __m512 zero = _mm512_setzero_ps();
  std::int64_t nonfinite = 0;
  std::int64_t k = 0;
  for (; k + block <= n; k += block) {
    __m512 l[4] = {lo, lo, lo, lo}, h[4] = {hi, hi, hi, hi}, bad[4] = {zero, zero, zero, zero};
    for (std::int64_t j = k; j < k + block; j += 4 * lanes) {
      for (int a = 0; a < 4; ++a) {
        __m512 v = load16<T>(x, j + a * lanes, 0xffff);
        asm("" : "+v"(v));  // one load into a register, not three memory operands
        l[a] = _mm512_min_ps(l[a], v);
        h[a] = _mm512_max_ps(h[a], v);
        bad[a] = _mm512_fmadd_ps(v, zero, bad[a]);
      }
    }
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(bad[0], bad[1]), _mm512_add_ps(bad[2], bad[3]));
    if (_mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q) == 0) {
      lo = _mm512_min_ps(_mm512_min_ps(l[0], l[1]), _mm512_min_ps(l[2], l[3]));
      hi = _mm512_max_ps(_mm512_max_ps(h[0], h[1]), _mm512_max_ps(h[2], h[3]));
    } else {
      nonfinite += minmax_exact<T>(x, k, block, lo, hi);
    }
  }
  nonfinite += minmax_exact<T>(x, k, n - k, lo, hi);
  *min = _mm512_reduce_min_ps(lo);
  *max = _mm512_reduce_max_ps(hi);
  return nonfinite;
}

template <FloatType T>
std::int64_t minmax_vec__avx512(const void* x, std::int64_t n, float* mins, float* maxs) {
  std::int64_t nonfinite = 0;
  for (std::int64_t k = 0; k < n; k += lanes) {
    const __mmask16 m = first_lanes(n - k);
    const __m512 v = load16<T>(x, k, m);
    const __mmask16 finite = finite_lanes(v, m);
    const __m512 lo = _mm512_maskz_loadu_ps(m, mins + k);
    const __m512 hi = _mm512_maskz_loadu_ps(m, maxs + k);
    _mm512_mask_storeu_ps(mins + k, m, _mm512_mask_min_ps(lo, finite, lo, v));
    _mm512_mask_storeu_ps(maxs + k, m, _mm512_mask_max_ps(hi, finite, hi, v));
    nonfinite += count_missing(m, finite);
  }
  return nonfinite;
}

// The exact path for abs_max, as minmax_exact.
template <FloatType T>
std::int64_t abs_max_exact(const void* x, std::int64_t k, std::int64_t count, __m512& top) {
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  std::int64_t nonfinite = 0;
  for (const std::int64_t end = k + count; k < end; k += lanes) {
    const __mmask16 m = first_lanes(end - k);
    const __m512 v = _mm512_abs_ps(load16<T>(x, k, m));
    const __mmask16 finite = _mm512_mask_cmp_ps_mask(m, v, inf, _CMP_LT_OQ);
    top = _mm512_mask_max_ps(top, finite, top, v);
    nonfinite += count_missing(m, finite);
  }
  return nonfinite;
}

// |x| as bits orders like |x| as floats, with Inf above every finite value and
// NaN above Inf: an unsigned integer max over a block is its abs-max, and a
// result of Inf's bits or more means the block held a non-finite value and is
// re-run on the exact path.
template <FloatType T>
std::int64_t abs_max__avx512(const void* x, std::int64_t n, float* abs_max) {
  __m512 top = _mm512_set1_ps(*abs_max);
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf_bits = _mm512_set1_epi32(0x7f800000);
  std::int64_t nonfinite = 0;
  std::int64_t k = 0;
  for (; k + block <= n; k += block) {
    __m512i t[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
    for (std::int64_t j = k; j < k + block; j += 4 * lanes) {
      for (int a = 0; a < 4; ++a) {
        const __m512i bits = _mm512_castps_si512(load16<T>(x, j + a * lanes, 0xffff));
        t[a] = _mm512_max_epu32(t[a], _mm512_and_si512(bits, magnitude));
      }
    }
    const __m512i m = _mm512_max_epu32(_mm512_max_epu32(t[0], t[1]), _mm512_max_epu32(t[2], t[3]));
    if (_mm512_cmpge_epu32_mask(m, inf_bits) == 0) {
      top = _mm512_max_ps(top, _mm512_castsi512_ps(m));
    } else {
      nonfinite += abs_max_exact<T>(x, k, block, top);
    }
  }
  nonfinite += abs_max_exact<T>(x, k, n - k, top);
  *abs_max = _mm512_reduce_max_ps(top);
  return nonfinite;
}

template <FloatType T>
std::int64_t abs_max_vec__avx512(const void* x, std::int64_t n, float* abs_maxs) {
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  std::int64_t nonfinite = 0;
  for (std::int64_t k = 0; k < n; k += lanes) {
    const __mmask16 m = first_lanes(n - k);
    const __m512 v = _mm512_abs_ps(load16<T>(x, k, m));
    const __mmask16 finite = _mm512_mask_cmp_ps_mask(m, v, inf, _CMP_LT_OQ);
    const __m512 top = _mm512_maskz_loadu_ps(m, abs_maxs + k);
    _mm512_mask_storeu_ps(abs_maxs + k, m, _mm512_mask_max_ps(top, finite, top, v));
    nonfinite += count_missing(m, finite);
  }
  return nonfinite;
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.minmax[t] = minmax__avx512<T>;
  table.minmax_vec[t] = minmax_vec__avx512<T>;
  table.abs_max[t] = abs_max__avx512<T>;
  table.abs_max_vec[t] = abs_max_vec__avx512<T>;
}

}  // namespace

void fill_range_kernels(KernelTable& table) {
  fill_for_input<FloatType::f32>(table);
  fill_for_input<FloatType::f16>(table);
  fill_for_input<FloatType::bf16>(table);
}

}  // namespace lucid::quantization::kernels::avx512
