// Internal: the JSON envelope of observer states, exact float encoding, and checked field access.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/observer.hpp"

namespace lucid::quantization::detail {

using Json = nlohmann::json;

/// The version written by save_state() and the only one load_state() reads.
inline constexpr int kStateVersion = 1;

/// {"observer": observer, "version": 1, "options": options, "stats": stats} as text.
std::string write_state(std::string_view observer, Json options, Json stats);

/// The "options" and "stats" objects of a state.
struct ParsedState {
  Json options;
  Json stats;
};
/// Parses save_state() text and checks that it belongs to `observer` (any
/// observer when empty). Throws Error on malformed JSON, another observer or
/// version, or a missing object.
ParsedState read_state(std::string_view text, std::string_view observer);
/// The "observer" name of a state (Error when malformed).
std::string state_observer(std::string_view text);

/// A float that reads back bit for bit: a number when finite, else "inf" / "-inf" / "nan".
Json float_to_json(float value);
float float_from_json(const Json& value, std::string_view what);
Json floats_to_json(std::span<const float> values);
std::vector<float> floats_from_json(const Json& value, std::string_view what);

/// QuantGrid <-> {"dtype", "qscheme", "reduce_range", "quant_min", "quant_max", "eps"}.
Json grid_to_json(const QuantGrid& grid);
QuantGrid grid_from_json(const Json& value);

/// The member `key` of object `object` as T; throws Error naming `what` and
/// the key when it is missing or has another type.
template <class T>
T field(const Json& object, const char* key, std::string_view what);

/// Error("<what>: <message>") for a state that parsed but makes no sense.
[[noreturn]] void bad_state(std::string_view what, const std::string& message);

}  // namespace lucid::quantization::detail
