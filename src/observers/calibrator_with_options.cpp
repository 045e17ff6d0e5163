// CalibratorWithOptions: the state, merge and clone members the three histogram calibrators share.
#include <memory>
#include <string>
#include <string_view>

#include "lucid/quantization/observer_calibrators.hpp"
#include "observers/calibrator_options.hpp"
#include "observers/state.hpp"

namespace lucid::quantization {

template <class Derived, class OptionsT>
std::string CalibratorWithOptions<Derived, OptionsT>::save_state() const {
  return detail::write_state(name(), detail::options_to_json(grid_, options_),
                             detail::Json::parse(stats_json()));
}

template <class Derived, class OptionsT>
void CalibratorWithOptions<Derived, OptionsT>::load_state(std::string_view state) {
  const auto parsed = detail::read_state(state, name());
  Derived loaded(detail::grid_from_json(parsed.options),
                 detail::options_from_json<Options>(parsed.options, name()));
  loaded.load_stats_json(parsed.stats.dump());
  static_cast<Derived&>(*this) = loaded;
}

template <class Derived, class OptionsT>
std::unique_ptr<Observer> CalibratorWithOptions<Derived, OptionsT>::clone() const {
  return std::make_unique<Derived>(static_cast<const Derived&>(*this));
}

template <class Derived, class OptionsT>
void CalibratorWithOptions<Derived, OptionsT>::merge(const Observer& other) {
  require_same_config(other);
  detail::require_same_options(name(), options_,
                               static_cast<const CalibratorWithOptions&>(other).options_);
  HistogramCalibrator::merge(other);
}

template class CalibratorWithOptions<PercentileObserver, PercentileOptions>;
template class CalibratorWithOptions<EntropyObserver, EntropyOptions>;
template class CalibratorWithOptions<MseObserver, MseOptions>;

}  // namespace lucid::quantization
