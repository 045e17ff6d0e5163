// Percentile, entropy (KL) and MSE calibrators: histogram observers that search a clipping range.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/observer.hpp"

namespace lucid::quantization {

namespace detail {
class DyadicHistogram;
}

/// Common part of the three calibrators: one exact histogram per slot (per
/// tensor, or per channel along ch_axis), binned on a dyadic grid chosen from
/// the overall min / max, so that the statistics do not depend on batch order
/// and merge(a, b) equals observing both exactly (docs/calibration.md).
class HistogramCalibrator : public RangeObserver {
 public:
  HistogramCalibrator(const HistogramCalibrator& other);
  HistogramCalibrator& operator=(const HistogramCalibrator& other);
  ~HistogramCalibrator() override;

  void observe(const TensorView& x) override;
  void merge(const Observer& other) override;
  void reset() override;

  /// Bins per histogram (each holds one slot's values; memory 8 bytes per bin).
  std::int64_t bins() const { return bins_; }

 protected:
  /// `absolute`: histogram |x| instead of x (entropy calibration).
  HistogramCalibrator(std::string_view name, const QuantGrid& grid, int ch_axis, std::int64_t bins,
                      bool absolute);

  const std::vector<detail::DyadicHistogram>& histograms() const { return histograms_; }
  /// Statistics as JSON text fields ("stats"), and back; used by save / load_state.
  std::string stats_json() const;
  void load_stats_json(std::string_view stats);

 private:
  std::int64_t bins_;
  bool absolute_;
  std::vector<detail::DyadicHistogram> histograms_;
};

/// PercentileObserver's settings.
struct PercentileOptions {
  double percentile = 99.99;  ///< in (50, 100]; 100 gives min / max exactly
  std::int64_t bins = 2048;
  int ch_axis = 0;  ///< per-channel schemes only

  bool operator==(const PercentileOptions&) const = default;
};

/// EntropyObserver's settings.
struct EntropyOptions {
  std::int64_t bins = 2048;  ///< bins of the |x| histogram

  bool operator==(const EntropyOptions&) const = default;
};

/// MseObserver's settings.
struct MseOptions {
  std::int64_t bins = 2048;
  int ch_axis = 0;  ///< per-channel schemes only

  bool operator==(const MseOptions&) const = default;
};

/// What the three calibrators share beyond the histograms: their Options, kept in the state
/// JSON (save_state / load_state), required equal by merge(), and clone(). Derived is the
/// calibrator itself (defined for PercentileObserver, EntropyObserver and MseObserver).
template <class Derived, class OptionsT>
class CalibratorWithOptions : public HistogramCalibrator {
 public:
  using Options = OptionsT;

  std::string save_state() const override;
  void load_state(std::string_view state) override;
  std::unique_ptr<Observer> clone() const override;
  void merge(const Observer& other) override;

  const Options& options() const { return options_; }

 protected:
  CalibratorWithOptions(std::string_view name, const QuantGrid& grid, int ch_axis, bool absolute,
                        const Options& options)
      : HistogramCalibrator(name, grid, ch_axis, options.bins, absolute), options_(options) {}

  Options options_;
};

/// Clips to percentiles of the data seen: affine schemes to
/// [P(100 - p), P(p)], symmetric ones to +-P_|x|(p), the p-th percentile of |x|
/// (so p = 99.99 keeps all but the outermost 0.01 %). Percentiles are read from
/// the histogram, linear within a bin. Per tensor and per channel.
class PercentileObserver : public CalibratorWithOptions<PercentileObserver, PercentileOptions> {
 public:
  explicit PercentileObserver(const QuantGrid& grid = {}, const Options& options = {});

  std::string_view name() const override { return "PercentileObserver"; }
  ClipRange clipping_range() const override;
};

/// TensorRT's entropy calibration: a histogram of |x|; for every candidate
/// threshold T of at least as many bins as there are quantized levels, the
/// reference distribution P (bins below T, the tail folded into the last) is
/// compared with its quantized version Q, and T with the least KL(P || Q) wins.
/// Symmetric schemes clip to [-T, T]; affine ones to [-T, T] intersected with
/// the observed range. Per tensor only (per-channel schemes raise Error).
class EntropyObserver : public CalibratorWithOptions<EntropyObserver, EntropyOptions> {
 public:
  explicit EntropyObserver(const QuantGrid& grid = {}, const Options& options = {});

  std::string_view name() const override { return "EntropyObserver"; }
  ClipRange clipping_range() const override;
};

/// Searches the clipping range whose qparams minimise the mean squared
/// quantization error of the data seen, evaluated on the histogram (values
/// uniform within a bin; rounding and clipping error integrated exactly).
/// Symmetric schemes search max|x| * t; affine ones [min * t, max * t], then
/// refine each end alone. Per tensor and per channel.
class MseObserver : public CalibratorWithOptions<MseObserver, MseOptions> {
 public:
  explicit MseObserver(const QuantGrid& grid = {}, const Options& options = {});

  std::string_view name() const override { return "MseObserver"; }
  ClipRange clipping_range() const override;
};

}  // namespace lucid::quantization
