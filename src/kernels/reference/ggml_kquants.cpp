// Reference: ggml's K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; 256-value super-blocks), with and
// without an importance matrix: the specification the other tiers must match.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/reference/ggml_kernels.hpp"
#include "kernels/reference/ggml_search.hpp"

namespace lucid::quantization::kernels::reference {
namespace {

constexpr int qk_k = ggml_super_block;

float sum_of_squares(const float* x, int n) {
  float sum = 0;
  for (int j = 0; j < n; ++j)
    sum += x[j] * x[j];
  return sum;
}

// Byte 32h + l holds the 2-bit codes of elements 128h + l + 32k at bits 2k (k = 0..3).
void pack_2bit(const std::uint8_t* L, std::uint8_t* qs) {
  for (int j = 0; j < qk_k; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<std::uint8_t>(L[j + l] | (L[j + l + 32] << 2) |
                                                (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

// Re-quantizes every sub-block of `size` values to x ~ d * l - dm with the stored (fp16, integer)
// scales; sub-blocks whose scale is zero keep the search's codes.
void requantize_affine(const float* x, int size, int count, float d_all, float dmin_all,
                       const std::uint8_t* sc, const std::uint8_t* m, int nmax, std::uint8_t* L) {
  for (int j = 0; j < count; ++j) {
    const float d = d_all * static_cast<float>(sc[j]);
    if (d == 0.0f) continue;
    const float dm = dmin_all * static_cast<float>(m[j]);
    for (int ii = 0; ii < size; ++ii) {
      const int l = ggml_nearest_int((x[size * j + ii] + dm) / d);
      L[size * j + ii] = static_cast<std::uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

// The (scale, min) of sub-block j of a Q4_K / Q5_K block (ggml's get_scale_min_k4).
void scale_min_k4(int j, const std::uint8_t* q, std::uint8_t* d, std::uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<std::uint8_t>((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void pack_scale_min_k4(const std::uint8_t* ls, const std::uint8_t* lm, std::uint8_t* scales) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] = static_cast<std::uint8_t>((ls[j] & 0xf) | ((lm[j] & 0xf) << 4));
      scales[j - 4] = static_cast<std::uint8_t>(scales[j - 4] | ((ls[j] >> 4) << 6));
      scales[j] = static_cast<std::uint8_t>(scales[j] | ((lm[j] >> 4) << 6));
    }
  }
}

// Q3_K's 6-bit signed scale of sub-block j, as stored (0..63, offset 32).
int q3_scale(const std::uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0xf : scales[j - 8] >> 4;
  return low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

void pack_q3_scale(std::uint8_t* scales, int j, int l) {
  if (j < 8) {
    scales[j] = static_cast<std::uint8_t>(l & 0xf);
  } else {
    scales[j - 8] = static_cast<std::uint8_t>(scales[j - 8] | ((l & 0xf) << 4));
  }
  scales[j % 4 + 8] = static_cast<std::uint8_t>(scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
}

// Q3_K's final pass (the fp16 d times each 6-bit scale) and its hmask / 2-bit packing.
void finish_q3_k(const float* x, std::int8_t* L, BlockQ3_K& y) {
  const float d_all = ggml_fp32(y.d);
  for (int j = 0; j < 16; ++j) {
    const auto sc = static_cast<std::int8_t>(q3_scale(y.scales, j) - 32);
    const float d = d_all * static_cast<float>(sc);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = ggml_nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<std::int8_t>(std::max(-4, std::min(3, l)) + 4);
    }
  }
  std::memset(y.hmask, 0, sizeof y.hmask);
  std::uint8_t codes[qk_k];
  for (int j = 0; j < qk_k; ++j) {
    int l = L[j];
    if (l > 3) {
      y.hmask[j % 32] = static_cast<std::uint8_t>(y.hmask[j % 32] | (1u << (j / 32)));
      l -= 4;
    }
    codes[j] = static_cast<std::uint8_t>(l);
  }
  pack_2bit(codes, y.qs);
}

void quantize_block_q2_k(const float* x, BlockQ2_K& y) {
  std::uint8_t L[qk_k];
  std::uint8_t Laux[16];
  float weights[16];
  float mins[16];
  float scales[16];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l)
      weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                 0.1f, 15, true);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  if (max_scale > 0) {
    const float iscale = 15.0f / max_scale;
    for (int j = 0; j < 16; ++j)
      y.scales[j] = static_cast<std::uint8_t>(ggml_nearest_int(iscale * scales[j]));
    y.d = ggml_fp16(max_scale / 15.0f);
  } else {
    std::memset(y.scales, 0, sizeof y.scales);
    y.d = ggml_fp16(0.0f);
  }
  if (max_min > 0) {
    const float iscale = 15.0f / max_min;
    for (int j = 0; j < 16; ++j) {
      const int l = ggml_nearest_int(iscale * mins[j]);
      y.scales[j] = static_cast<std::uint8_t>(y.scales[j] | (l << 4));
    }
    y.dmin = ggml_fp16(max_min / 15.0f);
  } else {
    y.dmin = ggml_fp16(0.0f);
  }
  std::uint8_t sc[16];
  std::uint8_t m[16];
  for (int j = 0; j < 16; ++j) {
    sc[j] = y.scales[j] & 0xf;
    m[j] = y.scales[j] >> 4;
  }
  requantize_affine(x, 16, 16, ggml_fp32(y.d), ggml_fp32(y.dmin), sc, m, 3, L);
  pack_2bit(L, y.qs);
}

void quantize_block_q2_k_imatrix(const float* x, const float* qw, BlockQ2_K& y) {
  std::uint8_t L[qk_k];
  std::uint8_t Laux[16];
  float mins[16];
  float scales[16];
  float sw[16] = {};
  float weight[16];
  std::uint8_t Ls[16];
  std::uint8_t Lm[16];
  const float sigma2 = sum_of_squares(x, qk_k) / qk_k;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l)
      weight[l] = qw[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
    for (int l = 0; l < 16; ++l)
      sw[j] += weight[l];
    scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f,
                                 0.05f, 36, false);
  }
  const float dm = make_qp_quants(16, 15, scales, Ls, sw);
  const float mm = make_qp_quants(16, 15, mins, Lm, sw);
  y.d = ggml_fp16(dm);
  y.dmin = ggml_fp16(mm);
  for (int j = 0; j < 16; ++j)
    y.scales[j] = static_cast<std::uint8_t>(Ls[j] | (Lm[j] << 4));
  std::uint8_t sc[16];
  std::uint8_t m[16];
  for (int j = 0; j < 16; ++j) {
    sc[j] = y.scales[j] & 0xf;
    m[j] = y.scales[j] >> 4;
  }
  requantize_affine(x, 16, 16, ggml_fp32(y.d), ggml_fp32(y.dmin), sc, m, 3, L);
  pack_2bit(L, y.qs);
}

void quantize_block_q3_k(const float* x, const float* qw, BlockQ3_K& y) {
  std::int8_t L[qk_k];
  float scales[16];
  std::memset(y.scales, 0, sizeof y.scales);
  if (qw == nullptr) {
    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        auto l = static_cast<std::int8_t>(ggml_nearest_int(iscale * scales[j]));
        l = static_cast<std::int8_t>(std::max(-32, std::min(31, static_cast<int>(l))) + 32);
        pack_q3_scale(y.scales, j, l);
      }
      y.d = ggml_fp16(1 / iscale);
    } else {
      y.d = ggml_fp16(0.0f);
    }
  } else {
    const float sigma2 = 2 * sum_of_squares(x, qk_k) / qk_k;
    float weight[16];
    float sw[16];
    std::int8_t Ls[16];
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l)
        weight[l] = qw[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
      float sumw = 0;
      for (int l = 0; l < 16; ++l)
        sumw += weight[l];
      sw[j] = sumw;
      scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
    }
    const float d_block = make_qx_quants(16, 32, scales, Ls, 1, sw);
    for (int j = 0; j < 16; ++j)
      pack_q3_scale(y.scales, j, Ls[j]);
    y.d = ggml_fp16(d_block);
  }
  finish_q3_k(x, L, y);
}

// Q4_K / Q5_K share everything but nmax, the search constants and the code packing.
template <int Nmax, class Block>
void quantize_scales_k4(const float* x, const float* qw, Block& y, std::uint8_t* L) {
  std::uint8_t Laux[32];
  float weights[32];
  float mins[8];
  float scales[8];
  std::uint8_t ls[8];
  std::uint8_t lm[8];
  constexpr float rmin = Nmax == 15 ? -1.0f : -0.5f;
  constexpr int nstep = Nmax == 15 ? 20 : 15;
  if (qw == nullptr) {
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < 8; ++j) {
      const float av_x = std::sqrt(sum_of_squares(x + 32 * j, 32) / 32);
      for (int l = 0; l < 32; ++l)
        weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = make_qkx2_quants(32, Nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                   0.1f, nstep, false);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; ++j) {
      const auto s = static_cast<std::uint8_t>(ggml_nearest_int(inv_scale * scales[j]));
      const auto m = static_cast<std::uint8_t>(ggml_nearest_int(inv_min * mins[j]));
      ls[j] = std::min<std::uint8_t>(63, s);
      lm[j] = std::min<std::uint8_t>(63, m);
    }
    y.d = ggml_fp16(max_scale / 63.0f);
    y.dmin = ggml_fp16(max_min / 63.0f);
  } else {
    const float sigma2 = 2 * sum_of_squares(x, qk_k) / qk_k;
    float sw[8];
    for (int j = 0; j < 8; ++j) {
      for (int l = 0; l < 32; ++l)
        weights[l] = qw[32 * j + l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
      float sumw = 0;
      for (int l = 0; l < 32; ++l)
        sumw += weights[l];
      sw[j] = sumw;
      scales[j] = make_qkx3_quants(32, Nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f,
                                   0.05f, 36, false);
    }
    const float d_block = make_qp_quants(8, 63, scales, ls, sw);
    const float m_block = make_qp_quants(8, 63, mins, lm, sw);
    for (int j = 0; j < 8; ++j) {
      ls[j] = std::min<std::uint8_t>(63, ls[j]);
      lm[j] = std::min<std::uint8_t>(63, lm[j]);
    }
    y.d = ggml_fp16(d_block);
    y.dmin = ggml_fp16(m_block);
  }
  pack_scale_min_k4(ls, lm, y.scales);
  std::uint8_t sc[8];
  std::uint8_t m[8];
  for (int j = 0; j < 8; ++j)
    scale_min_k4(j, y.scales, &sc[j], &m[j]);
  requantize_affine(x, 32, 8, ggml_fp32(y.d), ggml_fp32(y.dmin), sc, m, Nmax, L);
}

void quantize_block_q4_k(const float* x, const float* qw, BlockQ4_K& y) {
  std::uint8_t L[qk_k];
  quantize_scales_k4<15>(x, qw, y, L);
  std::uint8_t* q = y.qs;
  for (int j = 0; j < qk_k; j += 64, q += 32) {
    for (int l = 0; l < 32; ++l)
      q[l] = static_cast<std::uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_block_q5_k(const float* x, const float* qw, BlockQ5_K& y) {
  std::uint8_t L[qk_k];
  quantize_scales_k4<31>(x, qw, y, L);
  std::memset(y.qh, 0, sizeof y.qh);
  std::uint8_t* ql = y.qs;
  std::uint8_t m1 = 1;
  std::uint8_t m2 = 2;
  for (int n = 0; n < qk_k; n += 64, ql += 32) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        y.qh[j] = static_cast<std::uint8_t>(y.qh[j] | m1);
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        y.qh[j] = static_cast<std::uint8_t>(y.qh[j] | m2);
      }
      ql[j] = static_cast<std::uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<std::uint8_t>(m1 << 2);
    m2 = static_cast<std::uint8_t>(m2 << 2);
  }
}

void quantize_block_q6_k(const float* x, const float* qw, BlockQ6_K& y) {
  std::int8_t L[qk_k];
  float scales[16];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    const float* w = qw != nullptr ? qw + 16 * ib : nullptr;
    scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, w);
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < ggml_group_max_eps) {
    std::memset(&y, 0, sizeof y);
    y.d = ggml_fp16(0.0f);
    return;
  }
  const float iscale = -128.0f / max_scale;
  y.d = ggml_fp16(1 / iscale);
  for (int ib = 0; ib < 16; ++ib)
    y.scales[ib] = static_cast<std::int8_t>(std::min(127, ggml_nearest_int(iscale * scales[ib])));
  const float d_all = ggml_fp32(y.d);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * static_cast<float>(y.scales[j]);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = ggml_nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<std::int8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }
  std::uint8_t* ql = y.ql;
  std::uint8_t* qh = y.qh;
  for (int j = 0; j < qk_k; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l] & 0xf;
      const int q2 = L[j + l + 32] & 0xf;
      const int q3 = L[j + l + 64] & 0xf;
      const int q4 = L[j + l + 96] & 0xf;
      ql[l] = static_cast<std::uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<std::uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<std::uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                        ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void quantize_row_q2_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ2_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i) {
    if (imatrix == nullptr) {
      quantize_block_q2_k(x + qk_k * i, y[i]);
    } else {
      quantize_block_q2_k_imatrix(x + qk_k * i, imatrix + qk_k * i, y[i]);
    }
  }
}

