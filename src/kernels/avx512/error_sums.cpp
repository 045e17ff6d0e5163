// The error-sums loop compiled for the avx512 tier (this file alone gets the avx512 flags).
#include "kernels/error_sums_loop.hpp"

namespace lucid::quantization::kernels {

void accumulate_errors__avx512(const float* x, const float* x_hat, std::int64_t n,
                               ErrorSums& sums) {
  accumulate_errors_loop(x, x_hat, n, sums);
}

}  // namespace lucid::quantization::kernels
