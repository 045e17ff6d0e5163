// Internal: ggml's scale searches run on W sub-blocks at once, one sub-block per lane, so the
// compiler vectorises across lanes while every lane does exactly the scalar float32 operations
// of src/kernels/reference/ggml_search.cpp in the same order (same bits: no reassociation, no FMA).
//
// Included only by the ISA tier files (kernels/avx2, kernels/avx512), each with its own flags.
// Everything here has internal linkage so each tier keeps its own instruction set.
// Data layout: x[i][k] is value i of the sub-block in lane k.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace lucid::quantization::kernels {
namespace {  // NOLINT(google-build-namespaces): one copy per tier, see above

// ggml's nearest_int (magic-number rounding, ties to even), lane-local copy.
inline std::int32_t lane_nearest_int(float f) {
  const float shifted = f + 12582912.0f;
  std::int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

inline std::int32_t lane_clamp(std::int32_t l, std::int32_t lo, std::int32_t hi) {
  return l < lo ? lo : (l > hi ? hi : l);
}

constexpr float lane_group_max_eps = 1e-15f;

/// make_qkx2_quants (DefaultDegenerate = false: max == min) / make_qkx3_quants (max <= min) on
/// W lanes of N values with weights w (always given here). L receives codes 0..nmax.
template <int W, int N>
void lanes_qkx(const float (&x)[N][W], const float (&w)[N][W], int nmax, float rmin, float rdelta,
               int nstep, bool use_mad, bool qkx3, std::int32_t (&L)[N][W], float (&scale_out)[W],
               float (&the_min)[W]) {
  float min[W], max[W], sum_w[W], sum_x[W];
  for (int k = 0; k < W; ++k) {
    min[k] = x[0][k];
    max[k] = x[0][k];
    sum_w[k] = w[0][k];
    sum_x[k] = sum_w[k] * x[0][k];
  }
  for (int i = 1; i < N; ++i) {
    for (int k = 0; k < W; ++k) {
      min[k] = x[i][k] < min[k] ? x[i][k] : min[k];
      max[k] = x[i][k] > max[k] ? x[i][k] : max[k];
      sum_w[k] += w[i][k];
      sum_x[k] += w[i][k] * x[i][k];
    }
  }
  const float fnmax = static_cast<float>(nmax);
  // The codes are rebuilt once at the end from the winning trial's reciprocal scale and shift.
  float min0[W], iscale[W], scale[W], best[W], code_iscale[W], code_shift[W];
  for (int k = 0; k < W; ++k) {
    min[k] = min[k] > 0 ? 0.0f : min[k];
    min0[k] = min[k];
    iscale[k] = fnmax / (max[k] - min[k]);
    scale[k] = 1 / iscale[k];
    best[k] = 0;
    code_iscale[k] = iscale[k];
    code_shift[k] = min[k];
  }
  for (int i = 0; i < N; ++i) {
    for (int k = 0; k < W; ++k) {
      const std::int32_t l = lane_clamp(lane_nearest_int(iscale[k] * (x[i][k] - min[k])), 0, nmax);
      float diff = scale[k] * static_cast<float>(l) + min[k] - x[i][k];
      diff = use_mad ? std::fabs(diff) : diff * diff;
      best[k] += w[i][k] * diff;
    }
  }
  float Laux[N][W];
  for (int is = 0; is <= nstep; ++is) {
    const float numerator = rmin + rdelta * static_cast<float>(is) + fnmax;
    float trial[W], sum_l[W], sum_l2[W], sum_xl[W];
    for (int k = 0; k < W; ++k) {
      trial[k] = numerator / (max[k] - min[k]);  // min moves when a trial wins
      sum_l[k] = 0;
      sum_l2[k] = 0;
      sum_xl[k] = 0;
    }
    for (int i = 0; i < N; ++i) {
      for (int k = 0; k < W; ++k) {
        const std::int32_t l = lane_clamp(lane_nearest_int(trial[k] * (x[i][k] - min[k])), 0, nmax);
        const float fl = static_cast<float>(l);
        Laux[i][k] = fl;
        const float wfl = w[i][k] * fl;
        sum_l[k] += wfl;
        sum_l2[k] += wfl * fl;
        sum_xl[k] += wfl * x[i][k];
      }
    }
    float D[W], this_scale[W], this_min[W], error[W];
    for (int k = 0; k < W; ++k) {
      D[k] = sum_w[k] * sum_l2[k] - sum_l[k] * sum_l[k];
      const float s = (sum_w[k] * sum_xl[k] - sum_x[k] * sum_l[k]) / D[k];
      const float m = (sum_l2[k] * sum_x[k] - sum_l[k] * sum_xl[k]) / D[k];
      this_min[k] = m > 0 ? 0.0f : m;
      this_scale[k] = m > 0 ? sum_xl[k] / sum_l2[k] : s;
      error[k] = 0;
    }
    for (int i = 0; i < N; ++i) {
      for (int k = 0; k < W; ++k) {
        float diff = this_scale[k] * Laux[i][k] + this_min[k] - x[i][k];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        error[k] += w[i][k] * diff;
      }
    }
    for (int k = 0; k < W; ++k) {
      const bool take = D[k] > 0 && error[k] < best[k];
      best[k] = take ? error[k] : best[k];
      scale[k] = take ? this_scale[k] : scale[k];
      code_iscale[k] = take ? trial[k] : code_iscale[k];
      code_shift[k] = take ? min[k] : code_shift[k];  // the shift this trial's codes used
      min[k] = take ? this_min[k] : min[k];
    }
  }
  std::int32_t degenerate[W];
  for (int k = 0; k < W; ++k) {
    degenerate[k] = (qkx3 ? max[k] <= min0[k] : max[k] == min0[k]) ? -1 : 0;
    scale_out[k] = degenerate[k] != 0 ? 0.0f : scale[k];
    the_min[k] = degenerate[k] != 0 ? -min0[k] : -min[k];
  }
  for (int i = 0; i < N; ++i) {
    for (int k = 0; k < W; ++k) {
      const std::int32_t l =
          lane_clamp(lane_nearest_int(code_iscale[k] * (x[i][k] - code_shift[k])), 0, nmax);
      L[i][k] = l & ~degenerate[k];
    }
  }
}

/// The signed extreme (first of the largest magnitude) of every lane.
template <int W, int N>
void lanes_signed_extreme(const float (&x)[N][W], float (&max)[W], float (&amax)[W]) {
  for (int k = 0; k < W; ++k) {
    max[k] = 0;
    amax[k] = 0;
  }
  for (int i = 0; i < N; ++i) {
    for (int k = 0; k < W; ++k) {
      const float ax = std::fabs(x[i][k]);
      const bool bigger = ax > amax[k];
      amax[k] = bigger ? ax : amax[k];
      max[k] = bigger ? x[i][k] : max[k];
    }
  }
}

/// make_qx_quants with rmse_type 1 on W lanes: weights qw (null: x^2); L = l + nmax.
template <int W, int N>
void lanes_qx(const float (&x)[N][W], const float (*qw)[W], int nmax, std::int32_t (&L)[N][W],
              float (&scale_out)[W]) {
  float max[W], amax[W];
  lanes_signed_extreme<W, N>(x, max, amax);
  const auto weight = [&](int i, int k) { return qw != nullptr ? qw[i][k] : x[i][k] * x[i][k]; };
  float scale[W], best[W];
  {
    float iscale[W], sumlx[W], suml2[W];
    for (int k = 0; k < W; ++k) {
      iscale[k] = static_cast<float>(-nmax) / max[k];
      sumlx[k] = 0;
      suml2[k] = 0;
    }
    for (int i = 0; i < N; ++i) {
      for (int k = 0; k < W; ++k) {
        const std::int32_t l = lane_clamp(lane_nearest_int(iscale[k] * x[i][k]), -nmax, nmax - 1);
        L[i][k] = l + nmax;
        const float wi = weight(i, k);
        const float fl = static_cast<float>(l);
        sumlx[k] += wi * x[i][k] * fl;
        suml2[k] += wi * fl * fl;
      }
    }
    for (int k = 0; k < W; ++k) {
      scale[k] = suml2[k] != 0.0f ? sumlx[k] / suml2[k] : 0.0f;
      best[k] = scale[k] * sumlx[k];
    }
  }
  std::int32_t Laux[N][W];
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float numerator = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is));
    float iscale[W], sumlx[W], suml2[W];
    for (int k = 0; k < W; ++k) {
      iscale[k] = numerator / max[k];
      sumlx[k] = 0;
      suml2[k] = 0;
    }
    for (int i = 0; i < N; ++i) {
      for (int k = 0; k < W; ++k) {
        const std::int32_t l = lane_clamp(lane_nearest_int(iscale[k] * x[i][k]), -nmax, nmax - 1);
        Laux[i][k] = l + nmax;
        const float wi = weight(i, k);
        const float fl = static_cast<float>(l);
        sumlx[k] += wi * x[i][k] * fl;
        suml2[k] += wi * fl * fl;
      }
    }
    std::int32_t take[W];
    for (int k = 0; k < W; ++k) {
      take[k] = suml2[k] > 0 && sumlx[k] * sumlx[k] > best[k] * suml2[k] ? -1 : 0;
      const float s = sumlx[k] / suml2[k];
      scale[k] = take[k] != 0 ? s : scale[k];
      best[k] = take[k] != 0 ? s * sumlx[k] : best[k];
    }
    for (int i = 0; i < N; ++i) {
      for (int k = 0; k < W; ++k)
        L[i][k] = (Laux[i][k] & take[k]) | (L[i][k] & ~take[k]);
    }
  }
  std::int32_t zero[W];
  for (int k = 0; k < W; ++k) {
    zero[k] = amax[k] < lane_group_max_eps ? -1 : 0;
    scale_out[k] = zero[k] != 0 ? 0.0f : scale[k];
  }
  for (int i = 0; i < N; ++i) {
    for (int k = 0; k < W; ++k)
      L[i][k] &= ~zero[k];
  }
}

