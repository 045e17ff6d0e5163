// WeightGrid: the low-bit grid of a Linear weight [N, K] (dtype, symmetric or affine, group size)
// and RTN on it.
#pragma once

#include <cstdint>
#include <span>

#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// The grid every weight algorithm (RTN, GPTQ, AWQ, HQQ, importance-weighted
/// RTN) quantizes a Linear weight W [N_out, K_in] onto:
/// - group_size > 0: per-group along K (QParams::per_group, ch_axis = 1,
///   params [N, ceil(K / group_size)]); group_size == 0: per output channel
///   (QParams::per_channel, ch_axis = 0);
/// - symmetric: QScheme::PER_CHANNEL_SYMMETRIC (qint4: s = max|w| / 7.5, codes
///   -8..7; quint4: the same with zero point 8, GPTQ's symmetric grid);
///   otherwise PER_CHANNEL_AFFINE (qdtype unsigned, e.g. quint4: s = (max' -
///   min') / 15 over the range widened to 0, z = round(-min' / s)).
struct WeightGrid {
  QDtype qdtype = qint4;
  bool symmetric = true;
  std::int64_t group_size = 128;

  QScheme qscheme() const {
    return symmetric ? QScheme::PER_CHANNEL_SYMMETRIC : QScheme::PER_CHANNEL_AFFINE;
  }
  /// Throws Error when group_size < 0.
  void validate() const;
  /// Number of parameter pairs along K for K input columns.
  std::int64_t groups(std::int64_t features) const;
  /// The QParams of this grid for `scale` / `zero_point` laid out [N, groups(K)].
  QParams make_qparams(std::vector<float> scale, std::vector<std::int32_t> zero_point) const;
};

/// Round-to-nearest on the grid: each group's min-max parameters
/// (choose_qparams), then quantize. W must be rank 2, floating point; throws Error otherwise.
QuantizedTensor quantize_rtn(const TensorView& weight, const WeightGrid& grid);

/// The output-error proxy tr(ΔW H ΔWᵀ) = Σ_t ‖(W − Ŵ) x_t‖² for H = Σ x xᵀ:
/// `weight` and `reconstructed` are [N, K] (any float type), `hessian` is
/// [K, K] row-major. Throws Error on mismatched shapes.
double output_error_proxy(const TensorView& weight, const TensorView& reconstructed,
                          std::span<const double> hessian);

}  // namespace lucid::quantization
