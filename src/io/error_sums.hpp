// Internal: the sums behind error metrics, accumulated by a loop compiled once per ISA tier.
#pragma once

#include <cstdint>

namespace lucid::quantization::detail {

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
void accumulate_errors__avx2(const float* x, const float* x_hat, std::int64_t n, ErrorSums& sums);
void accumulate_errors__avx512(const float* x, const float* x_hat, std::int64_t n, ErrorSums& sums);

/// The loop the tier files compile. `static`: every file keeps its own copy, so the linker
/// can never hand one tier's instructions to another (as it could with an inline function).
/// No standard-library calls, for the same reason.
[[maybe_unused]] static void accumulate_errors_loop(const float* x, const float* x_hat,
                                                    std::int64_t n, ErrorSums& sums) {
  double sq_error = 0, sq_signal = 0, sq_reconstruction = 0, dot = 0, max_error = 0;
#pragma omp simd reduction(+ : sq_error, sq_signal, sq_reconstruction, dot) reduction(max : max_error)
  for (std::int64_t k = 0; k < n; ++k) {
    const double xd = x[k];
    const double hd = x_hat[k];
    const double error = hd - xd;
    const double magnitude = error < 0 ? -error : error;
    sq_error += error * error;
    sq_signal += xd * xd;
    sq_reconstruction += hd * hd;
    dot += xd * hd;
    max_error = max_error < magnitude ? magnitude : max_error;
  }
  sums.sq_error += sq_error;
  sums.sq_signal += sq_signal;
  sums.sq_reconstruction += sq_reconstruction;
  sums.dot += dot;
  if (sums.max_abs_error < max_error) sums.max_abs_error = max_error;
}

}  // namespace lucid::quantization::detail
