// Internal: error metrics and non-finite counts of whole tensors in one streaming, parallel pass
// (the engine behind the public error_metrics and the checkpoint reports).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/kernel_table.hpp"
#include "lucid/quantization/metrics.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::detail {

/// The sums ErrorMetrics is made of: finite pairs, non-finite originals, saturated codes and
/// the error sums (in double).
struct MetricSums {
  std::int64_t count = 0;
  std::int64_t nonfinite = 0;
  std::int64_t saturated = 0;
  kernels::ErrorSums errors;

  void add(const MetricSums& other);
  /// The figures, as metrics.hpp defines them.
  ErrorMetrics finish() const;
};

/// Adds the pairs (x[k], x_hat[k]) to `sums` with `kernels`' error-sums kernel, in chunks;
/// pairs whose x is not finite are counted as non-finite and zeroed in both arrays.
void add_pairs(const kernels::KernelTable& kernels, float* x, float* x_hat, std::int64_t n,
               MetricSums& sums);

/// Whether x's unclamped code nearbyint(x * (1.0f / scale)) + zero_point leaves the grid.
bool saturates(float x, float scale, std::int32_t zero_point, const QDtype& qdtype);

/// error_metrics(original, reconstructed) for float32 / float16 / bfloat16 views of one shape
/// (unaligned data allowed), in the same blocks and chunks as the quantized form below.
ErrorMetrics streaming_error_metrics(const TensorView& original, const TensorView& reconstructed);

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

/// The number of NaN and +-Inf elements of `x` (0 when x is not floating point). Unaligned
/// data allowed; parallel.
std::int64_t count_nonfinite(const TensorView& x);

}  // namespace lucid::quantization::detail
