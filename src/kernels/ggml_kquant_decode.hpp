// Internal: Q3_K and Q6_K decoders shaped for the compiler's vectoriser (one 16-value sub-block
// per loop, its scale a loop constant); same products in the same order as the reference
// decoders, so the same bits. Included only by the ISA tier files (internal linkage).
#pragma once

#include <cstdint>

#include "kernels/ggml_blocks.hpp"

namespace lucid::quantization::kernels {
namespace {  // NOLINT(google-build-namespaces): one copy per tier

// y = dl * (low2 - (high bit ? 0 : 4)), sub-block by sub-block.
inline void decode_q3_k_blocks(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ3_K*>(blocks);
  for (std::int64_t i = 0; i < n / ggml_super_block; ++i, y += ggml_super_block) {
    const float d_all = ggml_fp32(x[i].d);
    const std::uint8_t* scales = x[i].scales;
    for (int j = 0; j < 16; ++j) {
      const int low_scale = j < 8 ? scales[j] & 0xf : scales[j - 8] >> 4;
      const int scale = low_scale | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
      const float dl = d_all * static_cast<float>(scale - 32);
      const int h = j / 8;
      const int part = j % 2;
      const int shift = 2 * ((j % 8) / 2);
      const int bit = 4 * h + (j % 8) / 2;
      const std::uint8_t* q = x[i].qs + 32 * h + 16 * part;
      const std::uint8_t* hm = x[i].hmask + 16 * part;
      float* out = y + 16 * j;
      for (int l = 0; l < 16; ++l) {
        const int low = (q[l] >> shift) & 3;
        const int high = (hm[l] >> bit) & 1;
        out[l] = dl * static_cast<float>(low - 4 + 4 * high);
      }
    }
  }
}

// y = (d * scale) * (q - 32), 16 values per scale.
inline void decode_q6_k_blocks(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ6_K*>(blocks);
  for (std::int64_t i = 0; i < n / ggml_super_block; ++i, y += ggml_super_block) {
    const float d = ggml_fp32(x[i].d);
    for (int half = 0; half < 2; ++half) {
      const std::uint8_t* ql = x[i].ql + 64 * half;
      const std::uint8_t* qh = x[i].qh + 32 * half;
      const std::int8_t* sc = x[i].scales + 8 * half;
      float* out = y + 128 * half;
      for (int part = 0; part < 2; ++part) {  // l in [16 part, 16 part + 16): scale index part
        const int base = 16 * part;
        const float d1 = d * static_cast<float>(sc[part]);
        const float d2 = d * static_cast<float>(sc[part + 2]);
        const float d3 = d * static_cast<float>(sc[part + 4]);
        const float d4 = d * static_cast<float>(sc[part + 6]);
        for (int l = base; l < base + 16; ++l) {
          const int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
          const int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
          const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
          out[l] = d1 * static_cast<float>(q1);
          out[l + 32] = d2 * static_cast<float>(q2);
          out[l + 64] = d3 * static_cast<float>(q3);
          out[l + 96] = d4 * static_cast<float>(q4);
        }
      }
    }
  }
}

}  // namespace
}  // namespace lucid::quantization::kernels
