// Internal: error metrics and non-finite counts of whole tensors in one streaming, parallel pass.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/error_sums.hpp"
#include "lucid/quantization/metrics.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::detail {

/// The figures of error_metrics(original, quantized) (same definitions: reconstruction
/// float(double(s) * (q - z)), sums in double, non-finite originals left out and counted,
/// saturation = the unclamped code nearbyint(x * (1.0f / s)) + z outside the grid) without
/// its whole-tensor float32 copies: the tensor is read in fixed blocks of 64 Ki elements,
/// in parallel, and the blocks' sums are added in order, so the result does not depend on
/// the thread count. count, nonfinite_count, max_abs_error and fraction_saturated equal
/// error_metrics' exactly; the sums (hence mse, sqnr_db, cosine_similarity) may differ in
/// the last bits because they are added in another order (vector lanes whose width follows
/// the active ISA tier). `original` must be float32,
/// float16 or bfloat16 (unaligned data allowed) with the quantized tensor's shape.
ErrorMetrics streaming_error_metrics(const TensorView& original, const QuantizedTensor& quantized);
/// The same for codes in `storage` (as quantize_into writes them) quantized with `qparams`.
/// Throws Error when qparams do not fit the original's shape or storage has another size.
ErrorMetrics streaming_error_metrics(const TensorView& original, const QParams& qparams,
                                     std::span<const std::uint8_t> storage);

/// Error metrics of a reconstruction fed in pieces of float32 pairs (x, x_hat), x finite:
/// the same formulas as error_metrics, fraction_saturated 0. Not thread-safe.
class ErrorMetricsAccumulator {
 public:
  ErrorMetricsAccumulator();
  void add(const float* x, const float* x_hat, std::int64_t n);
  /// Adds another accumulator's sums (fold pieces in a fixed order for reproducible sums).
  void merge(const ErrorMetricsAccumulator& other);
  ErrorMetrics finish() const;

 private:
  std::int64_t count_ = 0;
  kernels::ErrorSums sums_;
  kernels::AccumulateErrorsFn accumulate_;
};

/// The number of NaN and +-Inf elements of `x` (0 when x is not floating point). Unaligned
/// data allowed; parallel.
std::int64_t count_nonfinite(const TensorView& x);

}  // namespace lucid::quantization::detail