void quantize_row_q3_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ3_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i)
    quantize_block_q3_k(x + qk_k * i, imatrix != nullptr ? imatrix + qk_k * i : nullptr, y[i]);
}

void quantize_row_q4_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ4_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i)
    quantize_block_q4_k(x + qk_k * i, imatrix != nullptr ? imatrix + qk_k * i : nullptr, y[i]);
}

void quantize_row_q5_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ5_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i)
    quantize_block_q5_k(x + qk_k * i, imatrix != nullptr ? imatrix + qk_k * i : nullptr, y[i]);
}

void quantize_row_q6_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ6_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i)
    quantize_block_q6_k(x + qk_k * i, imatrix != nullptr ? imatrix + qk_k * i : nullptr, y[i]);
}

void dequantize_q2_k(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ2_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i) {
    const float d = ggml_fp32(x[i].d);
    const float min = ggml_fp32(x[i].dmin);
    const std::uint8_t* q = x[i].qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const std::uint8_t sc = x[i].scales[is++];
          const float dl = d * static_cast<float>(sc & 0xf);
          const float ml = min * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l)
            *y++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_q3_k(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ3_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i) {
    const float d_all = ggml_fp32(x[i].d);
    for (int e = 0; e < qk_k; ++e) {
      const int j = e / 16;
      const int h = e / 128;
      const int byte = 32 * h + (e % 32);
      const int shift = 2 * ((e % 128) / 32);
      const float dl = d_all * static_cast<float>(q3_scale(x[i].scales, j) - 32);
      const int low = (x[i].qs[byte] >> shift) & 3;
      const int high = (x[i].hmask[e % 32] >> (e / 32)) & 1;
      y[e] = dl * static_cast<float>(low - (high != 0 ? 0 : 4));
    }
    y += qk_k;
  }
}

