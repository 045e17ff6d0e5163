// The LAPACKE-backed factorizations of the weight algorithms.
#include "algorithms/linalg.hpp"

#include <lapacke.h>

#include <algorithm>

namespace lucid::quantization::detail {

// With J the reversal permutation and J A J = Rᵀ R (R upper), A⁻¹ = (J R⁻ᵀ J)ᵀ (J R⁻ᵀ J), and
// J R⁻ᵀ J is upper with a positive diagonal: by uniqueness it is the wanted factor U. That is
// one Cholesky and one triangular inverse (⅔ K³ flops) instead of dpotrf, dpotri and dpotrf
// (4⁄3 K³). Reversing the flat row-major array is J · J. A symmetric row-major matrix is the same
// matrix column-major, and a column-major upper R⁻¹ read row-major is R⁻ᵀ, so LAPACK runs
// column-major with no transposition copies.
bool inverse_cholesky_upper(std::vector<double>& matrix, std::int64_t k) {
  const auto n = static_cast<lapack_int>(k);
  std::reverse(matrix.begin(), matrix.end());
  double* a = matrix.data();
  if (LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'U', n, a, n) != 0) return false;
  if (LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, 'U', 'N', n, a, n) != 0) return false;
  std::reverse(matrix.begin(), matrix.end());
  for (std::int64_t i = 1; i < k; ++i)  // the triangle LAPACK left untouched
    std::fill_n(a + i * k, i, 0.0);
  return true;
}

}  // namespace lucid::quantization::detail
