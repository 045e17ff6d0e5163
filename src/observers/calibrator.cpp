// HistogramCalibrator: per-slot exact histograms shared by the percentile, entropy and MSE
// observers.
#include <algorithm>
#include <cmath>

#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_calibrators.hpp"
#include "observers/batch.hpp"
#include "observers/dyadic_histogram.hpp"
#include "observers/state.hpp"

namespace lucid::quantization {

HistogramCalibrator::HistogramCalibrator(std::string_view name, const QuantGrid& grid, int ch_axis,
                                         std::int64_t bins, bool absolute)
    : RangeObserver(name, grid, is_per_channel(grid.qscheme), ch_axis),
      bins_(bins),
      absolute_(absolute) {
  if (bins < 2 || bins > detail::kMaxBins) {
    throw Error(std::string(name) + ": bins = " + std::to_string(bins) +
                " (expected 2 <= bins <= 2^24)");
  }
}

HistogramCalibrator::HistogramCalibrator(const HistogramCalibrator& other) = default;
HistogramCalibrator& HistogramCalibrator::operator=(const HistogramCalibrator& other) = default;
HistogramCalibrator::~HistogramCalibrator() = default;

void HistogramCalibrator::observe(const TensorView& x) {
  const detail::FloatBatch batch(x, name());
  if (batch.size() == 0) return;
  std::vector<float> regrouped;
  const float* data = batch.data();
  std::int64_t channels = 1;
  if (is_per_channel(grid_.qscheme)) {
    const auto layout = detail::ChannelLayout::make(batch.shape(), ch_axis_, name());
    detail::check_channel_count(std::string(name()) + ".observe", layout.channels,
                                histograms_.size());
    channels = layout.channels;
    if (layout.outer > 1) {
      regrouped = detail::channel_major(batch, layout);
      data = regrouped.data();
    }
  }
  if (histograms_.empty()) {
    histograms_.assign(static_cast<std::size_t>(channels), detail::DyadicHistogram(bins_));
    min_.assign(histograms_.size(), INFINITY);
    max_.assign(histograms_.size(), -INFINITY);
  }
  const std::int64_t per_slot = batch.size() / channels;
  const kernels::KernelTable& kt = kernels::active();
  for (std::size_t c = 0; c < histograms_.size(); ++c) {
    const float* run = data + static_cast<std::int64_t>(c) * per_slot;
    const detail::FiniteStats stats = detail::finite_stats(kt, run, per_slot);
    nonfinite_count_ += stats.nonfinite;
    if (stats.finite == 0) continue;
    count_ += stats.finite;
    min_[c] = std::min(min_[c], stats.min);
    max_[c] = std::max(max_[c], stats.max);
    if (absolute_) {
      histograms_[c].add(kt, run, per_slot, stats.finite, 0.0f, std::max(-stats.min, stats.max),
                         true);
    } else {
      histograms_[c].add(kt, run, per_slot, stats.finite, stats.min, stats.max, false);
    }
  }
}

void HistogramCalibrator::merge(const Observer& other) {
  require_same_config(other);
  const auto& o = static_cast<const HistogramCalibrator&>(other);
  if (o.bins_ != bins_) {
    throw Error(std::string(name()) + ".merge: other has bins = " + std::to_string(o.bins_) +
                " (expected " + std::to_string(bins_) + ")");
  }
  if (!o.histograms_.empty()) {
    detail::check_channel_count(std::string(name()) + ".merge",
                                static_cast<std::int64_t>(o.histograms_.size()),
                                histograms_.size());
  }
  nonfinite_count_ += o.nonfinite_count_;
  count_ += o.count_;
  if (histograms_.empty()) {
    histograms_ = o.histograms_;
    min_ = o.min_;
    max_ = o.max_;
    return;
  }
  for (std::size_t c = 0; c < o.histograms_.size(); ++c) {
    histograms_[c].merge(o.histograms_[c]);
    min_[c] = std::min(min_[c], o.min_[c]);
    max_[c] = std::max(max_[c], o.max_[c]);
  }
}

void HistogramCalibrator::reset() {
  count_ = nonfinite_count_ = 0;
  histograms_.clear();
  min_.clear();
  max_.clear();
}

std::string HistogramCalibrator::stats_json() const {
  detail::Json stats = detail::Json::object();
  stats["count"] = count_;
  stats["nonfinite_count"] = nonfinite_count_;
  stats["min"] = detail::floats_to_json(min_);
  stats["max"] = detail::floats_to_json(max_);
  detail::Json histograms = detail::Json::array();
  for (const auto& h : histograms_)
    histograms.push_back(h.to_json());
  stats["histograms"] = std::move(histograms);
  return stats.dump();
}

void HistogramCalibrator::load_stats_json(std::string_view text) {
  const std::string_view who = name();
  const detail::Json stats = detail::Json::parse(text);
  const auto count = detail::field<std::int64_t>(stats, "count", who);
  const auto nonfinite = detail::field<std::int64_t>(stats, "nonfinite_count", who);
  std::vector<float> min =
      detail::floats_from_json(detail::field<detail::Json>(stats, "min", who), who);
  std::vector<float> max =
      detail::floats_from_json(detail::field<detail::Json>(stats, "max", who), who);
  const detail::Json histograms = detail::field<detail::Json>(stats, "histograms", who);
  if (!histograms.is_array() || min.size() != histograms.size() || max.size() != min.size() ||
      count < 0 || nonfinite < 0 || (!is_per_channel(grid_.qscheme) && histograms.size() > 1)) {
    detail::bad_state(who, "inconsistent counts, ranges or histograms");
  }
  std::vector<detail::DyadicHistogram> loaded;
  std::int64_t total = 0;
  for (std::size_t c = 0; c < histograms.size(); ++c) {
    loaded.push_back(detail::DyadicHistogram::from_json(histograms[c], bins_, who));
    const detail::DyadicHistogram& h = loaded.back();
    total += h.total();
    const bool unseen = min[c] == INFINITY && max[c] == -INFINITY;
    const bool range_ok =
        h.empty() ? unseen : (std::isfinite(min[c]) && std::isfinite(max[c]) && min[c] <= max[c]);
    if (!range_ok)
      detail::bad_state(who, "slot " + std::to_string(c) + " range does not fit its histogram");
  }
  if (total != count) detail::bad_state(who, "histogram totals differ from count");
  count_ = count;
  nonfinite_count_ = nonfinite;
  min_ = std::move(min);
  max_ = std::move(max);
  histograms_ = std::move(loaded);
}

}  // namespace lucid::quantization
