// HistogramObserver: PyTorch's histogram + L2 search, with PyTorch's binning or exact dyadic
// binning.
#include <algorithm>
#include <cmath>

#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_histogram.hpp"
#include "observers/batch.hpp"
#include "observers/dyadic_histogram.hpp"
#include "observers/state.hpp"
#include "observers/torch_histogram.hpp"

namespace lucid::quantization {

struct HistogramObserver::State {
  explicit State(const Options& options) : dyadic(options.bins) {
    torch.bins = options.bins;
    torch.upsample_rate = options.upsample_rate;
  }
  detail::TorchHistogram torch;    // pytorch binning
  detail::DyadicHistogram dyadic;  // exact binning
};

std::string to_string(HistogramBinning binning) {
  return binning == HistogramBinning::pytorch ? "pytorch" : "exact";
}

HistogramBinning histogram_binning_from_string(std::string_view name) {
  if (name == "pytorch") return HistogramBinning::pytorch;
  if (name == "exact") return HistogramBinning::exact;
  throw Error("histogram binning = \"" + std::string(name) +
              "\" (expected \"pytorch\" or \"exact\")");
}

namespace {

HistogramObserver::Options checked(const HistogramObserver::Options& options) {
  if (options.bins < 1 || options.bins > detail::kMaxBins) {
    throw Error("HistogramObserver: bins = " + std::to_string(options.bins) +
                " (expected 1 <= bins <= 2^24)");
  }
  if (options.upsample_rate < 1 || options.upsample_rate > (std::int64_t{1} << 20)) {
    throw Error("HistogramObserver: upsample_rate = " + std::to_string(options.upsample_rate) +
                " (expected 1 <= upsample_rate <= 2^20)");
  }
  return options;
}

}  // namespace

HistogramObserver::HistogramObserver(const QuantGrid& grid, const Options& options)
    : RangeObserver("HistogramObserver", grid, /*per_channel=*/false, 0),
      options_(checked(options)),
      state_(std::make_unique<State>(options_)) {}

HistogramObserver::HistogramObserver(const HistogramObserver& other)
    : RangeObserver(other),
      options_(other.options_),
      state_(std::make_unique<State>(*other.state_)) {}

HistogramObserver& HistogramObserver::operator=(const HistogramObserver& other) {
  if (this != &other) {
    auto copy = std::make_unique<State>(*other.state_);
    RangeObserver::operator=(other);
    options_ = other.options_;
    state_ = std::move(copy);
  }
  return *this;
}

HistogramObserver::HistogramObserver(HistogramObserver&&) noexcept = default;
HistogramObserver& HistogramObserver::operator=(HistogramObserver&&) noexcept = default;
HistogramObserver::~HistogramObserver() = default;

void HistogramObserver::observe(const TensorView& x) {
  const detail::FloatBatch batch(x, name());
  const kernels::KernelTable& kt = kernels::active();
  const detail::FiniteStats stats = detail::finite_stats(kt, batch.data(), batch.size());
  nonfinite_count_ += stats.nonfinite;
  if (stats.finite == 0) return;
  count_ += stats.finite;
  if (options_.binning == HistogramBinning::pytorch) {
    detail::TorchHistogram& h = state_->torch;
    h.observe(kt, batch.data(), batch.size(), stats.min, stats.max);
    min_ = {h.min_val};
    max_ = {h.max_val};
  } else {
    detail::DyadicHistogram& h = state_->dyadic;
    h.add(kt, batch.data(), batch.size(), stats.finite, stats.min, stats.max, /*absolute=*/false);
    min_ = {h.min()};
    max_ = {h.max()};
  }
}

void HistogramObserver::merge(const Observer& other) {
  require_same_config(other);
  const auto& o = static_cast<const HistogramObserver&>(other);
  if (o.options_ != options_) {
    throw Error(
        "HistogramObserver.merge: other has other bins / upsample_rate / binning "
        "(expected the same)");
  }
  nonfinite_count_ += o.nonfinite_count_;
  if (o.count_ == 0) return;
  count_ += o.count_;
  if (options_.binning == HistogramBinning::pytorch) {
    state_->torch.merge(o.state_->torch);
    min_ = {state_->torch.min_val};
    max_ = {state_->torch.max_val};
  } else {
    state_->dyadic.merge(o.state_->dyadic);
    min_ = {state_->dyadic.min()};
    max_ = {state_->dyadic.max()};
  }
}

void HistogramObserver::reset() {
  count_ = nonfinite_count_ = 0;
  min_.clear();
  max_.clear();
  state_ = std::make_unique<State>(options_);
}

ClipRange HistogramObserver::clipping_range() const {
  require_data("clipping_range");
  const auto levels =
      std::ldexp(1.0, qdtype_.bits());  // PyTorch's dst_nbins: 2^bits, whatever the range
  if (options_.binning == HistogramBinning::pytorch) {
    const detail::TorchHistogram& h = state_->torch;
    const auto [lo, hi] =
        detail::l2_param_search(kernels::active(), h.hist, h.min_val, h.max_val, levels);
    return {{lo}, {hi}};
  }
  const detail::DyadicHistogram& h = state_->dyadic;
  const auto occupied = h.occupied();
  if (occupied.width == 0.0) return {{h.min()}, {h.max()}};
  const std::vector<float> counts(occupied.counts.begin(), occupied.counts.end());
  const auto span = static_cast<double>(occupied.counts.size()) * occupied.width;
  const auto [lo, hi] =
      detail::l2_param_search(kernels::active(), counts, static_cast<float>(occupied.lo),
                              static_cast<float>(occupied.lo + span), levels);
  return {{std::clamp(lo, h.min(), h.max())}, {std::clamp(hi, h.min(), h.max())}};
}

std::vector<float> HistogramObserver::histogram() const {
  if (options_.binning == HistogramBinning::pytorch) return state_->torch.hist;
  const auto& counts = state_->dyadic.occupied().counts;
  return {counts.begin(), counts.end()};
}

double HistogramObserver::histogram_min() const {
  if (options_.binning == HistogramBinning::pytorch) return state_->torch.min_val;
  return state_->dyadic.occupied().lo;
}

double HistogramObserver::histogram_max() const {
  if (options_.binning == HistogramBinning::pytorch) return state_->torch.max_val;
  const auto occupied = state_->dyadic.occupied();
  return occupied.lo + static_cast<double>(occupied.counts.size()) * occupied.width;
}

std::string HistogramObserver::save_state() const {
  detail::Json options = detail::grid_to_json(grid_);
  options["bins"] = options_.bins;
  options["upsample_rate"] = options_.upsample_rate;
  options["binning"] = to_string(options_.binning);
  detail::Json stats = detail::Json::object();
  stats["count"] = count_;
  stats["nonfinite_count"] = nonfinite_count_;
  if (options_.binning == HistogramBinning::pytorch) {
    const detail::TorchHistogram& h = state_->torch;
    stats["min_val"] = detail::float_to_json(h.min_val);
    stats["max_val"] = detail::float_to_json(h.max_val);
    stats["histogram"] = detail::floats_to_json(h.hist);
  } else {
    stats["histogram"] = state_->dyadic.to_json();
  }
  return detail::write_state(name(), std::move(options), std::move(stats));
}

void HistogramObserver::load_state(std::string_view state) {
  const auto parsed = detail::read_state(state, name());
  const std::string_view who = name();
  Options options;
  options.bins = detail::field<std::int64_t>(parsed.options, "bins", who);
  options.upsample_rate = detail::field<std::int64_t>(parsed.options, "upsample_rate", who);
  options.binning =
      histogram_binning_from_string(detail::field<std::string>(parsed.options, "binning", who));
  HistogramObserver loaded(detail::grid_from_json(parsed.options), options);
  loaded.count_ = detail::field<std::int64_t>(parsed.stats, "count", who);
  loaded.nonfinite_count_ = detail::field<std::int64_t>(parsed.stats, "nonfinite_count", who);
  if (loaded.count_ < 0 || loaded.nonfinite_count_ < 0) detail::bad_state(who, "negative counts");
  const detail::Json histogram = detail::field<detail::Json>(parsed.stats, "histogram", who);
  if (options.binning == HistogramBinning::pytorch) {
    detail::TorchHistogram& h = loaded.state_->torch;
    if (loaded.count_ > 0) {
      h.min_val =
          detail::float_from_json(detail::field<detail::Json>(parsed.stats, "min_val", who), who);
      h.max_val =
          detail::float_from_json(detail::field<detail::Json>(parsed.stats, "max_val", who), who);
      h.hist = detail::floats_from_json(histogram, who);
      // Finite, not necessarily >= 0: PyTorch's interpolation subtracts a float32-rounded
      // integral, which can leave a bin slightly below zero.
      const bool counts_ok =
          std::all_of(h.hist.begin(), h.hist.end(), [](float c) { return std::isfinite(c); });
      if (!(std::isfinite(h.min_val) && std::isfinite(h.max_val) && h.min_val <= h.max_val) ||
          static_cast<std::int64_t>(h.hist.size()) != options.bins || !counts_ok) {
        detail::bad_state(who, "histogram state inconsistent with bins or its range");
      }
      loaded.min_ = {h.min_val};
      loaded.max_ = {h.max_val};
    } else if (!histogram.empty()) {
      detail::bad_state(who, "a histogram without observed values");
    }
  } else {
    detail::DyadicHistogram& h = loaded.state_->dyadic;
    h = detail::DyadicHistogram::from_json(histogram, options.bins, who);
    if (h.total() != loaded.count_) detail::bad_state(who, "histogram total differs from count");
    if (!h.empty()) {
      loaded.min_ = {h.min()};
      loaded.max_ = {h.max()};
    }
  }
  *this = loaded;
}

std::unique_ptr<Observer> HistogramObserver::clone() const {
  return std::make_unique<HistogramObserver>(*this);
}

}  // namespace lucid::quantization
