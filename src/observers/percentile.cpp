// PercentileObserver: clip to percentiles of the data (two-sided, or of |x| for symmetric schemes).
#include <algorithm>
#include <cmath>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_calibrators.hpp"
#include "observers/dyadic_histogram.hpp"
#include "observers/state.hpp"

namespace lucid::quantization {
namespace {

PercentileObserver::Options checked(const PercentileObserver::Options& options) {
  if (!(options.percentile > 50.0 && options.percentile <= 100.0)) {
    throw Error("PercentileObserver: percentile = " + std::to_string(options.percentile) +
                " (expected a value in (50, 100])");
  }
  return options;
}

// The value below which a fraction q of the counts lies, linear within a bin.
double quantile(std::span<const std::int64_t> counts, double lo, double width, double q) {
  double total = 0.0;
  for (const std::int64_t c : counts)
    total += static_cast<double>(c);
  const double target = q * total;
  double below = 0.0;
  for (std::size_t j = 0; j < counts.size(); ++j) {
    const auto c = static_cast<double>(counts[j]);
    if (c > 0.0 && below + c >= target) {
      return lo + (static_cast<double>(j) + (target - below) / c) * width;
    }
    below += c;
  }
  return lo + static_cast<double>(counts.size()) * width;
}

// Folds a signed dyadic histogram onto |x|: the grid has an edge at 0, so bin [k w, (k+1) w)
// of x < 0 (k < 0) lands exactly on bin -k-1 of |x|.
std::vector<std::int64_t> fold_absolute(const detail::DyadicHistogram::Occupied& h) {
  const auto first = static_cast<std::int64_t>(std::llround(h.lo / h.width));
  const auto last = first + static_cast<std::int64_t>(h.counts.size()) - 1;
  const std::int64_t size = std::max(last, -first - 1) + 1;
  std::vector<std::int64_t> folded(static_cast<std::size_t>(std::max<std::int64_t>(size, 1)), 0);
  for (std::size_t j = 0; j < h.counts.size(); ++j) {
    const std::int64_t k = first + static_cast<std::int64_t>(j);
    folded[static_cast<std::size_t>(k >= 0 ? k : -k - 1)] += h.counts[j];
  }
  return folded;
}

}  // namespace

PercentileObserver::PercentileObserver(const QuantGrid& grid, const Options& options)
    : CalibratorWithOptions("PercentileObserver", grid, options.ch_axis, false, checked(options)) {}

ClipRange PercentileObserver::clipping_range() const {
  require_data("clipping_range");
  const double q = options_.percentile / 100.0;
  ClipRange range;
  for (std::size_t c = 0; c < histograms().size(); ++c) {
    const detail::DyadicHistogram& h = histograms()[c];
    float lo = 0.0f;
    float hi = 0.0f;
    if (!h.empty()) {
      const auto occupied = h.occupied();
      const float data_min = min_val()[c];
      const float data_max = max_val()[c];
      if (occupied.width == 0.0) {
        lo = data_min;
        hi = data_max;
      } else if (is_symmetric(qscheme())) {
        const std::vector<std::int64_t> folded = fold_absolute(occupied);
        const float amax = std::max(-data_min, data_max);
        const auto a = std::min(static_cast<float>(quantile(folded, 0.0, occupied.width, q)), amax);
        lo = -a;
        hi = a;
      } else {
        lo = static_cast<float>(quantile(occupied.counts, occupied.lo, occupied.width, 1.0 - q));
        hi = static_cast<float>(quantile(occupied.counts, occupied.lo, occupied.width, q));
        lo = std::clamp(lo, data_min, data_max);
        hi = std::clamp(hi, data_min, data_max);
      }
    }
    range.min.push_back(lo);
    range.max.push_back(hi);
  }
  return range;
}

}  // namespace lucid::quantization
