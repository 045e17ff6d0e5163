// Internal: the K-quant and legacy-imatrix row quantizers on the lane searches (ggml_lanes.hpp):
// W sub-blocks go through one search at a time, then each block is finished by the shared
// scalar code (ggml_kquant_finish.hpp). Same bytes as the reference tier; instantiated by the
// ISA tier files with their lane count (internal linkage, see ggml_lanes.hpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/ggml_blocks.hpp"
#include "kernels/ggml_kquant_finish.hpp"
#include "kernels/ggml_kquant_finish_blocks.hpp"
#include "kernels/ggml_lanes.hpp"
#include "kernels/kernel_table.hpp"

namespace lucid::quantization::kernels {
namespace {  // NOLINT(google-build-namespaces): one copy per tier

/// Sub-blocks [s0, s0 + W) of N values (lanes past `count` get zeros) in lane layout.
template <int W, int N>
void gather_lanes(const float* x, std::int64_t s0, std::int64_t count, float (&xt)[N][W]) {
  for (int k = 0; k < W; ++k) {
    if (s0 + k < count) {
      const float* src = x + (s0 + k) * N;
      for (int i = 0; i < N; ++i)
        xt[i][k] = src[i];
    } else {
      for (int i = 0; i < N; ++i)
        xt[i][k] = 0.0f;
    }
  }
}

template <int W, int N, class T>
void scatter_codes(const std::int32_t (&L)[N][W], T* out) {
  for (int k = 0; k < W; ++k) {
    for (int i = 0; i < N; ++i)
      out[k * N + i] = static_cast<T>(L[i][k]);
  }
}

inline float lane_sum_of_squares(const float* x, int n) {
  float sum = 0;
  for (int j = 0; j < n; ++j)
    sum += x[j] * x[j];
  return sum;
}

// sigma^2 of each lane's super-block (factor * sum x^2 / 256, as ggml writes each type).
template <int W, int N>
void lanes_sigma2(const float* x, std::int64_t s0, std::int64_t count, float factor,
                  float (&sigma2)[W]) {
  constexpr int per_block = ggml_super_block / N;
  for (int k = 0; k < W; k += per_block) {
    float value = 0.0f;
    if (s0 + k < count) {
      value = factor * lane_sum_of_squares(x + (s0 + k) * N, ggml_super_block) / ggml_super_block;
    }
    for (int j = 0; j < per_block; ++j)
      sigma2[k + j] = value;
  }
}

// w = qw * sqrt(sigma2 + x^2) per value and sw = the sum of w over the sub-block.
template <int W, int N>
void lanes_imatrix_weights(const float (&xt)[N][W], const float* qw, std::int64_t s0,
                           std::int64_t count, const float (&sigma2)[W], float (&w)[N][W],
                           float (&sw)[W]) {
  float qwt[N][W];
  for (int k = 0; k < W; ++k) {
    const std::int64_t s = s0 + k < count ? s0 + k : s0;
    const float* src = qw + s * N;  // the imatrix holds one weight per column
    for (int i = 0; i < N; ++i)
      qwt[i][k] = src[i];
  }
  for (int k = 0; k < W; ++k)
    sw[k] = 0;
  for (int i = 0; i < N; ++i) {
    for (int k = 0; k < W; ++k) {
      w[i][k] = qwt[i][k] * std::sqrt(sigma2[k] + xt[i][k] * xt[i][k]);
      sw[k] += w[i][k];
    }
  }
}

// Q2_K: 16-value sub-blocks, 16 per block.
template <int W>
void lanes_row_q2_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  constexpr int N = 16;
  static_assert(W % 16 == 0);
  auto* y = static_cast<BlockQ2_K*>(blocks);
  const std::int64_t count = n / N;
  for (std::int64_t s0 = 0; s0 < count; s0 += W) {
    float xt[N][W], w[N][W], sw[W], scale[W], the_min[W];
    std::int32_t L[N][W];
    gather_lanes<W, N>(x, s0, count, xt);
    if (imatrix == nullptr) {
      for (int i = 0; i < N; ++i)
        for (int k = 0; k < W; ++k)
          w[i][k] = std::fabs(xt[i][k]);
      lanes_qkx<W, N>(xt, w, 3, -0.5f, 0.1f, 15, true, false, L, scale, the_min);
    } else {
      float sigma2[W];
      lanes_sigma2<W, N>(x, s0, count, 1.0f, sigma2);
      lanes_imatrix_weights<W, N>(xt, imatrix, s0, count, sigma2, w, sw);
      lanes_qkx<W, N>(xt, w, 3, -0.9f, 0.05f, 36, false, true, L, scale, the_min);
    }
    std::uint8_t codes[W * N];
    scatter_codes<W, N>(L, codes);
    for (int b = 0; b < W / 16 && s0 + 16 * b < count; ++b) {
      const std::int64_t block = (s0 + 16 * b) / 16;
      finish_q2_k_block(x + block * ggml_super_block, scale + 16 * b, the_min + 16 * b,
                        imatrix != nullptr ? sw + 16 * b : nullptr, codes + ggml_super_block * b,
                        y[block]);
    }
  }
}

// Q3_K: 16-value sub-blocks with signed scales.
template <int W>
void lanes_row_q3_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  constexpr int N = 16;
  static_assert(W % 16 == 0);
  auto* y = static_cast<BlockQ3_K*>(blocks);
  const std::int64_t count = n / N;
  for (std::int64_t s0 = 0; s0 < count; s0 += W) {
    float xt[N][W], w[N][W], sw[W], scale[W];
    std::int32_t L[N][W];
    gather_lanes<W, N>(x, s0, count, xt);
    if (imatrix == nullptr) {
      lanes_q3<W, N>(xt, 4, L, scale);
    } else {
      float sigma2[W];
      lanes_sigma2<W, N>(x, s0, count, 2.0f, sigma2);
      lanes_imatrix_weights<W, N>(xt, imatrix, s0, count, sigma2, w, sw);
      lanes_qx<W, N>(xt, w, 4, L, scale);
    }
    std::int8_t codes[W * N];
    scatter_codes<W, N>(L, codes);
    for (int b = 0; b < W / 16 && s0 + 16 * b < count; ++b) {
      const std::int64_t block = (s0 + 16 * b) / 16;
      finish_q3_k_block(x + block * ggml_super_block, scale + 16 * b,
                        imatrix != nullptr ? sw + 16 * b : nullptr, codes + ggml_super_block * b,
                        y[block]);
    }
  }
}

