// Internal: exact histograms on a dyadic grid that depends only on the overall min / max.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/kernel_table.hpp"
#include "observers/state.hpp"

namespace lucid::quantization::detail {

/// The most bins a DyadicHistogram takes (keeps every bin index exact in the binning loop).
inline constexpr std::int64_t kMaxBins = std::int64_t{1} << 24;

/// A histogram with exact integer counts whose grid is a function of the
/// range [min, max] of the values seen and nothing else: bin width 2^level,
/// bin edges at multiples of it, `level` the smallest for which [min, max]
/// spans at most `bins` bins (so between about bins / 2 and bins are used).
/// Because a coarser dyadic grid nests the finer ones, growing the range only
/// adds up whole bins: the counts equal those of binning every value directly
/// on the final grid, whatever the batch order, and merge() is exact.
///
/// A histogram of one distinct value has no grid yet: one bin of width 0.
class DyadicHistogram {
 public:
  /// Throws Error unless 1 <= bins <= kMaxBins.
  explicit DyadicHistogram(std::int64_t bins = 2048);

  /// Adds the finite values of v[0, n) (of |v| when `absolute`): `finite` of
  /// them (at least one), all inside [lo, hi] (for `absolute` pass lo = 0: the
  /// grid then starts at 0), binned by `kt`'s grid_indices kernel.
  void add(const kernels::KernelTable& kt, const float* v, std::int64_t n, std::int64_t finite,
           float lo, float hi, bool absolute);
  /// Adds other's counts (same bins); the result equals adding other's values.
  void merge(const DyadicHistogram& other);

  bool empty() const { return total_ == 0; }
  std::int64_t total() const { return total_; }
  std::int64_t bins() const { return bins_; }
  /// The range of the grid: the [lo, hi] spanned by the add() calls.
  float min() const { return min_; }
  float max() const { return max_; }

  /// The bins from the one holding min() to the one holding max(): bin j
  /// covers [lo + j * width, lo + (j + 1) * width).
  struct Occupied {
    std::span<const std::int64_t> counts;
    double lo = 0;
    double width = 0;  ///< 0 for a histogram of one value
  };
  Occupied occupied() const;

  /// {"total", "min", "max", "counts": [[bin, count], ...] (non-zero bins)}.
  Json to_json() const;
  /// The inverse of to_json(), checked (Error naming `who` when inconsistent).
  static DyadicHistogram from_json(const Json& value, std::int64_t bins, std::string_view who);

  bool operator==(const DyadicHistogram&) const = default;

 private:
  void regrid(float new_min, float new_max);
  std::int64_t bin_of(float value) const;

  std::int64_t bins_;
  float min_ = INFINITY;
  float max_ = -INFINITY;
  std::int64_t total_ = 0;
  bool gridded_ = false;  // false: empty, or every value equals min_ (all counts in bin 0)
  int level_ = 0;
  std::int64_t base_ = 0;  // absolute index of bin 0: floor(min / 2^level)
  std::vector<std::int64_t> counts_;
};

}  // namespace lucid::quantization::detail