/// make_q3_quants(do_rmse = true) on W lanes: weights x^2, 5 passes of coordinate descent (a
/// pass that changes nothing leaves the state as it is, so running all 5 equals ggml's early
/// exit). L = l + nmax.
template <int W, int N>
void lanes_q3(const float (&x)[N][W], int nmax, std::int32_t (&L)[N][W], float (&scale_out)[W]) {
  float max[W], amax[W];
  lanes_signed_extreme<W, N>(x, max, amax);
  float iscale[W], sumlx[W], suml2[W];
  for (int k = 0; k < W; ++k) {
    iscale[k] = static_cast<float>(-nmax) / max[k];
    sumlx[k] = 0;
    suml2[k] = 0;
  }
  for (int i = 0; i < N; ++i) {
    for (int k = 0; k < W; ++k) {
      const std::int32_t l = lane_clamp(lane_nearest_int(iscale[k] * x[i][k]), -nmax, nmax - 1);
      L[i][k] = l;
      const float wi = x[i][k] * x[i][k];
      const float fl = static_cast<float>(l);
      sumlx[k] += wi * x[i][k] * fl;
      suml2[k] += wi * fl * fl;
    }
  }
  for (int itry = 0; itry < 5; ++itry) {
    for (int i = 0; i < N; ++i) {
      for (int k = 0; k < W; ++k) {
        // Every candidate is computed; the lane keeps it only where ggml's branches would.
        const float wi = x[i][k] * x[i][k];
        const float li = static_cast<float>(L[i][k]);
        const float slx0 = sumlx[k] - wi * x[i][k] * li;
        const float sl20 = suml2[k] - wi * li * li;
        const std::int32_t new_l =
            lane_clamp(lane_nearest_int(x[i][k] * sl20 / slx0), -nmax, nmax - 1);
        const float fl = static_cast<float>(new_l);
        const float slx = slx0 + wi * x[i][k] * fl;
        const float sl2 = sl20 + wi * fl * fl;
        const std::int32_t accept =
            -static_cast<std::int32_t>((slx0 > 0) & (new_l != L[i][k]) & (sl2 > 0) &
                                       (slx * slx * suml2[k] > sumlx[k] * sumlx[k] * sl2));
        L[i][k] = (new_l & accept) | (L[i][k] & ~accept);
        sumlx[k] = accept != 0 ? slx : sumlx[k];
        suml2[k] = accept != 0 ? sl2 : suml2[k];
      }
    }
  }
  std::int32_t zero[W];
  for (int k = 0; k < W; ++k) {
    zero[k] = amax[k] < lane_group_max_eps ? -1 : 0;
    scale_out[k] = zero[k] != 0 ? 0.0f : (suml2[k] > 0.0f ? sumlx[k] / suml2[k] : 0.0f);
  }
  for (int i = 0; i < N; ++i) {
    for (int k = 0; k < W; ++k)
      L[i][k] = (L[i][k] + nmax) & ~zero[k];
  }
}

