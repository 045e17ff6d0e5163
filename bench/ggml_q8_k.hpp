// ggml's q8_K activation rule (Q4_K's vec_dot partner) as a float round trip, for comparing
// against Q4_K with its own int8 activations (bench_weight_only, tests/test_weight_only_vs_ggml).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace lucidq_bench {

/// x (a multiple of 256 values) rounded as ggml's quantize_row_q8_K does (blocks of 256:
/// d = max / −127 on the signed extreme, q clamped to 127), decoded back to float.
inline std::vector<float> q8_k_round_trip(const std::vector<float>& x) {
  std::vector<float> out(x.size(), 0.0f);
  for (std::size_t b = 0; b < x.size(); b += 256) {
    float amax = 0, max = 0;
    for (std::size_t i = b; i < b + 256; ++i) {
      if (std::abs(x[i]) > amax) {
        amax = std::abs(x[i]);
        max = x[i];
      }
    }
    if (amax == 0) continue;
    const float iscale = -127.f / max;
    for (std::size_t i = b; i < b + 256; ++i) {
      const int q = std::min(127, static_cast<int>(std::nearbyint(iscale * x[i])));
      out[i] = static_cast<float>(q) * (1 / iscale);
    }
  }
  return out;
}

}  // namespace lucidq_bench
