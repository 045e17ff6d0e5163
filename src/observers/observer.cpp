// RangeObserver (grid validation, calculate_qparams) and load_observer, the factory of saved
// states.
#include "lucid/quantization/observer.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_calibrators.hpp"
#include "lucid/quantization/observer_histogram.hpp"
#include "lucid/quantization/observer_minmax.hpp"
#include "lucid/quantization/observer_passthrough.hpp"
#include "observers/state.hpp"

namespace lucid::quantization {
namespace {

std::string float_text(float value) {
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

std::int64_t floor_half(std::int64_t value) {
  return value >= 0 ? value / 2 : -((1 - value) / 2);
}

// The grid the qparams target: dtype, then [quant_min, quant_max], then reduce_range.
QDtype effective_qdtype(std::string_view name, const QuantGrid& grid) {
  const std::string who(name);
  if (grid.quant_min.has_value() != grid.quant_max.has_value()) {
    throw Error(who + ": quant_min and quant_max must be given together (got only " +
                (grid.quant_min ? "quant_min" : "quant_max") + ")");
  }
  if (!(std::isfinite(grid.eps) && grid.eps > 0.0f)) {
    throw Error(who + ": eps = " + float_text(grid.eps) + " (expected a finite value > 0)");
  }
  QDtype qdtype = grid.dtype;
  try {
    if (grid.quant_min) qdtype = qdtype.with_range(*grid.quant_min, *grid.quant_max);
    if (grid.reduce_range) {
      if (is_symmetric(grid.qscheme) && !qdtype.is_signed()) {
        throw Error("reduce_range with " + to_string(grid.qscheme) + " on the unsigned " +
                    qdtype.name() +
                    " (expected a signed dtype or an affine scheme; PyTorch refuses this too)");
      }
      qdtype = qdtype.with_range(floor_half(qdtype.quant_min()), floor_half(qdtype.quant_max()));
    }
  } catch (const Error& error) {
    throw Error(who + ": " + error.what());
  }
  return qdtype;
}

}  // namespace

RangeObserver::RangeObserver(std::string_view name, const QuantGrid& grid, bool per_channel,
                             int ch_axis)
    : grid_(grid), qdtype_(effective_qdtype(name, grid)), ch_axis_(per_channel ? ch_axis : 0) {
  if (is_per_channel(grid.qscheme) != per_channel) {
    throw Error(std::string(name) + ": qscheme = " + to_string(grid.qscheme) + " (expected " +
                (per_channel ? "per_channel_affine or per_channel_symmetric"
                             : "per_tensor_affine or per_tensor_symmetric") +
                ")");
  }
}

void RangeObserver::require_data(std::string_view what) const {
  if (count_ == 0) {
    throw Error(std::string(name()) + "." + std::string(what) + ": no finite value observed yet (" +
                std::to_string(nonfinite_count_) +
                " non-finite skipped; observe() calibration data first)");
  }
}

void RangeObserver::require_same_config(const Observer& other) const {
  const auto* same = dynamic_cast<const RangeObserver*>(&other);
  if (other.name() != name() || same == nullptr) {
    throw Error(std::string(name()) + ".merge: other is a " + std::string(other.name()) +
                " (expected a " + std::string(name()) + ")");
  }
  if (same->grid_ != grid_ || same->ch_axis_ != ch_axis_) {
    throw Error(std::string(name()) +
                ".merge: other has another configuration (dtype, qscheme, quant range, eps or "
                "ch_axis; expected the same)");
  }
}

QParams RangeObserver::calculate_qparams() const {
  require_data("calculate_qparams");
  const ClipRange range = clipping_range();
  if (is_per_channel(grid_.qscheme)) {
    return quantization::calculate_qparams(range.min, range.max, grid_.qscheme, qdtype_, ch_axis_,
                                           grid_.eps);
  }
  return quantization::calculate_qparams(range.min[0], range.max[0], grid_.qscheme, qdtype_,
                                         grid_.eps);
}

std::unique_ptr<Observer> load_observer(std::string_view state) {
  using Make = std::function<std::unique_ptr<Observer>()>;
  static const std::map<std::string, Make, std::less<>> makers = {
      {"MinMaxObserver", [] { return std::make_unique<MinMaxObserver>(); }},
      {"MovingAverageMinMaxObserver",
       [] { return std::make_unique<MovingAverageMinMaxObserver>(); }},
      {"PerChannelMinMaxObserver", [] { return std::make_unique<PerChannelMinMaxObserver>(); }},
      {"MovingAveragePerChannelMinMaxObserver",
       [] { return std::make_unique<MovingAveragePerChannelMinMaxObserver>(); }},
      {"HistogramObserver", [] { return std::make_unique<HistogramObserver>(); }},
      {"PercentileObserver", [] { return std::make_unique<PercentileObserver>(); }},
      {"EntropyObserver", [] { return std::make_unique<EntropyObserver>(); }},
      {"MseObserver", [] { return std::make_unique<MseObserver>(); }},
      {"FixedQParamsObserver", [] { return std::make_unique<FixedQParamsObserver>(1.0f, 0); }},
      {"PlaceholderObserver", [] { return std::make_unique<PlaceholderObserver>(); }},
      {"NoopObserver", [] { return std::make_unique<NoopObserver>(); }},
  };
  const std::string name = detail::state_observer(state);
  const auto it = makers.find(name);
  if (it == makers.end()) {
    std::string known;
    for (const auto& [key, make] : makers)
      known += (known.empty() ? "" : ", ") + key;
    throw Error("load_observer: observer = \"" + name + "\" (expected one of " + known + ")");
  }
  std::unique_ptr<Observer> observer = it->second();
  observer->load_state(state);
  return observer;
}

}  // namespace lucid::quantization
