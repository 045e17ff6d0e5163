// Internal: the error-minimizing grid of one weight-only group (WeightOnlyGrid::search).
#pragma once

#include <cstdint>

namespace lucid::quantization::weight_only {

/// A group's parameters: ŵ = scale · (q − zero_point). scale may be negative on the signed grid
/// (the signed extreme on the grid minimum, as ggml's d = extreme / −8); it is already rounded
/// to the storage type.
struct GroupParams {
  float scale = 0;
  std::int32_t zero_point = 0;
};

/// Rounds a scale to how it is stored (identity for f32, nearest-even bf16 or f16).
using ScaleRounding = float (*)(float);

/// Chooses the codes q[0, n) and the parameters of the group x[0, n) (finite values) on the full
/// grid of `bits`: symmetric, q in [−2^(b−1), 2^(b−1) − 1] with zero point 0; affine,
/// q in [0, 2^b − 1] with an integer zero point in the same range. Of a fixed set of candidate
/// grids (the signed-extreme rule, its neighbours and their least-squares scales; for affine the
/// min/max range shrunk at either end, refitted), it keeps the one with the least Σ (x − ŵ)²,
/// evaluating each with its stored scale and the codes rounded to it, so the codes always fit
/// the stored scale. Deterministic; an all-zero group gets scale default_eps, codes 0.
GroupParams search_group(const float* x, std::int64_t n, int bits, bool symmetric,
                         ScaleRounding round_scale, std::int32_t* q);

}  // namespace lucid::quantization::weight_only
