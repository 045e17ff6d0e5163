// AVX-512 range kernels: min / max and abs-max of the finite elements, 16 lanes at a time.
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

// Two accumulators per bound hide the latency of min / max; min and max are
// exact and order-free, so the split changes nothing.
template <FloatType T>
std::int64_t minmax__avx512(const void* x, std::int64_t n, float* min, float* max) {
  __m512 lo[2] = {_mm512_set1_ps(*min), _mm512_set1_ps(*min)};
  __m512 hi[2] = {_mm512_set1_ps(*max), _mm512_set1_ps(*max)};
  std::int64_t nonfinite = 0;
  std::int64_t k = 0;
  for (; k + 2 * lanes <= n; k += 2 * lanes) {
    for (int a = 0; a < 2; ++a) {
      const __m512 v = load16<T>(x, k + a * lanes, 0xffff);
      const __mmask16 finite = finite_lanes(v, 0xffff);
      lo[a] = _mm512_mask_min_ps(lo[a], finite, lo[a], v);
      hi[a] = _mm512_mask_max_ps(hi[a], finite, hi[a], v);
      nonfinite += count_missing(0xffff, finite);
    }
  }
  for (; k < n; k += lanes) {
    const __mmask16 m = first_lanes(n - k);
    const __m512 v = load16<T>(x, k, m);
    const __mmask16 finite = finite_lanes(v, m);
    lo[0] = _mm512_mask_min_ps(lo[0], finite, lo[0], v);
    hi[0] = _mm512_mask_max_ps(hi[0], finite, hi[0], v);
    nonfinite += count_missing(m, finite);
  }
  *min = _mm512_reduce_min_ps(_mm512_min_ps(lo[0], lo[1]));
  *max = _mm512_reduce_max_ps(_mm512_max_ps(hi[0], hi[1]));
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

template <FloatType T>
std::int64_t abs_max__avx512(const void* x, std::int64_t n, float* abs_max) {
  __m512 top[2] = {_mm512_set1_ps(*abs_max), _mm512_set1_ps(*abs_max)};
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  std::int64_t nonfinite = 0;
  std::int64_t k = 0;
  for (; k + 2 * lanes <= n; k += 2 * lanes) {
    for (int a = 0; a < 2; ++a) {
      const __m512 v = _mm512_abs_ps(load16<T>(x, k + a * lanes, 0xffff));
      const __mmask16 finite = _mm512_cmp_ps_mask(v, inf, _CMP_LT_OQ);
      top[a] = _mm512_mask_max_ps(top[a], finite, top[a], v);
      nonfinite += count_missing(0xffff, finite);
    }
  }
  for (; k < n; k += lanes) {
    const __mmask16 m = first_lanes(n - k);
    const __m512 v = _mm512_abs_ps(load16<T>(x, k, m));
    const __mmask16 finite = _mm512_mask_cmp_ps_mask(m, v, inf, _CMP_LT_OQ);
    top[0] = _mm512_mask_max_ps(top[0], finite, top[0], v);
    nonfinite += count_missing(m, finite);
  }
  *abs_max = _mm512_reduce_max_ps(_mm512_max_ps(top[0], top[1]));
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
