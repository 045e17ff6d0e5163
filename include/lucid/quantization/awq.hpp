// AWQ (Lin et al. 2023): activation-aware per-input-channel weight scaling and clipping, searched
// on calibration statistics.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/weight_grid.hpp"

namespace lucid::quantization {

/// Options of awq_quantize (llm-awq's auto_scale / auto_clip defaults).
struct AwqOptions {
  WeightGrid grid;
  /// α takes the values r / grid_points for r = 0 .. grid_points − 1 (20: 0 .. 0.95).
  int grid_points = 20;
  /// Search a per-(row, group) clipping range after scaling.
  bool clip = true;
  /// Clip candidates max|w|·(1 − i / clip_grid), i = 0 .. clip_grid·max_shrink − 1 (20 and 0.5: 1
  /// .. 0.55).
  int clip_grid = 20;
  double max_shrink = 0.5;
};

/// What awq_quantize returns.
struct AwqResult {
  /// Q(clip(W · diag(s))): the weight to store. The layer's input must be
  /// divided by s, which the caller folds into the previous op
  /// (norm γ, β /= s; previous Linear's output rows /= s).
  QuantizedTensor quantized;
  /// The per-input-channel scales s [K] (all 1 for α = 0).
  std::vector<float> scales;
  float alpha = 0;
  /// The calibration output error tr(ΔW H ΔWᵀ) / (rows · N) for each α of the grid (no clipping).
  std::vector<double> loss_per_alpha;
  /// The calibration output MSE of the final weight (scales and clipping).
  double loss = 0;
};

/// AWQ for one Linear weight [N, K] from its calibration statistics:
/// `hessian` = Σ x xᵀ [K, K] over `rows` calibration rows and `mean_abs` =
/// mean |x_j| [K]. For each α: s = max(mean_abs^α, 1e-4), s /= sqrt(max s ·
/// min s), loss = output MSE of Q(W·s)/s on the calibration rows (computed as
/// tr(ΔW H ΔWᵀ) / (rows · N), which equals mean ‖(W − Ŵ) x‖² / N exactly);
/// the best α is kept (α = 0 gives s = 1 and plain RTN, so the search never
/// does worse than RTN on the calibration rows). Then, with `clip`, each row
/// group's range is shrunk to the candidate of least output error. Throws
/// Error on shapes, non-finite input, rows < 1 or bad options.
AwqResult awq_quantize(const TensorView& weight, std::span<const double> hessian, std::int64_t rows,
                       std::span<const double> mean_abs, const AwqOptions& options = {});

/// The folding rules of AWQ and SmoothQuant (exact in real arithmetic).
/// Norm before the Linear: γ_j /= s_j, β_j /= s_j (beta may be empty: RMSNorm).
void fold_scales_into_norm(std::span<float> gamma, std::span<float> beta,
                           std::span<const float> scales);
/// Previous Linear W_prev [M, N] (+ bias [M]): its last scales.size() output rows are divided by s.
void fold_scales_into_previous_linear(std::span<float> weight, std::int64_t out_features,
                                      std::span<float> bias, std::span<const float> scales);
/// The consuming Linear W [N, K]: columns multiplied by s (W · diag(s)).
void scale_weight_columns(std::span<float> weight, std::int64_t in_features,
                          std::span<const float> scales);

}  // namespace lucid::quantization
