// SmoothQuant (Xiao et al. 2022): migrate activation outliers into the weights before W8A8.
#pragma once

#include <span>
#include <vector>

#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// The per-input-channel smoothing factors of the Linears that share one input:
/// s_j = max(act_abs_max_j^α / w_max_j^(1−α), 1e-5) with w_max_j = max over the
/// weights (each [N_i, K]) of max_rows |W[:, j]|, clamped ≥ 1e-5 (the reference
/// smooth.py). The Linears then use W·diag(s) and their input x/s, which the
/// caller folds into the previous LayerNorm / RMSNorm / Linear
/// (fold_scales_into_norm, fold_scales_into_previous_linear). α in [0, 1];
/// throws Error on shapes, non-finite values or α out of range.
std::vector<float> smooth_quant_scales(std::span<const float> act_abs_max,
                                       std::span<const TensorView> weights, double alpha = 0.5);

}  // namespace lucid::quantization
