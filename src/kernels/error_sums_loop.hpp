// Internal (error-sums kernel files only): the loop behind kernels/error_sums.hpp, one source for
// every tier.
#pragma once

#include "kernels/error_sums.hpp"

namespace lucid::quantization::kernels {

/// The loop the tier files compile. `static`: every file keeps its own copy, so the linker
/// can never hand one tier's instructions to another (as it could with an inline function).
/// No standard-library calls, for the same reason.
static void accumulate_errors_loop(const float* x, const float* x_hat, std::int64_t n,
                                   ErrorSums& sums) {
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

}  // namespace lucid::quantization::kernels
