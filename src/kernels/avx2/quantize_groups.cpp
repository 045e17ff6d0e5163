// AVX2 fused per-group quantize kernels: the codes of many groups per call, each group with its
// own parameters (8-bit or packed 4-bit), and the parameters of 8 groups at a time from their
// ranges.
#include "kernels/avx2/byte_codes.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/qparams_spec.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

// Where the per-group loops put the 32 codes (bytes, in order) of element k of the call: as
// bytes, or as 4-bit fields two per byte (fold_nibbles; k is a multiple of 32).
struct ByteCodes {
  std::int8_t* codes;
  void put(std::int64_t k, __m256i bytes) const { store_bytes32<false>(codes + k, bytes); }
};
struct NibbleCodes {
  std::uint8_t* packed;
  void put(std::int64_t k, __m256i bytes) const {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(packed + k / 2), fold_nibbles(bytes));
  }
};

// Groups of `size` (V * 32 elements, or group_size when V is 0) through clamped_bytes32, the
// grid's bounds minus the zero point converted once per change of zero point (once per call for
// symmetric schemes).
template <FloatType T, int V, class Out>
void group_codes(const void* x, std::int64_t groups, std::int64_t group_size,
                 const float* inv_scale, const std::int32_t* zero_point, Grid grid, Out out) {
  const std::int64_t size = V > 0 ? V * 4 * lanes : group_size;
  std::int32_t z = zero_point[0];
  __m256 lo = _mm256_set1_ps(static_cast<float>(grid.quant_min - z));
  __m256 hi = _mm256_set1_ps(static_cast<float>(grid.quant_max - z));
  __m256i zero16 = _mm256_set1_epi16(static_cast<std::int16_t>(z));
  for (std::int64_t g = 0; g < groups; ++g) {
    if (zero_point[g] != z) {
      z = zero_point[g];
      lo = _mm256_set1_ps(static_cast<float>(grid.quant_min - z));
      hi = _mm256_set1_ps(static_cast<float>(grid.quant_max - z));
      zero16 = _mm256_set1_epi16(static_cast<std::int16_t>(z));
    }
    const __m256 inv = _mm256_set1_ps(inv_scale[g]);
    for (std::int64_t k = g * size; k < (g + 1) * size; k += 4 * lanes)
      out.put(k, clamped_bytes32<T>(x, k, inv, lo, hi, zero16));
  }
}

// group_codes on saturating_bytes32 (no float clamp) with the rule R; when R.track and a packed
// step reached -32768 (NaN, huge values) the whole call is redone by group_codes. Prefetches the
// input after the call's groups (a hint: never faults).
template <FloatType T, int V, ByteRule R, class Out>
void saturating_group_codes(const void* x, std::int64_t groups, std::int64_t group_size,
                            const float* inv_scale, const std::int32_t* zero_point, Grid grid,
                            Out out) {
  const std::int64_t size = V > 0 ? V * 4 * lanes : group_size;
  ByteGrid bytes = byte_grid(zero_point[0], grid);
  __m256i lowest = _mm256_set1_epi16(32767);
  for (std::int64_t g = 0; g < groups; ++g) {
    if (R.add_zero && g > 0 && zero_point[g] != zero_point[g - 1])
      bytes.zero16 = _mm256_set1_epi16(static_cast<std::int16_t>(zero_point[g]));
    const __m256 inv = _mm256_set1_ps(inv_scale[g]);
    // The group as far ahead as the call reaches, into L1, where the next run's range pass reads
    // it: memory keeps streaming while the codes are computed from cache (about 10 % less time at
    // 256 MB; L1 rather than L2: g128 at 256 MB 14 % less again, docs/performance.md).
    const char* ahead = static_cast<const char*>(input_at<T>(x, (groups + g) * size));
    for (std::int64_t b = 0; b < size * (T == FloatType::f32 ? 4 : 2); b += 64)
      _mm_prefetch(ahead + b, _MM_HINT_T0);
    for (std::int64_t k = g * size; k < (g + 1) * size; k += 4 * lanes)
      out.put(k, saturating_bytes32<T, R>(x, k, inv, bytes, lowest));
  }
  if (R.track && saturated(lowest))
    group_codes<T, V>(x, groups, group_size, inv_scale, zero_point, grid, out);
}

// Whether zero_point[0 .. groups) are all 0: their bits or-ed 8 at a time.
inline bool all_zero(const std::int32_t* zero_point, std::int64_t groups) {
  __m256i bits = _mm256_setzero_si256();
  std::int64_t g = 0;
  for (; g + lanes <= groups; g += lanes)
    bits =
        _mm256_or_si256(bits, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point + g)));
  std::int32_t rest = 0;
  for (; g < groups; ++g)
    rest |= zero_point[g];
  return rest == 0 && _mm256_testz_si256(bits, bits);
}

