// Error metrics between a tensor and its quantized reconstruction.
#pragma once

#include <cstdint>
#include <vector>

#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// How much a reconstruction x_hat differs from the original x. Elements
/// where x is NaN or infinite are left out of every figure and counted.
struct ErrorMetrics {
  std::int64_t count = 0;            ///< finite elements compared
  std::int64_t nonfinite_count = 0;  ///< elements of x that are NaN or +-Inf
  double mse = 0;                    ///< mean of (x_hat - x)^2 (the notes' quantization_error)
  double rmse = 0;                   ///< sqrt(mse)
  double max_abs_error = 0;          ///< max |x_hat - x|
  double sqnr_db = 0;  ///< 10 log10(sum x^2 / sum (x_hat - x)^2); +inf when the error is 0
  double cosine_similarity = 1;   ///< <x, x_hat> / (|x| |x_hat|); 1 when both are 0, 0 when one is
  double fraction_saturated = 0;  ///< share of elements whose code was clamped (needs the qparams)
};

/// The notes' quantization_error: mean((dequantized - original)^2), non-finite
/// originals left out. Throws Error when the shapes differ.
double quantization_error(const TensorView& original, const TensorView& dequantized);

/// All metrics of a reconstruction; fraction_saturated is 0 (unknown).
ErrorMetrics error_metrics(const TensorView& original, const TensorView& reconstructed);
/// All metrics of `quantized` against the `original` it came from, including
/// the share of elements whose code saturated.
ErrorMetrics error_metrics(const TensorView& original, const QuantizedTensor& quantized);
/// The same, one entry per index along `axis` of the original.
std::vector<ErrorMetrics> error_metrics_per_channel(const TensorView& original,
                                                    const QuantizedTensor& quantized, int axis);
/// The same, one entry per (scale, zero point) slot of `quantized`'s parameters, in their
/// order: one per group for per-group parameters (group g of channel c at c · groups + g), one
/// per channel for per-channel ones, one for a per-tensor pair.
std::vector<ErrorMetrics> error_metrics_per_group(const TensorView& original,
                                                  const QuantizedTensor& quantized);

}  // namespace lucid::quantization