// Q4_K / Q5_K: 32-value sub-blocks with (scale, min), 8 per block.
template <int W, int Nmax, class Block>
void lanes_row_k4(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  constexpr int N = 32;
  static_assert(W % 8 == 0);
  auto* y = static_cast<Block*>(blocks);
  const std::int64_t count = n / N;
  for (std::int64_t s0 = 0; s0 < count; s0 += W) {
    float xt[N][W], w[N][W], sw[W], scale[W], the_min[W];
    std::int32_t L[N][W];
    gather_lanes<W, N>(x, s0, count, xt);
    if (imatrix == nullptr) {
      float sum_x2[W];
      for (int k = 0; k < W; ++k)
        sum_x2[k] = 0;
      for (int i = 0; i < N; ++i)
        for (int k = 0; k < W; ++k)
          sum_x2[k] += xt[i][k] * xt[i][k];
      float av_x[W];
      for (int k = 0; k < W; ++k)
        av_x[k] = std::sqrt(sum_x2[k] / 32);
      for (int i = 0; i < N; ++i)
        for (int k = 0; k < W; ++k)
          w[i][k] = av_x[k] + std::fabs(xt[i][k]);
      constexpr float rmin = Nmax == 15 ? -1.0f : -0.5f;
      constexpr int nstep = Nmax == 15 ? 20 : 15;
      lanes_qkx<W, N>(xt, w, Nmax, rmin, 0.1f, nstep, false, false, L, scale, the_min);
    } else {
      float sigma2[W];
      lanes_sigma2<W, N>(x, s0, count, 2.0f, sigma2);
      lanes_imatrix_weights<W, N>(xt, imatrix, s0, count, sigma2, w, sw);
      lanes_qkx<W, N>(xt, w, Nmax, -0.9f, 0.05f, 36, false, true, L, scale, the_min);
    }
    std::uint8_t codes[W * N];
    scatter_codes<W, N>(L, codes);
    for (int b = 0; b < W / 8 && s0 + 8 * b < count; ++b) {
      const std::int64_t block = (s0 + 8 * b) / 8;
      const float* sub_sw = imatrix != nullptr ? sw + 8 * b : nullptr;
      if constexpr (Nmax == 15) {
        finish_q4_k_block(x + block * ggml_super_block, scale + 8 * b, the_min + 8 * b, sub_sw,
                          codes + ggml_super_block * b, y[block]);
      } else {
        finish_q5_k_block(x + block * ggml_super_block, scale + 8 * b, the_min + 8 * b, sub_sw,
                          codes + ggml_super_block * b, y[block]);
      }
    }
  }
}

