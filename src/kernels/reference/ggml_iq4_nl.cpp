// Reference: ggml's IQ4_NL (a 16-entry non-linear codebook per 32-value block) as
// ggml_quantize_chunk runs it (quantize_iq4_nl: 15 trial scales), with and without an imatrix.
#include <cmath>
#include <cstring>

#include "kernels/ggml_kquant_finish.hpp"
#include "kernels/reference/ggml_kernels.hpp"
#include "kernels/reference/ggml_search.hpp"

namespace lucid::quantization::kernels {

void finish_iq4_nl(float d, const std::uint8_t* indices, BlockIq4Nl& y) {
  y.d = ggml_fp16(d);
  for (int j = 0; j < 16; ++j)
    y.qs[j] = static_cast<std::uint8_t>(indices[j] | (indices[j + 16] << 4));
}

namespace reference {
namespace {

constexpr int qk = ggml_block_32;
constexpr int trials = 7;  // ggml's ntry: reciprocal scales (t + values[0]) / max, t = -7..7

// The codebook index nearest to x (ggml's best_index_int8): an exact midpoint takes the upper.
int best_index(float x) {
  const std::int8_t* val = iq4nl_values;
  if (x <= static_cast<float>(val[0])) return 0;
  if (x >= static_cast<float>(val[15])) return 15;
  int ml = 0;
  int mu = 15;
  while (mu - ml > 1) {
    const int mav = (ml + mu) / 2;
    if (x < static_cast<float>(val[mav])) {
      mu = mav;
    } else {
      ml = mav;
    }
  }
  return x - static_cast<float>(val[mu - 1]) < static_cast<float>(val[mu]) - x ? mu - 1 : mu;
}

// The least-squares scale of the block for the reciprocal scale id, with its score sums.
void fit(const float* xb, const float* weight, float id, float* sumqx, float* sumq2) {
  *sumqx = 0;
  *sumq2 = 0;
  for (int j = 0; j < qk; ++j) {
    const float q = static_cast<float>(iq4nl_values[best_index(id * xb[j])]);
    const float w = weight[j];
    *sumqx += w * q * xb[j];
    *sumq2 += w * q * q;
  }
}

// The block's float scale: the extreme on the +113 code, then the best of 15 trial scales.
float block_scale(const float* xb, const float* qw) {
  float sigma2 = 0;
  for (int j = 0; j < qk; ++j)
    sigma2 += xb[j] * xb[j];
  sigma2 *= 2.0f / qk;
  float weight[qk];
  for (int j = 0; j < qk; ++j)
    weight[j] = qw != nullptr ? qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
  float amax = 0;
  float max = 0;
  for (int j = 0; j < qk; ++j) {
    const float ax = std::fabs(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  if (amax < ggml_group_max_eps) return 0.0f;
  const float values0 = static_cast<float>(iq4nl_values[0]);
  float sumqx;
  float sumq2;
  fit(xb, weight, 1 / (-max / values0), &sumqx, &sumq2);
  float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int itry = -trials; itry <= trials; ++itry) {
    const float id = static_cast<float>(itry + iq4nl_values[0]) / max;
    fit(xb, weight, id, &sumqx, &sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

}  // namespace

void quantize_row_iq4_nl(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockIq4Nl*>(blocks);
  for (std::int64_t i = 0; i < n / qk; ++i) {
    const float* xb = x + qk * i;
    const float d = block_scale(xb, imatrix != nullptr ? imatrix + qk * i : nullptr);
    const float id = d != 0.0f ? 1 / d : 0.0f;
    std::uint8_t L[qk];
    for (int j = 0; j < qk; ++j)
      L[j] = static_cast<std::uint8_t>(best_index(id * xb[j]));
    finish_iq4_nl(d, L, y[i]);
  }
}

void dequantize_iq4_nl(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockIq4Nl*>(blocks);
  for (std::int64_t i = 0; i < n / qk; ++i, y += qk) {
    const float d = ggml_fp32(x[i].d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(iq4nl_values[x[i].qs[j] & 0xf]);
      y[j + 16] = d * static_cast<float>(iq4nl_values[x[i].qs[j] >> 4]);
    }
  }
}

}  // namespace reference
}  // namespace lucid::quantization::kernels
