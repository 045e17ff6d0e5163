// AVX2 range kernels: min / max and abs-max of the finite elements, 8 lanes at a time;
// the last n % 8 elements go to the reference kernel.
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/simd.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

template <FloatType T>
const void* input_at(const void* x, std::int64_t k) {
  return static_cast<const char*>(x) + k * (T == FloatType::f32 ? 4 : 2);
}

inline __m256 absolute(__m256 v) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// All-ones in the lanes holding a finite value (NaN compares false).
inline __m256 finite_lanes(__m256 v) {
  return _mm256_cmp_ps(absolute(v), _mm256_set1_ps(__builtin_inff()), _CMP_LT_OQ);
}

inline float horizontal_min(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

// Finite lanes counted in a vector (each finite lane adds 1: the mask is -1).
inline __m256i count_finite(__m256i counts, __m256 finite) {
  return _mm256_sub_epi32(counts, _mm256_castps_si256(finite));
}

inline std::int64_t sum(__m256i counts) {
  alignas(32) std::int32_t parts[lanes];
  _mm256_store_si256(reinterpret_cast<__m256i*>(parts), counts);
  std::int64_t total = 0;
  for (const std::int32_t part : parts)
    total += part;
  return total;
}

// Non-finite lanes are replaced by +Inf for the min and -Inf for the max.
template <FloatType T>
std::int64_t minmax__avx2(const void* x, std::int64_t n, float* min, float* max) {
  const __m256 pos_inf = _mm256_set1_ps(__builtin_inff());
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  __m256 lo = _mm256_set1_ps(*min);
  __m256 hi = _mm256_set1_ps(*max);
  __m256i finite_count = _mm256_setzero_si256();
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes) {
    const __m256 v = load8<T>(x, k);
    const __m256 finite = finite_lanes(v);
    lo = _mm256_min_ps(lo, _mm256_blendv_ps(pos_inf, v, finite));
    hi = _mm256_max_ps(hi, _mm256_blendv_ps(neg_inf, v, finite));
    finite_count = count_finite(finite_count, finite);
  }
  *min = horizontal_min(lo);
  *max = horizontal_max(hi);
  const std::int64_t nonfinite = k - sum(finite_count);
  if (k == n) return nonfinite;
  return nonfinite +
         reference_table().minmax[static_cast<int>(T)](input_at<T>(x, k), n - k, min, max);
}

template <FloatType T>
std::int64_t minmax_vec__avx2(const void* x, std::int64_t n, float* mins, float* maxs) {
  const __m256 pos_inf = _mm256_set1_ps(__builtin_inff());
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  __m256i finite_count = _mm256_setzero_si256();
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes) {
    const __m256 v = load8<T>(x, k);
    const __m256 finite = finite_lanes(v);
    _mm256_storeu_ps(
        mins + k, _mm256_min_ps(_mm256_loadu_ps(mins + k), _mm256_blendv_ps(pos_inf, v, finite)));
    _mm256_storeu_ps(
        maxs + k, _mm256_max_ps(_mm256_loadu_ps(maxs + k), _mm256_blendv_ps(neg_inf, v, finite)));
    finite_count = count_finite(finite_count, finite);
  }
  const std::int64_t nonfinite = k - sum(finite_count);
  if (k == n) return nonfinite;
  return nonfinite + reference_table().minmax_vec[static_cast<int>(T)](input_at<T>(x, k), n - k,
                                                                       mins + k, maxs + k);
}

// Non-finite lanes contribute 0, which never raises an abs-max.
template <FloatType T>
std::int64_t abs_max__avx2(const void* x, std::int64_t n, float* abs_max) {
  __m256 top = _mm256_set1_ps(*abs_max);
  __m256i finite_count = _mm256_setzero_si256();
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes) {
    const __m256 v = absolute(load8<T>(x, k));
    const __m256 finite = _mm256_cmp_ps(v, _mm256_set1_ps(__builtin_inff()), _CMP_LT_OQ);
    top = _mm256_max_ps(top, _mm256_and_ps(v, finite));
    finite_count = count_finite(finite_count, finite);
  }
  *abs_max = horizontal_max(top);
  const std::int64_t nonfinite = k - sum(finite_count);
  if (k == n) return nonfinite;
  return nonfinite +
         reference_table().abs_max[static_cast<int>(T)](input_at<T>(x, k), n - k, abs_max);
}

template <FloatType T>
std::int64_t abs_max_vec__avx2(const void* x, std::int64_t n, float* abs_maxs) {
  __m256i finite_count = _mm256_setzero_si256();
  std::int64_t k = 0;
  for (; k + lanes <= n; k += lanes) {
    const __m256 v = absolute(load8<T>(x, k));
    const __m256 finite = _mm256_cmp_ps(v, _mm256_set1_ps(__builtin_inff()), _CMP_LT_OQ);
    _mm256_storeu_ps(abs_maxs + k,
                     _mm256_max_ps(_mm256_loadu_ps(abs_maxs + k), _mm256_and_ps(v, finite)));
    finite_count = count_finite(finite_count, finite);
  }
  const std::int64_t nonfinite = k - sum(finite_count);
  if (k == n) return nonfinite;
  return nonfinite +
         reference_table().abs_max_vec[static_cast<int>(T)](input_at<T>(x, k), n - k, abs_maxs + k);
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.minmax[t] = minmax__avx2<T>;
  table.minmax_vec[t] = minmax_vec__avx2<T>;
  table.abs_max[t] = abs_max__avx2<T>;
  table.abs_max_vec[t] = abs_max_vec__avx2<T>;
}

}  // namespace

void fill_range_kernels(KernelTable& table) {
  fill_for_input<FloatType::f32>(table);
  fill_for_input<FloatType::f16>(table);
  fill_for_input<FloatType::bf16>(table);
}

}  // namespace lucid::quantization::kernels::avx2
