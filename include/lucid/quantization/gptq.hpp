// GPTQ (Frantar et al. 2022): error-compensating quantization of a Linear weight from its input
// Hessian.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/weight_grid.hpp"

namespace lucid::quantization {

/// Options of gptq_quantize; the defaults are the reference implementation's
/// (IST-DASLab/gptq fasterquant: blocksize 128, percdamp 0.01, no act-order).
struct GptqOptions {
  WeightGrid grid;
  /// λ = percent_damp · mean(diag H) is added to diag H (>= 0, finite).
  double percent_damp = 0.01;
  /// Columns per lazy batch update (>= 1).
  std::int64_t block_size = 128;
  /// Quantize columns in order of decreasing diag(H) (AutoGPTQ desc_act).
  bool act_order = false;
  /// Group parameters from the original weight, fixed before the loop
  /// (reference --static-groups); otherwise each group's parameters come
  /// from the weights as updated when the group starts (the weights as they
  /// stood at the start of the current block: the reference's timing).
  bool static_groups = false;
};

/// What gptq_quantize returns.
struct GptqResult {
  /// The codes and parameters. Columns are in the original order unless
  /// permuted_columns (act_order && !static_groups && group_size > 0: groups
  /// formed in activation order), where column c of the tensor is input column
  /// permutation[c] (feed x[permutation]).
  QuantizedTensor quantized;
  bool permuted_columns = false;
  /// The order the columns were quantized in (identity without act-order).
  std::vector<std::int64_t> permutation;
  /// g_idx[k] = the group index of original input column k (AutoGPTQ's g_idx):
  /// k / group_size except for act-order with dynamic groups; 0 when per-channel.
  std::vector<std::int32_t> g_idx;
  /// The dequantized weight [N, K] in the original column order.
  Tensor dequantized;
  /// The reference's per-layer loss: ½ Σ (w − ŵ)² / [H⁻¹]_jj over all weights.
  double loss = 0;
  /// Input columns with diag(H) == 0, whose weights were zeroed.
  std::int64_t dead_columns = 0;
  /// True when the Cholesky factorization failed and RTN was used instead
  /// (H⁻¹ = I: the codes are RTN's); `warning` then says why.
  bool fell_back_to_rtn = false;
  std::string warning;
};

/// Quantizes `weight` [N, K] (float32, float16 or bfloat16) given the input
/// second-moment matrix `hessian` = Σ x xᵀ [K, K] (row-major, symmetric; its
/// scale does not matter). Columns are quantized one at a time, each one's
/// rounding error spread over the not yet quantized columns through the upper
/// Cholesky factor of (H + λI)⁻¹. Throws Error on wrong shapes, non-finite
/// entries, or bad options; a failed factorization is not an error (see
/// fell_back_to_rtn). Deterministic; thread-safe. Uses num_threads() threads, on which the
/// result never depends, and OpenBLAS's threads, whose count may change the last bits of the
/// factorization and the lazy updates (the loss; codes only on an exact rounding tie).
GptqResult gptq_quantize(const TensorView& weight, std::span<const double> hessian,
                         const GptqOptions& options = {});

}  // namespace lucid::quantization