// saturating_group_codes with the rule the call allows: no check of the steps when the values
// lie in their groups' own ranges, no zero point added when every zero point is 0 (symmetric
// signed grids; affine ones over values that are never negative). Two to four instructions fewer
// per 32 codes of about 20: the codes pass over 512 KB about 11 % less time (docs/performance.md,
// "Elementwise").
template <FloatType T, int V, bool Signed, bool Clamp, class Out>
void group_codes_for_values(const void* x, std::int64_t groups, std::int64_t group_size,
                            const float* inv_scale, const std::int32_t* zero_point, Grid grid,
                            GroupValues values, Out out) {
  const bool track = values == GroupValues::any, add_zero = !all_zero(zero_point, groups);
  const auto run = [&]<ByteRule R>() {
    saturating_group_codes<T, V, R>(x, groups, group_size, inv_scale, zero_point, grid, out);
  };
  if (track) {
    add_zero ? run.template operator()<ByteRule{Signed, Clamp, true, true}>()
             : run.template operator()<ByteRule{Signed, Clamp, true, false}>();
  } else {
    add_zero ? run.template operator()<ByteRule{Signed, Clamp, false, true}>()
             : run.template operator()<ByteRule{Signed, Clamp, false, false}>();
  }
}

template <FloatType T, int V, class Out>
void group_codes_for_grid(const void* x, std::int64_t groups, std::int64_t group_size,
                          const float* inv_scale, const std::int32_t* zero_point, Grid grid,
                          GroupValues values, Out out) {
  const auto codes = [&]<bool Signed, bool Clamp>() {
    group_codes_for_values<T, V, Signed, Clamp>(x, groups, group_size, inv_scale, zero_point, grid,
                                                values, out);
  };
  if (grid.quant_min < 0) {
    grid.quant_min == -128 && grid.quant_max == 127 ? codes.template operator()<true, false>()
                                                    : codes.template operator()<true, true>();
  } else {
    grid.quant_min == 0 && grid.quant_max == 255 ? codes.template operator()<false, false>()
                                                 : codes.template operator()<false, true>();
  }
}

// group_codes_for_grid unrolled for the common group sizes 32, 64 and 128; group_size a multiple
// of 32.
template <FloatType T, class Out>
void group_codes_by_size(const void* x, std::int64_t groups, std::int64_t group_size,
                         const float* inv_scale, const std::int32_t* zero_point, Grid grid,
                         GroupValues values, Out out) {
  if (group_size == 32) {
    group_codes_for_grid<T, 1>(x, groups, group_size, inv_scale, zero_point, grid, values, out);
  } else if (group_size == 64) {
    group_codes_for_grid<T, 2>(x, groups, group_size, inv_scale, zero_point, grid, values, out);
  } else if (group_size == 128) {
    group_codes_for_grid<T, 4>(x, groups, group_size, inv_scale, zero_point, grid, values, out);
  } else {
    group_codes_for_grid<T, 0>(x, groups, group_size, inv_scale, zero_point, grid, values, out);
  }
}

// The tier's quantize kernel for 8-bit codes of T (src/kernels/avx2/quantize.cpp).
template <FloatType T>
QuantizeFn bytes_kernel() {
  return avx2_table().quantize[static_cast<int>(T)][static_cast<int>(CodeWidth::b8)];
}

// Groups of a multiple of 32 elements go through group_codes_for_grid (unrolled for 32, 64 and
// 128); other sizes go group by group through the tier's quantize kernel. The grid fits 8 bits.
template <FloatType T>
void quantize_groups__avx2(const void* x, std::int64_t groups, std::int64_t group_size,
                           const float* inv_scale, const float* scale,
                           const std::int32_t* zero_point, Grid grid, GroupValues values,
                           std::int8_t* codes) {
  if (groups > 0 && group_size % (4 * lanes) == 0) {
    group_codes_by_size<T>(x, groups, group_size, inv_scale, zero_point, grid, values,
                           ByteCodes{codes});
    return;
  }
  const QuantizeFn quantize = bytes_kernel<T>();
  for (std::int64_t g = 0; g < groups; ++g) {
    quantize(input_at<T>(x, g * group_size), group_size,
             Affine{inv_scale[g], scale[g], zero_point[g]}, grid, codes + g * group_size);
  }
}