/// The IQ4_NL codebook entry nearest to v, exactly as ggml's best_index_int8 picks it (an exact
/// midpoint takes the upper entry; v <= -127 gives the first, v >= 113 and NaN the last), with
/// its index. Branch-free: the largest entry <= v and the smallest entry > v by compare chains.
inline void lane_iq4nl_pick(float v, float* value, std::int32_t* index) {
  constexpr float codebook[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                  1,    13,   25,  38,  53,  69,  89,  113};
  float lo = codebook[0];
  float hi = codebook[15];
  std::int32_t below = 0;
  for (int k = 1; k < 15; ++k) {
    const bool at_or_below = codebook[k] <= v;
    lo = at_or_below ? codebook[k] : lo;
    below += at_or_below ? 1 : 0;
  }
  for (int k = 14; k >= 1; --k)
    hi = codebook[k] > v ? codebook[k] : hi;
  const bool take_lo = v - lo < hi - v;
  *value = take_lo ? lo : hi;
  *index = take_lo ? below : below + 1;
}

/// IQ4_NL's float block scale (quantize_iq4_nl, ntry 7) on W lanes of 32 values with weights w:
/// the extreme on the +113 entry, then 15 trial reciprocal scales, keeping the least-squares
/// scale of the best (sum w q x)^2 / sum w q^2. Lanes with max |x| below 1e-15 give 0.
template <int W>
void lanes_iq4nl_scale(const float (&x)[32][W], const float (&w)[32][W], float (&d_out)[W]) {
  float max[W], amax[W];
  lanes_signed_extreme<W, 32>(x, max, amax);
  float d[W], best[W];
  const auto fit = [&](const float(&id)[W], float(&sumqx)[W], float(&sumq2)[W]) {
    for (int k = 0; k < W; ++k) {
      sumqx[k] = 0;
      sumq2[k] = 0;
    }
    for (int i = 0; i < 32; ++i) {
      for (int k = 0; k < W; ++k) {
        float q;
        std::int32_t unused;
        lane_iq4nl_pick(id[k] * x[i][k], &q, &unused);
        const float wq = w[i][k] * q;
        sumqx[k] += wq * x[i][k];
        sumq2[k] += wq * q;
      }
    }
  };
  {
    float id[W], sumqx[W], sumq2[W];
    for (int k = 0; k < W; ++k)
      id[k] = 1 / (-max[k] / -127.0f);
    fit(id, sumqx, sumq2);
    for (int k = 0; k < W; ++k) {
      d[k] = sumq2[k] > 0 ? sumqx[k] / sumq2[k] : 0.0f;
      best[k] = d[k] * sumqx[k];
    }
  }
  for (int itry = -7; itry <= 7; ++itry) {
    float id[W], sumqx[W], sumq2[W];
    for (int k = 0; k < W; ++k)
      id[k] = static_cast<float>(itry - 127) / max[k];
    fit(id, sumqx, sumq2);
    for (int k = 0; k < W; ++k) {
      const bool take = sumq2[k] > 0 && sumqx[k] * sumqx[k] > best[k] * sumq2[k];
      const float s = sumqx[k] / sumq2[k];
      d[k] = take ? s : d[k];
      best[k] = take ? s * sumqx[k] : best[k];
    }
  }
  for (int k = 0; k < W; ++k)
    d_out[k] = amax[k] < lane_group_max_eps ? 0.0f : d[k];
}

}  // namespace
}  // namespace lucid::quantization::kernels
