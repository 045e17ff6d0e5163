// Internal (histogram kernel files only): the loops behind kernels/histogram.hpp, one source for
// every variant.
//
// Every function is `static` and calls compiler builtins only (no standard-library inline
// functions), so each variant's file keeps its own copy and the linker can never hand one
// variant's instructions to another. The files compile with -fno-trapping-math: the selects
// below may then be if-converted and vectorised (values unchanged).
#pragma once

#include <cfloat>
#include <cstdint>

#include "kernels/affine_spec.hpp"

namespace lucid::quantization::kernels::histogram_loops {

// Branch-free so that it vectorises: every lane computes the quotient, the selects keep the
// lanes inside. ATen: pos = (int64)((elt - left) * bins / (right - left)); pos == bins ->
// bins - 1; a quotient beyond the grid (a range wider than float32, undefined in ATen) also
// lands in the last bin.
static void histc_indices(const float* v, std::int64_t m, float left, float right, float fbins,
                          std::int32_t skip, std::int32_t* idx) {
  const float width = right - left;
  const float last = fbins - 1.0f;
  for (std::int64_t j = 0; j < m; ++j) {
    const float value = v[j];
    const bool inside = (value >= left) & (value <= right);
    const float quotient = (value - left) * fbins / width;
    const float kept = inside ? quotient : 0.0f;
    const float clamped = kept < fbins ? kept : last;
    idx[j] = inside ? static_cast<std::int32_t>(clamped) : skip;
  }
}

// floor(y) for |y| < 2^51: round to nearest by adding and removing 1.5 · 2^52
// (round_half_even_shift), then step down where that rounded up. y = x · 2^-level is exact, and
// |y| < 2^25 · bins <= 2^49 (the grid spans at least one float32 ulp of max |x| over at most
// `bins` bins); floor − base is then an exact integer in [0, bins) for every x in [min, max].
static void grid_indices(const float* v, std::int64_t m, bool absolute, bool gridded, double scale,
                         double base, std::int32_t skip, std::int32_t* idx) {
  for (std::int64_t j = 0; j < m; ++j) {
    const float x = absolute ? __builtin_fabsf(v[j]) : v[j];
    const bool ok = __builtin_fabsf(x) <= FLT_MAX;
    const double y = ok && gridded ? static_cast<double>(x) * scale : base;
    const double nearest = (y + round_half_even_shift) - round_half_even_shift;
    const double floor = nearest > y ? nearest - 1.0 : nearest;
    idx[j] = ok ? static_cast<std::int32_t>(floor - base) : skip;
  }
}

// std::fmod(a, b) for b > 0 and |a / b| < 2^28, exactly and without a libm call: q · b is
// exact in double (24 + 28 bits), so is a − q · b, and one step fixes a truncated quotient
// that rounding carried across an integer.
static inline float fast_fmod(float a, float b) {
  const double wide_b = b;
  const double q = __builtin_trunc(static_cast<double>(a) / wide_b);
  double r = static_cast<double>(a) - q * wide_b;
  if (a >= 0.0f) {
    r = r < 0.0 ? r + wide_b : (r >= wide_b ? r - wide_b : r);
  } else {
    r = r > 0.0 ? r - wide_b : (r <= -wide_b ? r + wide_b : r);
  }
  return static_cast<float>(r);
}

static inline float libm_fmod(float a, float b) {
  return __builtin_fmodf(a, b);
}

// c10::div_floor_floating (PyTorch's float32 floor division), with `fmod` for the remainder.
template <float (*fmod)(float, float)>
static inline float div_floor(float a, float b) {
  const float mod = fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
  if (div == 0.0f) return __builtin_copysignf(0.0f, a / b);
  float floordiv = __builtin_floorf(div);
  if (div - floordiv > 0.5f) floordiv += 1.0f;
  return floordiv;
}

// std::clamp(x, lo, hi) for lo <= hi.
static inline float clamp(float x, float lo, float hi) {
  return x < lo ? lo : (hi < x ? hi : x);
}

// The per-bin terms of _compute_quantization_error, in float32 as torch's tensors compute
// them (every operation is the same IEEE float32 operation whichever variant runs).
template <float (*fmod)(float, float)>
static inline __attribute__((always_inline)) void l2_norms(const float* hist, std::int64_t bins,
                                                           std::int64_t start, float bw, float dbw,
                                                           float half, float neg_half,
                                                           float last_dst, float* norms) {
  const float full_bin_norm = (half * half * half - neg_half * neg_half * neg_half) / 3.0f;
  const float neg_half_cube = neg_half * neg_half * neg_half;
  const float half_cube = half * half * half;
  for (std::int64_t i = 0; i < bins; ++i) {
    const float src_begin = static_cast<float>(i - start) * bw;
    const float src_end = src_begin + bw;
    const float dst_begin = clamp(div_floor<fmod>(src_begin, dbw), 0.0f, last_dst);
    const float dst_begin_center = (dst_begin + 0.5f) * dbw;
    const float dst_end = clamp(div_floor<fmod>(src_end, dbw), 0.0f, last_dst);
    const float density = hist[i] / bw;
    const float delta_begin = src_begin - dst_begin_center;
    float norm = density * ((half_cube - delta_begin * delta_begin * delta_begin) / 3.0f);
    norm = norm + (dst_end - dst_begin - 1.0f) * (density * full_bin_norm);
    const float dst_end_center = dst_end * dbw + half;
    const float delta_end = src_end - dst_end_center;
    norm = norm + density * ((delta_end * delta_end * delta_end - neg_half_cube) / 3.0f);
    norms[i] = norm;
  }
}

}  // namespace lucid::quantization::kernels::histogram_loops
