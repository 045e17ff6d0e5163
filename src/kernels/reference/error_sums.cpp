// The error-sums loop compiled for the reference tier (baseline flags).
#include "kernels/error_sums_loop.hpp"

namespace lucid::quantization::kernels {

void accumulate_errors__reference(const float* x, const float* x_hat, std::int64_t n,
                                  ErrorSums& sums) {
  accumulate_errors_loop(x, x_hat, n, sums);
}

}  // namespace lucid::quantization::kernels
