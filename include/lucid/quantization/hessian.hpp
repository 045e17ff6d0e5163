// HessianAccumulator: the streaming, mergeable sum H = Σ x xᵀ over calibration rows (float64).
#pragma once

#include <cstdint>
#include <vector>

#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// Accumulates the second-moment matrix of a layer's inputs, H = Σ_t x_t x_tᵀ
/// ([K, K], float64), the quantity GPTQ's Hessian 2·X Xᵀ and the output-error
/// proxy tr(ΔW H ΔWᵀ) are built from. Rows are added in any order and in any
/// number of batches; two accumulators over disjoint rows merge into the one
/// over all of them (sums are float64, so merge order changes only the last
/// bits). Uses OpenBLAS dsyrk. Not thread-safe; use one per worker and merge.
class HessianAccumulator {
 public:
  /// An empty accumulator for inputs of `features` columns (K >= 1; throws Error otherwise).
  explicit HessianAccumulator(std::int64_t features);
  /// Adopts a finished sum (e.g. read from a statistics file): `sum` is [K, K]
  /// row-major and symmetric, `rows` >= 0. Throws Error on a wrong size, a
  /// non-finite entry or an asymmetric matrix.
  HessianAccumulator(std::int64_t features, std::vector<double> sum, std::int64_t rows);

  /// Adds the rows of `x` ([T, K] or [K] for one row; float32, float16 or
  /// bfloat16). Throws Error when the last dimension is not K or an element is
  /// NaN or infinite (naming the first such element); then nothing is added.
  void add_rows(const TensorView& x);
  /// Adds the rows `other` saw. Throws Error when K differs.
  void merge(const HessianAccumulator& other);

  std::int64_t features() const { return features_; }
  /// The number of rows added so far.
  std::int64_t rows() const { return rows_; }
  /// H = Σ x xᵀ as a full symmetric [K, K] row-major matrix.
  std::vector<double> sum() const;
  /// diag(H) / rows: each column's mean square activation ⟨x_j²⟩ (llama.cpp's
  /// importance matrix); zeros when no row was added.
  std::vector<double> second_moments() const;

 private:
  std::int64_t features_;
  std::int64_t rows_ = 0;
  std::vector<double> upper_;  // the upper triangle of H is authoritative (dsyrk's output)
};

}  // namespace lucid::quantization
