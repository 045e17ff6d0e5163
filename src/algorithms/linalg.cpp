// The LAPACKE-backed factorizations of the weight algorithms.
#include "algorithms/linalg.hpp"

#include <lapacke.h>

namespace lucid::quantization::detail {

bool inverse_cholesky_upper(std::vector<double>& matrix, std::int64_t k) {
  const auto n = static_cast<lapack_int>(k);
  double* a = matrix.data();
  // Row-major lower L (A = L Lᵀ), then A⁻¹ in the lower triangle.
  if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, a, n) != 0) return false;
  if (LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', n, a, n) != 0) return false;
  // Mirror the lower triangle so the upper factorization reads A⁻¹ itself.
  for (std::int64_t i = 0; i < k; ++i) {
    for (std::int64_t j = i + 1; j < k; ++j)
      a[i * k + j] = a[j * k + i];
  }
  if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', n, a, n) != 0) return false;
  for (std::int64_t i = 0; i < k; ++i) {
    for (std::int64_t j = 0; j < i; ++j)
      a[i * k + j] = 0.0;
  }
  return true;
}

}  // namespace lucid::quantization::detail
