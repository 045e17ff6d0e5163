// Internal, AVX-512 files only: affine parameters for 16 lanes, uniform or per element.
#pragma once

#include "kernels/avx512/simd.hpp"

namespace lucid::quantization::kernels::avx512 {
namespace {

/// The parameters of 16 consecutive elements. lo / hi are the grid bounds
/// minus the zero point, so clamping nearbyint(x * inv) to them and adding
/// the zero point equals clamping the code to the grid; they are exact in
/// float32 for grids of at most 16 bits.
struct Lanes {
  __m512 inv;
  __m512 scale;
  __m512i zero;
  __m512 lo;
  __m512 hi;
};

inline Lanes make_lanes(__m512 inv, __m512 scale, __m512i zero, Grid grid) {
  const __m512i qmin = _mm512_set1_epi32(grid.quant_min);
  const __m512i qmax = _mm512_set1_epi32(grid.quant_max);
  return {inv, scale, zero, _mm512_cvtepi32_ps(_mm512_sub_epi32(qmin, zero)),
          _mm512_cvtepi32_ps(_mm512_sub_epi32(qmax, zero))};
}

/// One (scale, zero point) for every element.
struct Uniform {
  Lanes lanes;
  Uniform(Affine p, Grid grid)
      : lanes(make_lanes(_mm512_set1_ps(p.inv_scale), _mm512_set1_ps(p.scale),
                         _mm512_set1_epi32(p.zero_point), grid)) {}
  Lanes at(std::int64_t, __mmask16) const { return lanes; }
};

/// Element k uses inv_scale[k], scale[k] (may be null when unused), zero_point[k].
struct PerElement {
  const float* inv_scale;
  const float* scale;
  const std::int32_t* zero_point;
  Grid grid;
  Lanes at(std::int64_t k, __mmask16 m) const {
    const __m512 s = scale ? _mm512_maskz_loadu_ps(m, scale + k) : _mm512_setzero_ps();
    return make_lanes(_mm512_maskz_loadu_ps(m, inv_scale + k), s,
                      _mm512_maskz_loadu_epi32(m, zero_point + k), grid);
  }
};

}  // namespace
}  // namespace lucid::quantization::kernels::avx512
