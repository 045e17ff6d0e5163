// ChannelStats: per-input-channel activation statistics (max |x|, mean |x|, mean x²) for AWQ and
// SmoothQuant.
#pragma once

#include <cstdint>
#include <vector>

#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// Per-column statistics of a layer's inputs over calibration rows: the
/// running maximum of |x_j| (SmoothQuant's act_scales), Σ|x_j| (AWQ's mean
/// |x|) and Σ x_j² (the importance matrix). Streaming and mergeable like
/// HessianAccumulator; sums in float64. Not thread-safe.
class ChannelStats {
 public:
  /// Empty statistics for `features` columns (>= 1; throws Error otherwise).
  explicit ChannelStats(std::int64_t features);
  /// Adopts finished statistics (e.g. from a file); every vector has
  /// `features` entries, all finite and >= 0. Throws Error otherwise.
  ChannelStats(std::vector<float> abs_max, std::vector<double> abs_sum,
               std::vector<double> square_sum, std::int64_t rows);

  /// Adds the rows of x ([T, K] or [K]); throws Error (adding nothing) when
  /// the last dimension is not K or an element is not finite.
  void add_rows(const TensorView& x);
  /// Adds what `other` saw; throws Error when K differs.
  void merge(const ChannelStats& other);

  std::int64_t features() const { return static_cast<std::int64_t>(abs_max_.size()); }
  std::int64_t rows() const { return rows_; }
  const std::vector<float>& abs_max() const { return abs_max_; }
  const std::vector<double>& abs_sum() const { return abs_sum_; }
  const std::vector<double>& square_sum() const { return square_sum_; }
  /// Σ|x_j| / rows (zeros before any row).
  std::vector<double> mean_abs() const;
  /// Σ x_j² / rows (zeros before any row).
  std::vector<double> second_moments() const;

 private:
  std::vector<float> abs_max_;
  std::vector<double> abs_sum_;
  std::vector<double> square_sum_;
  std::int64_t rows_ = 0;
};

}  // namespace lucid::quantization
