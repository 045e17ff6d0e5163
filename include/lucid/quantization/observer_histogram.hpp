// HistogramObserver: PyTorch's 2048-bin histogram with its L2-norm search of the clipping range.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/observer.hpp"

namespace lucid::quantization {

/// How a HistogramObserver bins and re-bins its data (docs/calibration.md).
enum class HistogramBinning : std::uint8_t {
  /// torch.ao.quantization 1.13, step for step: float32 counts over
  /// [min_val, max_val]; each batch is binned by torch.histc over the
  /// integer-truncated range (so values outside [trunc(min), trunc(max)] are
  /// dropped, as in PyTorch) and the old histogram is re-binned by the
  /// upsample (x upsample_rate) / downsample interpolation. Gives PyTorch's
  /// qparams exactly; the histogram depends on batch order.
  pytorch,
  /// Exact integer counts on a dyadic grid (bin width a power of two, edges
  /// at its multiples) chosen from the overall min / max only: the histogram
  /// is a function of the multiset of values seen, whatever the batch order
  /// or sharding, and merge() equals sequential observation exactly.
  exact,
};

/// "pytorch" / "exact", and back (Error naming the text otherwise).
std::string to_string(HistogramBinning binning);
HistogramBinning histogram_binning_from_string(std::string_view name);

/// HistogramObserver's own settings (PyTorch's defaults).
struct HistogramOptions {
  std::int64_t bins = 2048;          ///< histogram bins, 1 .. 2^24
  std::int64_t upsample_rate = 128;  ///< pytorch binning: re-binning resolution
  HistogramBinning binning = HistogramBinning::pytorch;

  bool operator==(const HistogramOptions&) const = default;
};

/// PyTorch's HistogramObserver: a histogram of everything observed, then the
/// non-linear L2 search (_non_linear_param_search) for the [min, max] that
/// minimises the approximate quantization error over 2^bits(dtype) levels, then
/// calculate_qparams. Per-tensor schemes only.
///
/// With HistogramBinning::pytorch (the default) the state and the qparams
/// equal torch.ao.quantization.HistogramObserver's (PyTorch 1.13) for finite
/// input; see docs/calibration.md for the few documented divergences.
class HistogramObserver : public RangeObserver {
 public:
  using Options = HistogramOptions;

  explicit HistogramObserver(const QuantGrid& grid = {}, const Options& options = {});
  HistogramObserver(const HistogramObserver& other);
  HistogramObserver& operator=(const HistogramObserver& other);
  HistogramObserver(HistogramObserver&&) noexcept;
  HistogramObserver& operator=(HistogramObserver&&) noexcept;
  ~HistogramObserver() override;

  std::string_view name() const override { return "HistogramObserver"; }
  void observe(const TensorView& x) override;
  /// pytorch binning: other's histogram is re-binned onto the grid PyTorch
  /// would pick for this one (mass conserving, uniform within bins); count and
  /// min are exact, max is the edge of that grid (>= the data's max), and the
  /// histogram only approximates sequential observation, which in PyTorch's
  /// scheme itself depends on batch order (docs/calibration.md). exact
  /// binning: equals sequential observation of both, bit for bit.
  void merge(const Observer& other) override;
  void reset() override;
  std::string save_state() const override;
  void load_state(std::string_view state) override;
  std::unique_ptr<Observer> clone() const override;
  ClipRange clipping_range() const override;

  const Options& options() const { return options_; }
  /// The bin counts covering [histogram_min(), histogram_max()]: PyTorch's
  /// `bins` float32 counts for pytorch binning; for exact binning the
  /// integer counts of the occupied bins (the one holding the min to the one
  /// holding the max). Empty before any finite value.
  std::vector<float> histogram() const;
  double histogram_min() const;
  double histogram_max() const;

 private:
  struct State;
  Options options_;
  std::unique_ptr<State> state_;  // never null
};

}  // namespace lucid::quantization
