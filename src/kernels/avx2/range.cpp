// AVX2 range kernels: min / max and abs-max of the finite elements, 8 lanes at a time,
// with a fast path for blocks that hold no NaN or Inf; the last n % 8 elements go to the
// reference kernel.
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/simd.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

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

// Elements per block of the fast loops: 8 rounds of 4 vectors.
constexpr std::int64_t block = 8 * 4 * lanes;

// The exact path over [k, end) (whole vectors): non-finite lanes are replaced by
// +Inf for the min and -Inf for the max; returns the count of finite lanes.
template <FloatType T>
__m256i minmax_exact(const void* x, std::int64_t k, std::int64_t end, __m256& lo, __m256& hi,
                     __m256i finite_count) {
  const __m256 pos_inf = _mm256_set1_ps(__builtin_inff());
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  for (; k < end; k += lanes) {
    const __m256 v = load8<T>(x, k);
    const __m256 finite = finite_lanes(v);
    lo = _mm256_min_ps(lo, _mm256_blendv_ps(pos_inf, v, finite));
    hi = _mm256_max_ps(hi, _mm256_blendv_ps(neg_inf, v, finite));
    finite_count = count_finite(finite_count, finite);
  }
  return finite_count;
}

// Whole blocks take a plain min / max over four accumulators per bound, plus
// v * 0 summed into `bad` (0 for finite v, NaN for Inf or NaN); a block whose
// sum is NaN is re-run on the exact path (as in the AVX-512 kernel).
template <FloatType T>
std::int64_t minmax__avx2(const void* x, std::int64_t n, float* min, float* max) {
  __m256 lo = _mm256_set1_ps(*min);
  __m256 hi = _mm256_set1_ps(*max);
  const __m256 zero = _mm256_setzero_ps();
  __m256i finite_count = _mm256_setzero_si256();
  std::int64_t fast = 0;  // elements counted finite by the fast path
  std::int64_t k = 0;
  for (; k + block <= n; k += block) {
    __m256 l[4] = {lo, lo, lo, lo}, h[4] = {hi, hi, hi, hi}, bad[4] = {zero, zero, zero, zero};
    for (std::int64_t j = k; j < k + block; j += 4 * lanes) {
      for (int a = 0; a < 4; ++a) {
        __m256 v = load8<T>(x, j + a * lanes);
        asm("" : "+x"(v));  // one load into a register, not three memory operands
        l[a] = _mm256_min_ps(l[a], v);
        h[a] = _mm256_max_ps(h[a], v);
        bad[a] = _mm256_fmadd_ps(v, zero, bad[a]);
      }
    }
    const __m256 sum = _mm256_add_ps(_mm256_add_ps(bad[0], bad[1]), _mm256_add_ps(bad[2], bad[3]));
    if (_mm256_movemask_ps(_mm256_cmp_ps(sum, sum, _CMP_UNORD_Q)) == 0) {
      lo = _mm256_min_ps(_mm256_min_ps(l[0], l[1]), _mm256_min_ps(l[2], l[3]));
      hi = _mm256_max_ps(_mm256_max_ps(h[0], h[1]), _mm256_max_ps(h[2], h[3]));
      fast += block;
    } else {
      finite_count = minmax_exact<T>(x, k, k + block, lo, hi, finite_count);
    }
  }
  const std::int64_t vectors_end = n - n % lanes;
  finite_count = minmax_exact<T>(x, k, vectors_end, lo, hi, finite_count);
  *min = horizontal_min(lo);
  *max = horizontal_max(hi);
  const std::int64_t nonfinite = vectors_end - fast - sum(finite_count);
  if (vectors_end == n) return nonfinite;
  return nonfinite + reference_table().minmax[static_cast<int>(T)](input_at<T>(x, vectors_end),
                                                                   n - vectors_end, min, max);
}

