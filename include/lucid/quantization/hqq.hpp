// HQQ (Badri & Shaji 2023): calibration-free half-quadratic optimisation of each group's zero
// point.
#pragma once

#include <cstdint>

#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/weight_grid.hpp"

namespace lucid::quantization {

/// HQQ's published defaults (mobiusml/hqq optimize_weights_proximal: lp_norm
/// 0.7, beta 10, kappa 1.01, 20 iterations, early stop).
struct HqqOptions {
  /// Must be affine (symmetric = false): HQQ moves the zero point.
  WeightGrid grid{quint4, false, 64};
  double lp_norm = 0.7;  ///< p of the sparsity-promoting ‖W − Ŵ‖_p^p, in (0, 1]
  double beta = 10;      ///< initial half-quadratic penalty, > 0
  double kappa = 1.01;   ///< β ← κ·β each iteration, >= 1
  int iterations = 20;
  /// Stop a group when its mean |W − Ŵ| stops decreasing.
  bool early_stop = true;
  /// HQQ's optional scale refinement (off in the published defaults): also try
  /// scales s·(1 + range·i/steps), i = −steps..steps, each with its optimised
  /// zero point, keeping the best. Useful here because lucidq stores integer
  /// zero points, which leave the zero-point-only optimisation little room.
  int scale_search_steps = 0;
  double scale_search_range = 0.05;
};

/// What hqq_quantize returns.
struct HqqResult {
  QuantizedTensor quantized;
  double start_abs_error = 0;  ///< mean |W − Ŵ| of the min-max (RTN) start
  double final_abs_error = 0;  ///< mean |W − Ŵ| of the result (never above the start)
};

/// HQQ on W [N, K]: starting from RTN's min-max parameters (scale fixed), each
/// group alternates W_r = (clamp(round(W/s + z)) − z)·s, W_e = shrink_p(W −
/// W_r, β) (sign(x)·relu(|x| − |x|^(p−1)/β)), z = mean(W_q − (W − W_e)/s),
/// β ← κβ, remembering the best z by mean |W − W_r|. lucidq stores integer zero
/// points, so the best float z is rounded down and up; per group the best of
/// those and the start is kept (best-restoring), by mean |W − Ŵ|. Throws Error on shapes,
/// non-finite weights or bad options.
HqqResult hqq_quantize(const TensorView& weight, const HqqOptions& options = {});

}  // namespace lucid::quantization