// Q6_K: 16-value sub-blocks, weights x^2 or the raw importance.
template <int W>
void lanes_row_q6_k(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  constexpr int N = 16;
  static_assert(W % 16 == 0);
  auto* y = static_cast<BlockQ6_K*>(blocks);
  const std::int64_t count = n / N;
  for (std::int64_t s0 = 0; s0 < count; s0 += W) {
    float xt[N][W], scale[W];
    std::int32_t L[N][W];
    gather_lanes<W, N>(x, s0, count, xt);
    if (imatrix == nullptr) {
      lanes_qx<W, N>(xt, nullptr, 32, L, scale);
    } else {
      float qwt[N][W];
      gather_lanes<W, N>(imatrix, s0, count, qwt);
      lanes_qx<W, N>(xt, qwt, 32, L, scale);
    }
    std::int8_t codes[W * N];
    scatter_codes<W, N>(L, codes);
    for (int b = 0; b < W / 16 && s0 + 16 * b < count; ++b) {
      const std::int64_t block = (s0 + 16 * b) / 16;
      finish_q6_k_block(x + block * ggml_super_block, scale + 16 * b, codes + ggml_super_block * b,
                        y[block]);
    }
  }
}

// The legacy 32-blocks with an imatrix (sigma^2 over the whole row). Without one the tier's
// plain kernels run; this is only called with imatrix != nullptr.
template <int W, class Block>
void lanes_row_legacy_imatrix(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  constexpr int N = 32;
  auto* y = static_cast<Block*>(blocks);
  const std::int64_t count = n / N;
  float sum_x2 = 0;
  for (std::int64_t j = 0; j < n; ++j)
    sum_x2 += x[j] * x[j];
  const float sigma2_row = sum_x2 / static_cast<float>(n);
  float sigma2[W];
  for (int k = 0; k < W; ++k)
    sigma2[k] = sigma2_row;
  for (std::int64_t s0 = 0; s0 < count; s0 += W) {
    float xt[N][W], w[N][W], sw[W], scale[W], the_min[W];
    std::int32_t L[N][W];
    gather_lanes<W, N>(x, s0, count, xt);
    lanes_imatrix_weights<W, N>(xt, imatrix, s0, count, sigma2, w, sw);
    if constexpr (std::is_same_v<Block, BlockQ4_0>) {
      lanes_qx<W, N>(xt, w, 8, L, scale);
    } else if constexpr (std::is_same_v<Block, BlockQ5_0>) {
      lanes_qx<W, N>(xt, w, 16, L, scale);
    } else if constexpr (std::is_same_v<Block, BlockQ4_1>) {
      lanes_qkx<W, N>(xt, w, 15, -0.9f, 0.05f, 36, false, true, L, scale, the_min);
    } else {
      lanes_qkx<W, N>(xt, w, 31, -0.9f, 0.05f, 36, false, true, L, scale, the_min);
    }
    std::uint8_t codes[W * N];
    scatter_codes<W, N>(L, codes);
    for (int k = 0; k < W && s0 + k < count; ++k) {
      Block& block = y[s0 + k];
      if constexpr (std::is_same_v<Block, BlockQ4_0>) {
        finish_q4_0(scale[k], codes + N * k, block);
      } else if constexpr (std::is_same_v<Block, BlockQ5_0>) {
        finish_q5_0(scale[k], codes + N * k, block);
      } else if constexpr (std::is_same_v<Block, BlockQ4_1>) {
        finish_q4_1(scale[k], the_min[k], codes + N * k, block);
      } else {
        finish_q5_1(scale[k], the_min[k], codes + N * k, block);
      }
    }
  }
}

