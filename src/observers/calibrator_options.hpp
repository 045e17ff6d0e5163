// Internal: the histogram calibrators' options, listed once per type, as state JSON and merge
// checks.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/observer_calibrators.hpp"
#include "observers/state.hpp"

namespace lucid::quantization::detail {

/// Calls visit(key, member) for every option, in one fixed order.
template <class Visit>
void visit_options(PercentileOptions& options, Visit&& visit) {
  visit("percentile", options.percentile);
  visit("bins", options.bins);
  visit("ch_axis", options.ch_axis);
}
template <class Visit>
void visit_options(EntropyOptions& options, Visit&& visit) {
  visit("bins", options.bins);
}
template <class Visit>
void visit_options(MseOptions& options, Visit&& visit) {
  visit("bins", options.bins);
  visit("ch_axis", options.ch_axis);
}

/// The "options" object of a calibrator's state: the grid's fields plus every option.
template <class Options>
Json options_to_json(const QuantGrid& grid, Options options) {
  Json json = grid_to_json(grid);
  visit_options(options, [&](const char* key, const auto& value) { json[key] = value; });
  return json;
}

/// The options read back from that object; Error naming `who` and the key when one is bad.
template <class Options>
Options options_from_json(const Json& json, std::string_view who) {
  Options options;
  visit_options(options, [&](const char* key, auto& value) {
    value = field<std::remove_reference_t<decltype(value)>>(json, key, who);
  });
  return options;
}

/// merge() needs both calibrators built with the same options.
template <class Options>
void require_same_options(std::string_view who, const Options& mine, const Options& other) {
  if (other != mine)
    throw Error(std::string(who) + ".merge: other has other options (expected the same)");
}

}  // namespace lucid::quantization::detail
