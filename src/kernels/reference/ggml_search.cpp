// Reference: ggml's scale searches, float32 operation by operation as ggml-quants.c orders them.
#include "kernels/reference/ggml_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ggml_blocks.hpp"

namespace lucid::quantization::kernels::reference {
namespace {

float qx_weight(const float* qw, int i, float x, int rmse_type) {
  if (qw != nullptr) return qw[i];
  switch (rmse_type) {
    case 1:
      return x * x;
    case 2:
      return 1.0f;
    case 3:
      return std::fabs(x);
    default:
      return std::sqrt(std::fabs(x));
  }
}

// The signed value of largest magnitude (the first one on ties) and its magnitude.
void signed_extreme(int n, const float* x, float* max, float* amax) {
  *max = 0.0f;
  *amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > *amax) {
      *amax = ax;
      *max = x[i];
    }
  }
}

int clamp_code(int l, int lo, int hi) {
  return std::max(lo, std::min(hi, l));
}

// make_qkx2_quants and make_qkx3_quants differ only in the default weights and the degenerate test.
template <bool DefaultWeights>
float make_qkx_quants(int n, int nmax, const float* x, const float* weights, std::uint8_t* L,
                      float* the_min, std::uint8_t* Laux, float rmin, float rdelta, int nstep,
                      bool use_mad) {
  const auto weight = [&](int i) {
    if constexpr (DefaultWeights) {
      return weights != nullptr ? weights[i] : x[i] * x[i];
    } else {
      return weights[i];
    }
  };
  float min = x[0];
  float max = x[0];
  float sum_w = weight(0);
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weight(i);
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  const bool degenerate = DefaultWeights ? max <= min : max == min;
  if (degenerate) {
    std::memset(L, 0, static_cast<std::size_t>(n));
    *the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = ggml_nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<std::uint8_t>(clamp_code(l, 0, nmax));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weight(i) * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0;
    float sum_l2 = 0;
    float sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_code(ggml_nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<std::uint8_t>(l);
      const float w = weight(i);
      const float fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weight(i) * diff;
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, static_cast<std::size_t>(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

}  // namespace

float make_qx_quants(int n, int nmax, const float* x, std::int8_t* L, int rmse_type,
                     const float* qw) {
  float max;
  float amax;
  signed_extreme(n, x, &max, &amax);
  if (amax < ggml_group_max_eps) {
    std::memset(L, 0, static_cast<std::size_t>(n));
    return 0.0f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) {
      const int l = ggml_nearest_int(iscale * x[i]);
      L[i] = static_cast<std::int8_t>(nmax + clamp_code(l, -nmax, nmax - 1));
    }
    return 1 / iscale;
  }
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_code(ggml_nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<std::int8_t>(l + nmax);
    const float w = qx_weight(qw, i, x[i], rmse_type);
    const float fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = 0;
    suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_code(ggml_nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = qx_weight(qw, i, x[i], rmse_type);
      const float fl = static_cast<float>(l);
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = ggml_nearest_int(iscale * x[i]);
        L[i] = static_cast<std::int8_t>(nmax + clamp_code(l, -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_q3_quants(int n, int nmax, const float* x, std::int8_t* L, bool do_rmse) {
  float max;
  float amax;
  signed_extreme(n, x, &max, &amax);
  if (amax < ggml_group_max_eps) {
    std::memset(L, 0, static_cast<std::size_t>(n));
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  if (!do_rmse) {
    for (int i = 0; i < n; ++i) {
      const int l = clamp_code(ggml_nearest_int(iscale * x[i]), -nmax, nmax - 1);
      L[i] = static_cast<std::int8_t>(l + nmax);
    }
    return 1 / iscale;
  }
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_code(ggml_nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<std::int8_t>(l);
    const float w = x[i] * x[i];
    const float fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        const int new_l = clamp_code(ggml_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          const float fl = static_cast<float>(new_l);
          slx += w * x[i] * fl;
          sl2 += w * fl * fl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<std::int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i)
    L[i] = static_cast<std::int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, std::uint8_t* L,
                       float* the_min, std::uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  return make_qkx_quants<false>(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep,
                                use_mad);
}

float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, std::uint8_t* L,
                       float* the_min, std::uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  return make_qkx_quants<true>(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep, use_mad);
}

float make_qp_quants(int n, int nmax, const float* x, std::uint8_t* L, const float* quant_weights) {
  float max = 0;
  for (int i = 0; i < n; ++i)
    max = max > x[i] ? max : x[i];
  if (max < ggml_group_max_eps) {
    std::memset(L, 0, static_cast<std::size_t>(n));
    return 0.0f;
  }
  const float fnmax = static_cast<float>(nmax);
  float iscale = fnmax / max;
  for (int i = 0; i < n; ++i)
    L[i] = static_cast<std::uint8_t>(ggml_nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * static_cast<float>(L[i]);
    best_mse += quant_weights[i] * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * static_cast<float>(is) + fnmax) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, ggml_nearest_int(iscale_is * x[i]));
      const float diff = x[i] - scale_is * static_cast<float>(l);
      mse += quant_weights[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, ggml_nearest_int(iscale * x[i]));
    L[i] = static_cast<std::uint8_t>(l);
    const float w = quant_weights[i];
    const float fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = quant_weights[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      float sl2 = suml2 - w * li * li;
      if (slx > 0 && sl2 > 0) {
        const int new_l = std::min(nmax, ggml_nearest_int(x[i] * sl2 / slx));
        if (new_l != L[i]) {
          const float fl = static_cast<float>(new_l);
          slx += w * x[i] * fl;
          sl2 += w * fl * fl;
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<std::uint8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace lucid::quantization::kernels::reference