void dequantize_q4_k(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ4_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i) {
    const float d = ggml_fp32(x[i].d);
    const float min = ggml_fp32(x[i].dmin);
    const std::uint8_t* q = x[i].qs;
    for (int is = 0; is < 8; is += 2, q += 32) {
      std::uint8_t sc;
      std::uint8_t m;
      scale_min_k4(is, x[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = min * static_cast<float>(m);
      scale_min_k4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = min * static_cast<float>(m);
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * static_cast<float>(q[l] & 0xf) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequantize_q5_k(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ5_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i) {
    const float d = ggml_fp32(x[i].d);
    const float min = ggml_fp32(x[i].dmin);
    const std::uint8_t* ql = x[i].qs;
    const std::uint8_t* qh = x[i].qh;
    unsigned u1 = 1;
    unsigned u2 = 2;
    for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
      std::uint8_t sc;
      std::uint8_t m;
      scale_min_k4(is, x[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = min * static_cast<float>(m);
      scale_min_k4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = min * static_cast<float>(m);
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * static_cast<float>((ql[l] & 0xf) + ((qh[l] & u1) != 0 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) != 0 ? 16 : 0)) - m2;
    }
  }
}

void dequantize_q6_k(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ6_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i) {
    const float d = ggml_fp32(x[i].d);
    const std::uint8_t* ql = x[i].ql;
    const std::uint8_t* qh = x[i].qh;
    const std::int8_t* sc = x[i].scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace lucid::quantization::kernels::reference