// quantize_groups__avx2 with the codes packed two per byte as they are made (no 8-bit pass in
// between); group sizes that are not a multiple of 32 go through a scratch, a group at a time.
template <FloatType T>
void quantize_groups_int4__avx2(const void* x, std::int64_t groups, std::int64_t group_size,
                                const float* inv_scale, const float* scale,
                                const std::int32_t* zero_point, Grid grid, GroupValues values,
                                std::uint8_t* packed) {
  if (groups > 0 && group_size % (4 * lanes) == 0) {
    group_codes_by_size<T>(x, groups, group_size, inv_scale, zero_point, grid, values,
                           NibbleCodes{packed});
    return;
  }
  quantize_groups_through_scratch(bytes_kernel<T>(), avx2_table().pack4, input_element_bytes<T>, x,
                                  groups, group_size, inv_scale, scale, zero_point, grid, packed);
}

// Zero points of 8 affine groups: clamp(qmin - nearbyint(min_neg / scale), qmin, qmax), the
// difference and the clamp in double as in the spec.
inline __m256i affine_zero_points(__m256 min_neg, __m256 scale, const RangeRule& rule) {
  const __m256 steps =
      _mm256_round_ps(_mm256_div_ps(min_neg, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256d qmin = _mm256_set1_pd(rule.quant_min), qmax = _mm256_set1_pd(rule.quant_max);
  const auto clamped = [&](__m128 half) {
    const __m256d shifted = _mm256_sub_pd(qmin, _mm256_cvtps_pd(half));
    return _mm256_cvtpd_epi32(_mm256_min_pd(qmax, _mm256_max_pd(qmin, shifted)));
  };
  return _mm256_inserti128_si256(_mm256_castsi128_si256(clamped(_mm256_castps256_ps128(steps))),
                                 clamped(_mm256_extractf128_ps(steps, 1)), 1);
}

// The spec (qparams_spec.hpp) 8 groups at a time. std::min(v, 0) is _mm256_min_ps(0, v) and
// std::max likewise (the same operand returned on ties, so the same zero signs); 8 groups whose
// affine scale overflowed float32 (the spec redoes it in double) and the last groups % 8 go
// through the scalar spec.
void group_qparams__avx2(const float* mins, const float* maxs, std::int64_t groups,
                         const RangeRule& rule, float* inverse, float* scales,
                         std::int32_t* zero_points) {
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  const __m256 eps = _mm256_set1_ps(rule.eps), inf = _mm256_set1_ps(__builtin_inff());
  const double span = static_cast<double>(rule.quant_max) - rule.quant_min;
  const __m256 divisor = _mm256_set1_ps(static_cast<float>(rule.symmetric ? span / 2.0 : span));
  const auto spec = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t g = begin; g < end; ++g) {
      const Affine p = group_affine(mins[g], maxs[g], rule);
      inverse[g] = p.inv_scale;
      scales[g] = p.scale;
      zero_points[g] = p.zero_point;
    }
  };
  std::int64_t g = 0;
  for (; g + lanes <= groups; g += lanes) {
    const __m256 lo = _mm256_loadu_ps(mins + g), hi = _mm256_loadu_ps(maxs + g);
    const __m256 none = _mm256_cmp_ps(lo, hi, _CMP_GT_OQ);  // saw nothing finite: [0, 0]
    const __m256 min_neg = _mm256_min_ps(zero, _mm256_andnot_ps(none, lo));
    const __m256 max_pos = _mm256_max_ps(zero, _mm256_andnot_ps(none, hi));
    __m256 scale;
    if (rule.symmetric) {
      const __m256 magnitude = _mm256_xor_ps(min_neg, _mm256_set1_ps(-0.0f));
      scale = _mm256_div_ps(_mm256_max_ps(max_pos, magnitude), divisor);
    } else {
      scale = _mm256_div_ps(_mm256_sub_ps(max_pos, min_neg), divisor);
      if (_mm256_movemask_ps(_mm256_cmp_ps(scale, inf, _CMP_EQ_OQ)) != 0) {
        spec(g, g + lanes);
        continue;
      }
    }
    scale = _mm256_max_ps(eps, scale);
    _mm256_storeu_ps(scales + g, scale);
    _mm256_storeu_ps(inverse + g, _mm256_div_ps(one, scale));
    const __m256i z = rule.symmetric ? _mm256_set1_epi32(rule.symmetric_zero_point)
                                     : affine_zero_points(min_neg, scale, rule);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(zero_points + g), z);
  }
  spec(g, groups);
}

template <FloatType T>
void fill_for_input(KernelTable& table) {
  const auto t = static_cast<int>(T);
  table.quantize_groups[t] = quantize_groups__avx2<T>;
  table.quantize_groups_int4[t] = quantize_groups_int4__avx2<T>;
}

}  // namespace

void fill_group_kernels(KernelTable& table) {
  table.group_qparams = group_qparams__avx2;
  fill_for_input<FloatType::f32>(table);
  fill_for_input<FloatType::f16>(table);
  fill_for_input<FloatType::bf16>(table);
}

}  // namespace lucid::quantization::kernels::avx2
