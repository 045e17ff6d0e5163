// Importance-weighted RTN: per-group scale search minimising Σ w_j (x_j − x̂_j)² (llama.cpp's
// imatrix idea).
#pragma once

#include <span>

#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/weight_grid.hpp"

namespace lucid::quantization {

/// Quantizes W [N, K] on `grid`, choosing each group's parameters to minimise
/// the importance-weighted error Σ_j importance_j (w_j − ŵ_j)², importance [K]
/// (≥ 0, finite; e.g. the per-column mean square activations ⟨x_j²⟩). The
/// candidates are the min-max range shrunk by p = 1 − i/40, i = 0..19 (both
/// ends), and for each the weighted least-squares rescale Σ w x l / Σ w l² of
/// its codes (symmetric grids); p = 1 is plain RTN, so the weighted error is
/// never above RTN's. Throws Error on shapes or values.
QuantizedTensor quantize_weighted_rtn(const TensorView& weight, std::span<const double> importance,
                                      const WeightGrid& grid);

}  // namespace lucid::quantization
