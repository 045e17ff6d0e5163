// Internal: the K-quants' second half (scale quantization, fp16 super-scales, the final
// re-quantization with the stored scales, bit packing), exactly as ggml-quants.c does it.
// Internal linkage: the reference tier (ggml_kquant_finish.cpp) and each ISA tier compile their
// own copy, so the re-quantization vectorises with the tier's instructions. No std templates.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/ggml_blocks.hpp"
#include "kernels/ggml_kquant_finish.hpp"
#include "kernels/reference/ggml_search.hpp"

namespace lucid::quantization::kernels {
namespace {  // NOLINT(google-build-namespaces): one copy per tier, see above

constexpr int qk_k = ggml_super_block;

inline int finish_nearest_int(float f) {  // ggml's nearest_int (ties to even)
  const float shifted = f + 12582912.0f;
  std::int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}
inline int finish_clamp(int l, int lo, int hi) {
  return l < lo ? lo : (l > hi ? hi : l);
}
inline int finish_min(int a, int b) {
  return a < b ? a : b;
}

// Byte 32h + l holds the 2-bit codes of elements 128h + l + 32k at bits 2k (k = 0..3).
inline void pack_2bit(const std::uint8_t* L, std::uint8_t* qs) {
  for (int j = 0; j < qk_k; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<std::uint8_t>(L[j + l] | (L[j + l + 32] << 2) |
                                                (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

// Re-quantizes every sub-block of `size` values to x ~ d * l - dm with the stored (fp16, integer)
// scales; sub-blocks whose scale is zero keep the search's codes.
inline void requantize_affine(const float* x, int size, int count, float d_all, float dmin_all,
                              const std::uint8_t* sc, const std::uint8_t* m, int nmax,
                              std::uint8_t* L) {
  for (int j = 0; j < count; ++j) {
    const float d = d_all * static_cast<float>(sc[j]);
    if (d == 0.0f) continue;
    const float dm = dmin_all * static_cast<float>(m[j]);
    for (int ii = 0; ii < size; ++ii) {
      const int l = finish_nearest_int((x[size * j + ii] + dm) / d);
      L[size * j + ii] = static_cast<std::uint8_t>(finish_clamp(l, 0, nmax));
    }
  }
}

inline void pack_scale_min_k4(const std::uint8_t* ls, const std::uint8_t* lm,
                              std::uint8_t* scales) {
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

inline void pack_q3_scale(std::uint8_t* scales, int j, int l) {
  if (j < 8) {
    scales[j] = static_cast<std::uint8_t>(l & 0xf);
  } else {
    scales[j - 8] = static_cast<std::uint8_t>(scales[j - 8] | ((l & 0xf) << 4));
  }
  scales[j % 4 + 8] = static_cast<std::uint8_t>(scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
}

// Q4_K / Q5_K's 6-bit (scale, min) pairs, the fp16 d and dmin, and the re-quantization.
template <int Nmax, class Block>
void finish_k4(const float* x, const float* scales, const float* mins, const float* sw,
               std::uint8_t* L, Block& y) {
  std::uint8_t ls[8];
  std::uint8_t lm[8];
  if (sw == nullptr) {
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < 8; ++j) {
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; ++j) {
      const auto s = static_cast<std::uint8_t>(finish_nearest_int(inv_scale * scales[j]));
      const auto m = static_cast<std::uint8_t>(finish_nearest_int(inv_min * mins[j]));
      ls[j] = (s < 63 ? s : std::uint8_t{63});
      lm[j] = (m < 63 ? m : std::uint8_t{63});
    }
    y.d = ggml_fp16(max_scale / 63.0f);
    y.dmin = ggml_fp16(max_min / 63.0f);
  } else {
    const float d_block = reference::make_qp_quants(8, 63, scales, ls, sw);
    const float m_block = reference::make_qp_quants(8, 63, mins, lm, sw);
    for (int j = 0; j < 8; ++j) {
      ls[j] = (ls[j] < 63 ? ls[j] : std::uint8_t{63});
      lm[j] = (lm[j] < 63 ? lm[j] : std::uint8_t{63});
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

inline void finish_q2_k_block(const float* x, const float* scales, const float* mins,
                              const float* sw, std::uint8_t* L, BlockQ2_K& y) {
  if (sw == nullptr) {
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < 16; ++j) {
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = 15.0f / max_scale;
      for (int j = 0; j < 16; ++j)
        y.scales[j] = static_cast<std::uint8_t>(finish_nearest_int(iscale * scales[j]));
      y.d = ggml_fp16(max_scale / 15.0f);
    } else {
      std::memset(y.scales, 0, sizeof y.scales);
      y.d = ggml_fp16(0.0f);
    }
    if (max_min > 0) {
      const float iscale = 15.0f / max_min;
      for (int j = 0; j < 16; ++j) {
        const int l = finish_nearest_int(iscale * mins[j]);
        y.scales[j] = static_cast<std::uint8_t>(y.scales[j] | (l << 4));
      }
      y.dmin = ggml_fp16(max_min / 15.0f);
    } else {
      y.dmin = ggml_fp16(0.0f);
    }
  } else {
    std::uint8_t Ls[16];
    std::uint8_t Lm[16];
    y.d = ggml_fp16(reference::make_qp_quants(16, 15, scales, Ls, sw));
    y.dmin = ggml_fp16(reference::make_qp_quants(16, 15, mins, Lm, sw));
    for (int j = 0; j < 16; ++j)
      y.scales[j] = static_cast<std::uint8_t>(Ls[j] | (Lm[j] << 4));
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

inline void finish_q3_k_block(const float* x, const float* scales, const float* sw, std::int8_t* L,
                              BlockQ3_K& y) {
  std::memset(y.scales, 0, sizeof y.scales);
  if (sw == nullptr) {
    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < 16; ++j) {
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        auto l = static_cast<std::int8_t>(finish_nearest_int(iscale * scales[j]));
        l = static_cast<std::int8_t>(finish_clamp(static_cast<int>(l), -32, 31) + 32);
        pack_q3_scale(y.scales, j, l);
      }
      y.d = ggml_fp16(1 / iscale);
    } else {
      y.d = ggml_fp16(0.0f);
    }
  } else {
    std::int8_t Ls[16];
    const float d_block = reference::make_qx_quants(16, 32, scales, Ls, 1, sw);
    for (int j = 0; j < 16; ++j)
      pack_q3_scale(y.scales, j, Ls[j]);
    y.d = ggml_fp16(d_block);
  }
  const float d_all = ggml_fp32(y.d);
  for (int j = 0; j < 16; ++j) {
    const auto sc = static_cast<std::int8_t>(q3_scale(y.scales, j) - 32);
    const float d = d_all * static_cast<float>(sc);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = finish_nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<std::int8_t>(finish_clamp(l, -4, 3) + 4);
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

inline void finish_q4_k_block(const float* x, const float* scales, const float* mins,
                              const float* sw, std::uint8_t* L, BlockQ4_K& y) {
  finish_k4<15>(x, scales, mins, sw, L, y);
  std::uint8_t* q = y.qs;
  for (int j = 0; j < qk_k; j += 64, q += 32) {
    for (int l = 0; l < 32; ++l)
      q[l] = static_cast<std::uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

inline void finish_q5_k_block(const float* x, const float* scales, const float* mins,
                              const float* sw, std::uint8_t* L, BlockQ5_K& y) {
  finish_k4<31>(x, scales, mins, sw, L, y);
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

inline void finish_q6_k_block(const float* x, const float* scales, std::int8_t* L, BlockQ6_K& y) {
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < reference::ggml_group_max_eps) {
    std::memset(&y, 0, sizeof y);
    y.d = ggml_fp16(0.0f);
    return;
  }
  const float iscale = -128.0f / max_scale;
  y.d = ggml_fp16(1 / iscale);
  for (int ib = 0; ib < 16; ++ib)
    y.scales[ib] =
        static_cast<std::int8_t>(finish_min(127, finish_nearest_int(iscale * scales[ib])));
  const float d_all = ggml_fp32(y.d);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * static_cast<float>(y.scales[j]);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = finish_nearest_int(x[16 * j + ii] / d);
      L[16 * j + ii] = static_cast<std::int8_t>(finish_clamp(l, -32, 31) + 32);
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
}  // namespace lucid::quantization::kernels
