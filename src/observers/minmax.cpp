// MinMax / MovingAverageMinMax observers, per tensor and per channel (PyTorch's arithmetic,
// float32).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_minmax.hpp"
#include "observers/batch.hpp"
#include "observers/state.hpp"
#include "support/json_excerpt.hpp"

namespace lucid::quantization {
namespace {

std::string float_text(float value) {
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

void check_averaging_constant(std::string_view name, float c) {
  if (!(c > 0.0f && c <= 1.0f)) {
    throw Error(std::string(name) + ": averaging_constant = " + float_text(c) +
                " (expected a value in (0, 1])");
  }
}

// One moving-average step in float32, exactly as PyTorch: v + c * (x - v).
float moving_average(float average, float batch_value, float c) {
  const float delta = batch_value - average;
  const float step = c * delta;
  return average + step;
}

// Mean of two averages weighted by their batch counts (one side may be empty).
float weighted_mean(float a, std::int64_t na, float b, std::int64_t nb) {
  if (na == 0) return b;
  if (nb == 0) return a;
  const double total = static_cast<double>(na) + static_cast<double>(nb);
  return static_cast<float>((static_cast<double>(a) * static_cast<double>(na) +
                             static_cast<double>(b) * static_cast<double>(nb)) /
                            total);
}

detail::Json range_stats(const Observer& observer, const std::vector<float>& min,
                         const std::vector<float>& max) {
  detail::Json stats = detail::Json::object();
  stats["count"] = observer.count();
  stats["nonfinite_count"] = observer.nonfinite_count();
  stats["min"] = detail::floats_to_json(min);
  stats["max"] = detail::floats_to_json(max);
  return stats;
}

// Reads "min" / "max" / counts, checking the slot count (1 for per-tensor, any for per-channel).
void load_range_stats(const detail::Json& stats, std::string_view who, bool per_channel,
                      std::vector<float>& min, std::vector<float>& max, std::int64_t& count,
                      std::int64_t& nonfinite) {
  count = detail::field<std::int64_t>(stats, "count", who);
  nonfinite = detail::field<std::int64_t>(stats, "nonfinite_count", who);
  min = detail::floats_from_json(detail::field<detail::Json>(stats, "min", who), who);
  max = detail::floats_from_json(detail::field<detail::Json>(stats, "max", who), who);
  const bool slots_ok = per_channel ? true : min.size() == (count > 0 ? 1u : 0u);
  if (count < 0 || nonfinite < 0 || min.size() != max.size() || !slots_ok) {
    detail::bad_state(who, "inconsistent counts or min / max lengths");
  }
  for (std::size_t i = 0; i < min.size(); ++i) {
    const bool unseen = min[i] == INFINITY && max[i] == -INFINITY;
    if (!unseen && !(std::isfinite(min[i]) && std::isfinite(max[i]) && min[i] <= max[i])) {
      detail::bad_state(who, "slot " + std::to_string(i) + " has min > max or a non-finite bound");
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- MinMaxObserver

MinMaxObserver::MinMaxObserver(const QuantGrid& grid) : MinMaxObserver("MinMaxObserver", grid) {}

MinMaxObserver::MinMaxObserver(std::string_view name, const QuantGrid& grid)
    : RangeObserver(name, grid, /*per_channel=*/false, 0) {}

void MinMaxObserver::observe(const TensorView& x) {
  const detail::FloatBatch batch(x, name());
  const detail::FiniteStats stats =
      detail::finite_stats(kernels::active(), batch.data(), batch.size());
  nonfinite_count_ += stats.nonfinite;
  if (stats.finite == 0) return;
  count_ += stats.finite;
  if (min_.empty()) {
    min_ = {stats.min};
    max_ = {stats.max};
  } else {
    min_[0] = std::min(stats.min, min_[0]);
    max_[0] = std::max(stats.max, max_[0]);
  }
}

void MinMaxObserver::merge(const Observer& other) {
  require_same_config(other);
  const auto& o = static_cast<const MinMaxObserver&>(other);
  nonfinite_count_ += o.nonfinite_count_;
  if (o.count_ == 0) return;
  if (count_ == 0) {
    min_ = o.min_;
    max_ = o.max_;
  } else {
    min_[0] = std::min(min_[0], o.min_[0]);
    max_[0] = std::max(max_[0], o.max_[0]);
  }
  count_ += o.count_;
}

void MinMaxObserver::reset() {
  count_ = nonfinite_count_ = 0;
  min_.clear();
  max_.clear();
}

ClipRange MinMaxObserver::clipping_range() const {
  require_data("clipping_range");
  return {min_, max_};
}

std::string MinMaxObserver::save_state() const {
  return detail::write_state(name(), detail::grid_to_json(grid_), range_stats(*this, min_, max_));
}

void MinMaxObserver::load_state(std::string_view state) {
  const auto parsed = detail::read_state(state, name());
  MinMaxObserver loaded(detail::grid_from_json(parsed.options));
  load_range_stats(parsed.stats, name(), false, loaded.min_, loaded.max_, loaded.count_,
                   loaded.nonfinite_count_);
  *this = loaded;
}

std::unique_ptr<Observer> MinMaxObserver::clone() const {
  return std::make_unique<MinMaxObserver>(*this);
}

// ---------------------------------------------------------------- MovingAverageMinMaxObserver

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(const QuantGrid& grid,
                                                         float averaging_constant)
    : MinMaxObserver("MovingAverageMinMaxObserver", grid), averaging_constant_(averaging_constant) {
  check_averaging_constant(name(), averaging_constant);
}

void MovingAverageMinMaxObserver::observe(const TensorView& x) {
  const detail::FloatBatch batch(x, name());
  const detail::FiniteStats stats =
      detail::finite_stats(kernels::active(), batch.data(), batch.size());
  nonfinite_count_ += stats.nonfinite;
  if (stats.finite == 0) return;
  count_ += stats.finite;
  if (batches_ == 0) {
    min_ = {stats.min};
    max_ = {stats.max};
  } else {
    min_[0] = moving_average(min_[0], stats.min, averaging_constant_);
    max_[0] = moving_average(max_[0], stats.max, averaging_constant_);
  }
  ++batches_;
}

void MovingAverageMinMaxObserver::merge(const Observer& other) {
  require_same_config(other);
  const auto& o = static_cast<const MovingAverageMinMaxObserver&>(other);
  if (o.averaging_constant_ != averaging_constant_) {
    throw Error(std::string(name()) + ".merge: other has averaging_constant " +
                float_text(o.averaging_constant_) + " (expected the same)");
  }
  nonfinite_count_ += o.nonfinite_count_;
  if (o.batches_ == 0) return;
  if (batches_ == 0) {
    min_ = o.min_;
    max_ = o.max_;
  } else {
    min_[0] = weighted_mean(min_[0], batches_, o.min_[0], o.batches_);
    max_[0] = weighted_mean(max_[0], batches_, o.max_[0], o.batches_);
  }
  count_ += o.count_;
  batches_ += o.batches_;
}

void MovingAverageMinMaxObserver::reset() {
  MinMaxObserver::reset();
  batches_ = 0;
}

std::string MovingAverageMinMaxObserver::save_state() const {
  detail::Json options = detail::grid_to_json(grid_);
  options["averaging_constant"] = detail::float_to_json(averaging_constant_);
  detail::Json stats = range_stats(*this, min_, max_);
  stats["batches"] = batches_;
  return detail::write_state(name(), std::move(options), std::move(stats));
}

void MovingAverageMinMaxObserver::load_state(std::string_view state) {
  const auto parsed = detail::read_state(state, name());
  MovingAverageMinMaxObserver loaded(
      detail::grid_from_json(parsed.options),
      detail::float_from_json(
          detail::field<detail::Json>(parsed.options, "averaging_constant", name()), name()));
  load_range_stats(parsed.stats, name(), false, loaded.min_, loaded.max_, loaded.count_,
                   loaded.nonfinite_count_);
  loaded.batches_ = detail::field<std::int64_t>(parsed.stats, "batches", name());
  if (loaded.batches_ < 0 || (loaded.batches_ == 0) != (loaded.count_ == 0)) {
    detail::bad_state(name(), "batches = " + std::to_string(loaded.batches_) +
                                  " does not fit count = " + std::to_string(loaded.count_));
  }
  *this = loaded;
}

std::unique_ptr<Observer> MovingAverageMinMaxObserver::clone() const {
  return std::make_unique<MovingAverageMinMaxObserver>(*this);
}

// ---------------------------------------------------------------- PerChannelMinMaxObserver

PerChannelMinMaxObserver::PerChannelMinMaxObserver(const QuantGrid& grid, int ch_axis)
    : PerChannelMinMaxObserver("PerChannelMinMaxObserver", grid, ch_axis) {}

PerChannelMinMaxObserver::PerChannelMinMaxObserver(std::string_view name, const QuantGrid& grid,
                                                   int ch_axis)
    : RangeObserver(name, grid, /*per_channel=*/true, ch_axis) {}

ClipRange PerChannelMinMaxObserver::batch_ranges(const TensorView& x) {
  const detail::FloatBatch batch(x, name());
  if (batch.size() == 0) return {};
  const auto layout = detail::ChannelLayout::make(batch.shape(), ch_axis_, name());
  detail::check_channel_count(std::string(name()) + ".observe", layout.channels, min_.size());
  detail::ChannelStats stats = detail::channel_stats(batch, layout);
  nonfinite_count_ += stats.nonfinite;
  count_ += batch.size() - stats.nonfinite;
  if (min_.empty()) {
    min_.assign(stats.min.size(), INFINITY);
    max_.assign(stats.max.size(), -INFINITY);
  }
  return {std::move(stats.min), std::move(stats.max)};
}

void PerChannelMinMaxObserver::observe(const TensorView& x) {
  const ClipRange batch = batch_ranges(x);
  for (std::size_t c = 0; c < batch.min.size(); ++c) {
    min_[c] = std::min(batch.min[c], min_[c]);
    max_[c] = std::max(batch.max[c], max_[c]);
  }
}

void PerChannelMinMaxObserver::merge(const Observer& other) {
  require_same_config(other);
  const auto& o = static_cast<const PerChannelMinMaxObserver&>(other);
  if (!o.min_.empty()) {
    detail::check_channel_count(std::string(name()) + ".merge",
                                static_cast<std::int64_t>(o.min_.size()), min_.size());
  }
  nonfinite_count_ += o.nonfinite_count_;
  count_ += o.count_;
  if (min_.empty()) {
    min_ = o.min_;
    max_ = o.max_;
    return;
  }
  for (std::size_t c = 0; c < o.min_.size(); ++c) {
    min_[c] = std::min(min_[c], o.min_[c]);
    max_[c] = std::max(max_[c], o.max_[c]);
  }
}

void PerChannelMinMaxObserver::reset() {
  count_ = nonfinite_count_ = 0;
  min_.clear();
  max_.clear();
}

ClipRange PerChannelMinMaxObserver::clipping_range() const {
  require_data("clipping_range");
  ClipRange range{min_, max_};
  for (std::size_t c = 0; c < range.min.size(); ++c) {
    if (range.min[c] > range.max[c]) range.min[c] = range.max[c] = 0.0f;  // saw nothing finite
  }
  return range;
}

std::string PerChannelMinMaxObserver::save_state() const {
  detail::Json options = detail::grid_to_json(grid_);
  options["ch_axis"] = ch_axis_;
  return detail::write_state(name(), std::move(options), range_stats(*this, min_, max_));
}

void PerChannelMinMaxObserver::load_state(std::string_view state) {
  const auto parsed = detail::read_state(state, name());
  PerChannelMinMaxObserver loaded(detail::grid_from_json(parsed.options),
                                  detail::field<int>(parsed.options, "ch_axis", name()));
  load_range_stats(parsed.stats, name(), true, loaded.min_, loaded.max_, loaded.count_,
                   loaded.nonfinite_count_);
  *this = loaded;
}

std::unique_ptr<Observer> PerChannelMinMaxObserver::clone() const {
  return std::make_unique<PerChannelMinMaxObserver>(*this);
}

// ----------------------------------------------------------------
// MovingAveragePerChannelMinMaxObserver

MovingAveragePerChannelMinMaxObserver::MovingAveragePerChannelMinMaxObserver(
    const QuantGrid& grid, int ch_axis, float averaging_constant)
    : PerChannelMinMaxObserver("MovingAveragePerChannelMinMaxObserver", grid, ch_axis),
      averaging_constant_(averaging_constant) {
  check_averaging_constant(name(), averaging_constant);
}

void MovingAveragePerChannelMinMaxObserver::observe(const TensorView& x) {
  const ClipRange batch = batch_ranges(x);
  if (batches_.empty()) batches_.assign(batch.min.size(), 0);
  for (std::size_t c = 0; c < batch.min.size(); ++c) {
    if (batch.min[c] > batch.max[c]) continue;  // no finite value in this channel
    if (batches_[c] == 0) {
      min_[c] = batch.min[c];
      max_[c] = batch.max[c];
    } else {
      min_[c] = moving_average(min_[c], batch.min[c], averaging_constant_);
      max_[c] = moving_average(max_[c], batch.max[c], averaging_constant_);
    }
    ++batches_[c];
  }
}

void MovingAveragePerChannelMinMaxObserver::merge(const Observer& other) {
  require_same_config(other);
  const auto& o = static_cast<const MovingAveragePerChannelMinMaxObserver&>(other);
  if (o.averaging_constant_ != averaging_constant_) {
    throw Error(std::string(name()) + ".merge: other has averaging_constant " +
                float_text(o.averaging_constant_) + " (expected the same)");
  }
  if (!o.min_.empty()) {
    detail::check_channel_count(std::string(name()) + ".merge",
                                static_cast<std::int64_t>(o.min_.size()), min_.size());
  }
  nonfinite_count_ += o.nonfinite_count_;
  count_ += o.count_;
  if (min_.empty()) {
    min_ = o.min_;
    max_ = o.max_;
    batches_ = o.batches_;
    return;
  }
  for (std::size_t c = 0; c < o.min_.size(); ++c) {
    min_[c] = o.batches_[c] == 0 ? min_[c]
                                 : weighted_mean(min_[c], batches_[c], o.min_[c], o.batches_[c]);
    max_[c] = o.batches_[c] == 0 ? max_[c]
                                 : weighted_mean(max_[c], batches_[c], o.max_[c], o.batches_[c]);
    batches_[c] += o.batches_[c];
  }
}

void MovingAveragePerChannelMinMaxObserver::reset() {
  PerChannelMinMaxObserver::reset();
  batches_.clear();
}

std::string MovingAveragePerChannelMinMaxObserver::save_state() const {
  detail::Json options = detail::grid_to_json(grid_);
  options["ch_axis"] = ch_axis_;
  options["averaging_constant"] = detail::float_to_json(averaging_constant_);
  detail::Json stats = range_stats(*this, min_, max_);
  stats["batches"] = batches_;
  return detail::write_state(name(), std::move(options), std::move(stats));
}

void MovingAveragePerChannelMinMaxObserver::load_state(std::string_view state) {
  const auto parsed = detail::read_state(state, name());
  MovingAveragePerChannelMinMaxObserver loaded(
      detail::grid_from_json(parsed.options), detail::field<int>(parsed.options, "ch_axis", name()),
      detail::float_from_json(
          detail::field<detail::Json>(parsed.options, "averaging_constant", name()), name()));
  load_range_stats(parsed.stats, name(), true, loaded.min_, loaded.max_, loaded.count_,
                   loaded.nonfinite_count_);
  const detail::Json batches = detail::field<detail::Json>(parsed.stats, "batches", name());
  if (!batches.is_array() || batches.size() != loaded.min_.size()) {
    detail::bad_state(name(), "\"batches\" must hold one count per channel");
  }
  for (const detail::Json& b : batches) {
    if (!b.is_number_integer() || b.get<std::int64_t>() < 0) {
      detail::bad_state(name(),
                        "\"batches\" holds " + detail::json_excerpt(b) + " (expected counts >= 0)");
    }
    loaded.batches_.push_back(b.get<std::int64_t>());
  }
  *this = loaded;
}

std::unique_ptr<Observer> MovingAveragePerChannelMinMaxObserver::clone() const {
  return std::make_unique<MovingAveragePerChannelMinMaxObserver>(*this);
}

}  // namespace lucid::quantization
