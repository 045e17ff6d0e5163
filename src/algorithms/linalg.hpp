// Internal: the LAPACKE factorizations the weight algorithms need (Cholesky of an inverse).
#pragma once

#include <cstdint>
#include <vector>

namespace lucid::quantization::detail {

/// Replaces the symmetric positive definite [K, K] row-major `matrix` by the
/// upper Cholesky factor U of its inverse (matrix⁻¹ = Uᵀ U; entries below the
/// diagonal set to 0), via LAPACK dpotrf and dtrtri. Returns false,
/// leaving `matrix` unspecified, when a factorization finds it not positive definite.
bool inverse_cholesky_upper(std::vector<double>& matrix, std::int64_t k);

}  // namespace lucid::quantization::detail
