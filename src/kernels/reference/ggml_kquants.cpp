// Reference: ggml's K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; 256-value super-blocks), with and
// without an importance matrix: the sub-block searches (then kernels/ggml_kquant_finish.hpp) and
// the decoders, the specification the other tiers must match.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ggml_kquant_finish.hpp"
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

void quantize_block_q2_k(const float* x, const float* qw, BlockQ2_K& y) {
  std::uint8_t L[qk_k];
  std::uint8_t Laux[16];
  float weight[16];
  float mins[16];
  float scales[16];
  float sw[16] = {};
  const float sigma2 = qw != nullptr ? sum_of_squares(x, qk_k) / qk_k : 0.0f;
  for (int j = 0; j < 16; ++j) {
    const float* xs = x + 16 * j;
    if (qw == nullptr) {
      for (int l = 0; l < 16; ++l)
        weight[l] = std::fabs(xs[l]);
      scales[j] =
          make_qkx2_quants(16, 3, xs, weight, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
    } else {
      for (int l = 0; l < 16; ++l)
        weight[l] = qw[16 * j + l] * std::sqrt(sigma2 + xs[l] * xs[l]);
      for (int l = 0; l < 16; ++l)
        sw[j] += weight[l];
      scales[j] =
          make_qkx3_quants(16, 3, xs, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
  }
  finish_q2_k(x, scales, mins, qw != nullptr ? sw : nullptr, L, y);
}

void quantize_block_q3_k(const float* x, const float* qw, BlockQ3_K& y) {
  std::int8_t L[qk_k];
  float scales[16];
  float sw[16];
  if (qw == nullptr) {
    for (int j = 0; j < 16; ++j)
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
  } else {
    const float sigma2 = 2 * sum_of_squares(x, qk_k) / qk_k;
    float weight[16];
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l)
        weight[l] = qw[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
      float sumw = 0;
      for (int l = 0; l < 16; ++l)
        sumw += weight[l];
      sw[j] = sumw;
      scales[j] = make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
    }
  }
  finish_q3_k(x, scales, qw != nullptr ? sw : nullptr, L, y);
}

// The Q4_K / Q5_K sub-block searches (nmax 15 / 31): scales, mins, codes and, with an imatrix,
// the sub-block weights sw.
template <int Nmax>
void search_k4(const float* x, const float* qw, float* scales, float* mins, float* sw,
               std::uint8_t* L) {
  std::uint8_t Laux[32];
  float weights[32];
  if (qw == nullptr) {
    constexpr float rmin = Nmax == 15 ? -1.0f : -0.5f;
    constexpr int nstep = Nmax == 15 ? 20 : 15;
    for (int j = 0; j < 8; ++j) {
      const float av_x = std::sqrt(sum_of_squares(x + 32 * j, 32) / 32);
      for (int l = 0; l < 32; ++l)
        weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = make_qkx2_quants(32, Nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                   0.1f, nstep, false);
    }
    return;
  }
  const float sigma2 = 2 * sum_of_squares(x, qk_k) / qk_k;
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
}

void quantize_block_q6_k(const float* x, const float* qw, BlockQ6_K& y) {
  std::int8_t L[qk_k];
  float scales[16];
  for (int ib = 0; ib < 16; ++ib) {
    const float* w = qw != nullptr ? qw + 16 * ib : nullptr;
    scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, w);
  }
  finish_q6_k(x, scales, L, y);
}

}  // namespace

void quantize_row_q2_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ2_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i)
    quantize_block_q2_k(x + qk_k * i, imatrix != nullptr ? imatrix + qk_k * i : nullptr, y[i]);
}

void quantize_row_q3_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ3_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i)
    quantize_block_q3_k(x + qk_k * i, imatrix != nullptr ? imatrix + qk_k * i : nullptr, y[i]);
}

void quantize_row_q4_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ4_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i) {
    const float* qw = imatrix != nullptr ? imatrix + qk_k * i : nullptr;
    float scales[8];
    float mins[8];
    float sw[8];
    std::uint8_t L[qk_k];
    search_k4<15>(x + qk_k * i, qw, scales, mins, sw, L);
    finish_q4_k(x + qk_k * i, scales, mins, qw != nullptr ? sw : nullptr, L, y[i]);
  }
}

void quantize_row_q5_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ5_K*>(blocks);
  for (std::int64_t i = 0; i < n / qk_k; ++i) {
    const float* qw = imatrix != nullptr ? imatrix + qk_k * i : nullptr;
    float scales[8];
    float mins[8];
    float sw[8];
    std::uint8_t L[qk_k];
    search_k4<31>(x + qk_k * i, qw, scales, mins, sw, L);
    finish_q5_k(x + qk_k * i, scales, mins, qw != nullptr ? sw : nullptr, L, y[i]);
  }
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