// IQ4_NL: lanes are 32-value blocks (sigma^2 per block), then the indices for the fp16-stored
// block's float scale.
template <int W>
void lanes_row_iq4_nl(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  constexpr int N = 32;
  auto* y = static_cast<BlockIq4Nl*>(blocks);
  const std::int64_t count = n / N;
  for (std::int64_t s0 = 0; s0 < count; s0 += W) {
    float xt[N][W], w[N][W], d[W];
    gather_lanes<W, N>(x, s0, count, xt);
    if (imatrix == nullptr) {
      for (int i = 0; i < N; ++i)
        for (int k = 0; k < W; ++k)
          w[i][k] = xt[i][k] * xt[i][k];
    } else {
      float sigma2[W], sw[W];
      for (int k = 0; k < W; ++k)
        sigma2[k] = 0;
      for (int i = 0; i < N; ++i)
        for (int k = 0; k < W; ++k)
          sigma2[k] += xt[i][k] * xt[i][k];
      for (int k = 0; k < W; ++k)
        sigma2[k] *= 2.0f / 32;
      lanes_imatrix_weights<W, N>(xt, imatrix, s0, count, sigma2, w, sw);
    }
    lanes_iq4nl_scale<W>(xt, w, d);
    std::int32_t index[N][W];
    float id[W];
    for (int k = 0; k < W; ++k)
      id[k] = d[k] != 0.0f ? 1 / d[k] : 0.0f;
    for (int i = 0; i < N; ++i) {
      for (int k = 0; k < W; ++k) {
        float unused;
        lane_iq4nl_pick(id[k] * xt[i][k], &unused, &index[i][k]);
      }
    }
    std::uint8_t codes[W * N];
    scatter_codes<W, N>(index, codes);
    for (int k = 0; k < W && s0 + k < count; ++k)
      finish_iq4_nl(d[k], codes + N * k, y[s0 + k]);
  }
}

/// Puts the lane-search quantizers (K-quants and IQ4_NL) at W lanes into `table`: the entries
/// every ISA tier shares; each tier adds its own Q8_0 / Q4_x / Q5_x / F16 / BF16 kernels.
/// Q3_K's coordinate descent is one long dependency chain per lane: it gets twice the lanes.
template <int W>
void fill_ggml_lane_quantizers(KernelTable& table) {
  const auto set = [&](GgmlKernel kernel, GgmlQuantizeRowFn fn) {
    table.ggml_quantize[static_cast<int>(kernel)] = fn;
  };
  set(GgmlKernel::q2_k, lanes_row_q2_k<W>);
  set(GgmlKernel::q3_k, lanes_row_q3_k<2 * W>);
  set(GgmlKernel::q4_k, lanes_row_k4<W, 15, BlockQ4_K>);
  set(GgmlKernel::q5_k, lanes_row_k4<W, 31, BlockQ5_K>);
  set(GgmlKernel::q6_k, lanes_row_q6_k<W>);
  set(GgmlKernel::iq4_nl, lanes_row_iq4_nl<W>);
}

}  // namespace
}  // namespace lucid::quantization::kernels
