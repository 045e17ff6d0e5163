// Internal: the second half of every K-quant: from the per-sub-block float scales (and mins) and
// codes a search found to the stored block (scale quantization, fp16 super-scales, the final
// re-quantization with the stored scales, bit packing). Shared by every tier, so a tier only
// has to reproduce the searches (src/kernels/reference/ggml_kquant_finish.cpp).
#pragma once

#include <cstdint>

#include "kernels/ggml_blocks.hpp"

namespace lucid::quantization::kernels {
namespace {  // NOLINT(google-build-namespaces): internal linkage, as the ISA tiers use them too

/// The 6-bit (scale, min) of sub-block j of a Q4_K / Q5_K block (ggml's get_scale_min_k4).
inline void scale_min_k4(int j, const std::uint8_t* q, std::uint8_t* d, std::uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<std::uint8_t>((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

/// Q3_K's 6-bit scale of sub-block j as stored (0..63; the signed scale is this - 32).
inline int q3_scale(const std::uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0xf : scales[j - 8] >> 4;
  return low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

}  // namespace

/// Q2_K: 16 sub-blocks of 16. sw == nullptr: the reference scale quantization (4 bits of
/// 15 / max); else ggml's imatrix one (make_qp_quants with the sub-block weights sw).
/// L holds the search's codes (0..3) and is overwritten.
void finish_q2_k(const float* x, const float* scales, const float* mins, const float* sw,
                 std::uint8_t* L, BlockQ2_K& y);

/// Q3_K: 16 signed sub-block scales; L the search's codes (stored l + 4), overwritten.
void finish_q3_k(const float* x, const float* scales, const float* sw, std::int8_t* L,
                 BlockQ3_K& y);

/// Q4_K / Q5_K: 8 sub-blocks of 32 with (scale, min); L the search's codes, overwritten.
void finish_q4_k(const float* x, const float* scales, const float* mins, const float* sw,
                 std::uint8_t* L, BlockQ4_K& y);
void finish_q5_k(const float* x, const float* scales, const float* mins, const float* sw,
                 std::uint8_t* L, BlockQ5_K& y);

/// Q6_K: 16 signed sub-block scales; L the search's codes (stored l + 32), overwritten.
void finish_q6_k(const float* x, const float* scales, std::int8_t* L, BlockQ6_K& y);

/// The legacy imatrix blocks from their search: the float scale d (and the offset the_min the
/// search returns, stored as m = fp16(-the_min)) and 32 codes (0..15 or 0..31), as ggml stores them
/// (src/kernels/reference/ggml_legacy.cpp).
void finish_q4_0(float d, const std::uint8_t* codes, BlockQ4_0& y);
void finish_q5_0(float d, const std::uint8_t* codes, BlockQ5_0& y);
void finish_q4_1(float d, float the_min, const std::uint8_t* codes, BlockQ4_1& y);
void finish_q5_1(float d, float the_min, const std::uint8_t* codes, BlockQ5_1& y);
/// IQ4_NL from its float scale and 32 codebook indices (src/kernels/reference/ggml_iq4_nl.cpp).
void finish_iq4_nl(float d, const std::uint8_t* indices, BlockIq4Nl& y);

}  // namespace lucid::quantization::kernels
