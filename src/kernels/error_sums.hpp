// Internal: the sums behind error metrics, accumulated by a loop compiled once per tier.
#pragma once

#include <cstdint>

namespace lucid::quantization::kernels {

/// Sums over elements of (x, x_hat) pairs, as error_metrics forms them (in double).
struct ErrorSums {
  double sq_error = 0;           ///< sum (x_hat - x)^2
  double sq_signal = 0;          ///< sum x^2
  double sq_reconstruction = 0;  ///< sum x_hat^2
  double dot = 0;                ///< sum x * x_hat
  double max_abs_error = 0;      ///< max |x_hat - x|
};

/// Adds the `n` pairs (x[k], x_hat[k]) to `sums`, all finite. One definition per tier (the
/// same source, compiled with that tier's flags); the order in which the compiler's vector
/// lanes add the terms depends on the vector width, so tiers may differ in the last bits.
using AccumulateErrorsFn = void (*)(const float* x, const float* x_hat, std::int64_t n,
                                    ErrorSums& sums);
void accumulate_errors__reference(const float* x, const float* x_hat, std::int64_t n,
                                  ErrorSums& sums);
#if defined(LUCIDQ_X86_KERNELS)
void accumulate_errors__avx2(const float* x, const float* x_hat, std::int64_t n, ErrorSums& sums);
void accumulate_errors__avx512(const float* x, const float* x_hat, std::int64_t n, ErrorSums& sums);
#endif

}  // namespace lucid::quantization::kernels