// One vector per bound for 8 groups: lane g is op over the 8 lanes of v[g] (three rounds of
// pairwise op; the pairing (g, g + 4) leaves the results in group order).
template <class Op>
inline __m256 reduce_lanes8(const __m256 (&v)[8], Op op) {
  __m256 p[4];
  for (int i = 0; i < 4; ++i) {  // lanes 0-3: group i, 4-7: group i + 4
    p[i] = op(_mm256_permute2f128_ps(v[i], v[i + 4], 0x20),
              _mm256_permute2f128_ps(v[i], v[i + 4], 0x31));
  }
  __m256 q[2];
  for (int i = 0; i < 2; ++i) {  // lanes 0-1: group 2i, 2-3: 2i + 1; 4-7 likewise + 4
    q[i] = op(_mm256_shuffle_ps(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm256_shuffle_ps(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  return op(_mm256_shuffle_ps(q[0], q[1], _MM_SHUFFLE(2, 0, 2, 0)),
            _mm256_shuffle_ps(q[0], q[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// Plain min / max of one group of whole vectors, two vectors a step; `unordered` collects the
// lanes where either vector of a pair was NaN.
template <FloatType T>
inline void group_bounds(const void* x, std::int64_t begin, std::int64_t end, __m256& lo,
                         __m256& hi, __m256& unordered) {
  std::int64_t k = begin;
  if ((end - begin) % (2 * lanes) != 0) {
    const __m256 v = load8<T>(x, k);
    lo = v;
    hi = v;
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    k += lanes;
  } else {
    const __m256 a = load8<T>(x, k), b = load8<T>(x, k + lanes);
    lo = _mm256_min_ps(a, b);
    hi = _mm256_max_ps(a, b);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
    k += 2 * lanes;
  }
  for (; k < end; k += 2 * lanes) {
    const __m256 a = load8<T>(x, k), b = load8<T>(x, k + lanes);
    lo = _mm256_min_ps(lo, _mm256_min_ps(a, b));
    hi = _mm256_max_ps(hi, _mm256_max_ps(a, b));
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
}

// One group on the exact path (non-finite lanes skipped).
template <FloatType T>
inline void exact_group(const void* x, std::int64_t begin, std::int64_t end, float* min,
                        float* max) {
  __m256 lo = _mm256_set1_ps(__builtin_inff()), hi = _mm256_set1_ps(-__builtin_inff());
  minmax_exact<T>(x, begin, end, lo, hi, _mm256_setzero_si256());
  *min = horizontal_min(lo);
  *max = horizontal_max(hi);
}

// Whole batches of 8 groups of whole vectors (V of them, or group_size / 8 when V is 0): a plain
// min / max per group (group_bounds), the 8 results reduced into one vector per bound
// (reduce_lanes8); a batch that holds a NaN (a lane `unordered`) or an infinity (a bound at
// +-Inf: the plain min / max keep infinities) is re-run on the exact path, and clears `finite`.
// Returns the groups done.
template <FloatType T, int V>
std::int64_t group_batches(const void* x, std::int64_t groups, std::int64_t group_size, float* mins,
                           float* maxs, bool& finite) {
  const std::int64_t size = V > 0 ? V * lanes : group_size;
  const __m256 pos_inf = _mm256_set1_ps(__builtin_inff());
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  std::int64_t g = 0;
  for (; g + lanes <= groups; g += lanes) {
    __m256 lo[lanes], hi[lanes], unordered = _mm256_setzero_ps();
    for (int i = 0; i < lanes; ++i) {
      const std::int64_t begin = (g + i) * size;
      group_bounds<T>(x, begin, begin + size, lo[i], hi[i], unordered);
    }
    const __m256 low = reduce_lanes8(lo, [](__m256 a, __m256 b) { return _mm256_min_ps(a, b); });
    const __m256 high = reduce_lanes8(hi, [](__m256 a, __m256 b) { return _mm256_max_ps(a, b); });
    const __m256 infinite = _mm256_or_ps(_mm256_cmp_ps(low, neg_inf, _CMP_EQ_OQ),
                                         _mm256_cmp_ps(high, pos_inf, _CMP_EQ_OQ));
    if (_mm256_movemask_ps(_mm256_or_ps(unordered, infinite)) == 0) {
      _mm256_storeu_ps(mins + g, low);
      _mm256_storeu_ps(maxs + g, high);
      continue;
    }
    finite = false;
    for (int i = 0; i < lanes; ++i) {
      const std::int64_t begin = (g + i) * size;
      exact_group<T>(x, begin, begin + size, mins + g + i, maxs + g + i);
    }
  }
  return g;
}

// Groups of whole vectors go in batches of 8 (group_batches, unrolled for the common sizes 32,
// 64 and 128), the last groups % 8 one by one; other group sizes go group by group through
// minmax__avx2.
template <FloatType T>
bool minmax_groups__avx2(const void* x, std::int64_t groups, std::int64_t group_size, float* mins,
                         float* maxs) {
  if (group_size % lanes != 0) {
    std::int64_t nonfinite = 0;
    for (std::int64_t g = 0; g < groups; ++g) {
      mins[g] = __builtin_inff();
      maxs[g] = -__builtin_inff();
      nonfinite += minmax__avx2<T>(input_at<T>(x, g * group_size), group_size, mins + g, maxs + g);
    }
    return nonfinite == 0;
  }
  bool finite = true;
  const std::int64_t done =
      group_size == 32    ? group_batches<T, 4>(x, groups, group_size, mins, maxs, finite)
      : group_size == 64  ? group_batches<T, 8>(x, groups, group_size, mins, maxs, finite)
      : group_size == 128 ? group_batches<T, 16>(x, groups, group_size, mins, maxs, finite)
                          : group_batches<T, 0>(x, groups, group_size, mins, maxs, finite);
  for (std::int64_t g = done; g < groups; ++g) {
    const std::int64_t begin = g * group_size;
    __m256 lo, hi, unordered = _mm256_setzero_ps();
    group_bounds<T>(x, begin, begin + group_size, lo, hi, unordered);
    const float min = horizontal_min(lo), max = horizontal_max(hi);
    if (_mm256_movemask_ps(unordered) == 0 && min != -__builtin_inff() && max != __builtin_inff()) {
      mins[g] = min;
      maxs[g] = max;
    } else {
      finite = false;
      exact_group<T>(x, begin, begin + group_size, mins + g, maxs + g);
    }
  }
  return finite;
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

// The exact path for abs_max over [k, end): non-finite lanes contribute 0, which
// never raises an abs-max; returns the count of finite lanes.
template <FloatType T>
__m256i abs_max_exact(const void* x, std::int64_t k, std::int64_t end, __m256& top,
                      __m256i finite_count) {
  for (; k < end; k += lanes) {
    const __m256 v = absolute(load8<T>(x, k));
    const __m256 finite = _mm256_cmp_ps(v, _mm256_set1_ps(__builtin_inff()), _CMP_LT_OQ);
    top = _mm256_max_ps(top, _mm256_and_ps(v, finite));
    finite_count = count_finite(finite_count, finite);
  }
  return finite_count;
}

// |x| as bits orders like |x|, with Inf above every finite value and NaN above
// Inf: an unsigned integer max over a block is its abs-max, and a result of
// Inf's bits or more sends the block to the exact path (as in the AVX-512 kernel).
template <FloatType T>
std::int64_t abs_max__avx2(const void* x, std::int64_t n, float* abs_max) {
  __m256 top = _mm256_set1_ps(*abs_max);
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  const __m256i below_inf = _mm256_set1_epi32(0x7f7fffff);
  __m256i finite_count = _mm256_setzero_si256();
  std::int64_t fast = 0;
  std::int64_t k = 0;
  for (; k + block <= n; k += block) {
    __m256i t[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
    for (std::int64_t j = k; j < k + block; j += 4 * lanes) {
      for (int a = 0; a < 4; ++a) {
        const __m256i bits = _mm256_castps_si256(load8<T>(x, j + a * lanes));
        t[a] = _mm256_max_epu32(t[a], _mm256_and_si256(bits, magnitude));
      }
    }
    const __m256i m = _mm256_max_epu32(_mm256_max_epu32(t[0], t[1]), _mm256_max_epu32(t[2], t[3]));
    // m <= below_inf in every lane: max(m, below_inf) == below_inf.
    if (_mm256_testc_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(m, below_inf), below_inf),
                           _mm256_set1_epi32(-1))) {
      top = _mm256_max_ps(top, _mm256_castsi256_ps(m));
      fast += block;
    } else {
      finite_count = abs_max_exact<T>(x, k, k + block, top, finite_count);
    }
  }
  const std::int64_t vectors_end = n - n % lanes;
  finite_count = abs_max_exact<T>(x, k, vectors_end, top, finite_count);
  *abs_max = horizontal_max(top);
  const std::int64_t nonfinite = vectors_end - fast - sum(finite_count);
  if (vectors_end == n) return nonfinite;
  return nonfinite + reference_table().abs_max[static_cast<int>(T)](input_at<T>(x, vectors_end),
                                                                    n - vectors_end, abs_max);
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

// A group's magnitudes as bits (x & 0x7fffffff): their unsigned max is the group's abs-max when
// it is below Inf's bits; Inf and NaN are the patterns from 0x7f800000 up (as in abs_max__avx2).
template <FloatType T>
inline __m256i group_magnitudes(const void* x, std::int64_t begin, std::int64_t end) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  const auto bits = [&](std::int64_t k) {
    return _mm256_and_si256(_mm256_castps_si256(load8<T>(x, k)), magnitude);
  };
  __m256i top = bits(begin);
  for (std::int64_t k = begin + lanes; k < end; k += lanes)
    top = _mm256_max_epu32(top, bits(k));
  return top;
}

// Whether every lane of `top` (magnitude bits) is finite.
inline bool all_finite(__m256i top) {
  const __m256i below_inf = _mm256_set1_epi32(0x7f7fffff);
  return _mm256_testc_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(top, below_inf), below_inf),
                            _mm256_set1_epi32(-1));
}

// One group's abs-max over its finite elements, on the exact path.
template <FloatType T>
inline float exact_group_abs_max(const void* x, std::int64_t begin, std::int64_t end) {
  __m256 top = _mm256_setzero_ps();
  abs_max_exact<T>(x, begin, end, top, _mm256_setzero_si256());
  return horizontal_max(top);
}

// Whole batches of 8 groups of V vectors (group_size / 8 when V is 0): per group an unsigned max
// of magnitude bits, the 8 reduced into one vector (reduce_lanes8); a batch with an Inf or NaN is
// re-run on the exact path, and clears `finite`. Returns the groups done.
template <FloatType T, int V>
std::int64_t abs_max_batches(const void* x, std::int64_t groups, std::int64_t group_size,
                             float* abs_maxs, bool& finite) {
  const std::int64_t size = V > 0 ? V * lanes : group_size;
  const auto max_bits = [](__m256 a, __m256 b) {
    return _mm256_castsi256_ps(_mm256_max_epu32(_mm256_castps_si256(a), _mm256_castps_si256(b)));
  };
  std::int64_t g = 0;
  for (; g + lanes <= groups; g += lanes) {
    __m256 top[lanes];
    for (int i = 0; i < lanes; ++i) {
      const std::int64_t begin = (g + i) * size;
      top[i] = _mm256_castsi256_ps(group_magnitudes<T>(x, begin, begin + size));
    }
    const __m256 reduced = reduce_lanes8(top, max_bits);
    if (all_finite(_mm256_castps_si256(reduced))) {
      _mm256_storeu_ps(abs_maxs + g, reduced);
      continue;
    }
    finite = false;
    for (int i = 0; i < lanes; ++i) {
      const std::int64_t begin = (g + i) * size;
      abs_maxs[g + i] = exact_group_abs_max<T>(x, begin, begin + size);
    }
  }
  return g;
}

// For symmetric schemes, the one bound they need (calculate_qparams' max(-min(min, 0), max(max,
// 0)) is the abs-max): batches of 8 groups (abs_max_batches, unrolled for the common sizes 32, 64
// and 128), the last groups % 8 one by one; group sizes that are not a multiple of 8 go group by
// group through abs_max__avx2.
template <FloatType T>
bool abs_max_groups__avx2(const void* x, std::int64_t groups, std::int64_t group_size,
                          float* abs_maxs) {
  if (group_size % lanes != 0) {
    std::int64_t nonfinite = 0;
    for (std::int64_t g = 0; g < groups; ++g) {
      abs_maxs[g] = 0.0f;
      nonfinite += abs_max__avx2<T>(input_at<T>(x, g * group_size), group_size, abs_maxs + g);
    }
    return nonfinite == 0;
  }
  bool finite = true;
  const std::int64_t done =
      group_size == 32    ? abs_max_batches<T, 4>(x, groups, group_size, abs_maxs, finite)
      : group_size == 64  ? abs_max_batches<T, 8>(x, groups, group_size, abs_maxs, finite)
      : group_size == 128 ? abs_max_batches<T, 16>(x, groups, group_size, abs_maxs, finite)
                          : abs_max_batches<T, 0>(x, groups, group_size, abs_maxs, finite);
  for (std::int64_t g = done; g < groups; ++g) {
    const std::int64_t begin = g * group_size;
    const __m256i top = group_magnitudes<T>(x, begin, begin + group_size);
    if (all_finite(top)) {
      abs_maxs[g] = horizontal_max(_mm256_castsi256_ps(top));
    } else {
      finite = false;
      abs_maxs[g] = exact_group_abs_max<T>(x, begin, begin + group_size);
    }
  }
  return finite;
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.minmax[t] = minmax__avx2<T>;
  table.minmax_vec[t] = minmax_vec__avx2<T>;
  table.minmax_groups[t] = minmax_groups__avx2<T>;
  table.abs_max[t] = abs_max__avx2<T>;
  table.abs_max_groups[t] = abs_max_groups__avx2<T>;
  table.abs_max_vec[t] = abs_max_vec__avx2<T>;
}

}  // namespace

void fill_range_kernels(KernelTable& table) {
  fill_for_input<FloatType::f32>(table);
  fill_for_input<FloatType::f16>(table);
  fill_for_input<FloatType::bf16>(table);
}

}  // namespace lucid::quantization::kernels::avx2
