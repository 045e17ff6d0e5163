// Observer states as JSON: envelope, exact floats, QuantGrid fields, checked access.
#include "observers/state.hpp"

#include <cmath>
#include <limits>

#include "lucid/quantization/error.hpp"
#include "support/json_excerpt.hpp"

namespace lucid::quantization::detail {

[[noreturn]] void bad_state(std::string_view what, const std::string& message) {
  throw Error(std::string(what) + ".load_state: " + message);
}

std::string write_state(std::string_view observer, Json options, Json stats) {
  Json state = Json::object();
  state["observer"] = std::string(observer);
  state["version"] = kStateVersion;
  state["options"] = std::move(options);
  state["stats"] = std::move(stats);
  return state.dump();
}

namespace {

Json parse_object(std::string_view text, std::string_view what) {
  Json state = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded() || !state.is_object()) {
    bad_state(what, "the state is not a JSON object (expected the text save_state() wrote)");
  }
  return state;
}

}  // namespace

std::string state_observer(std::string_view text) {
  const Json state = parse_object(text, "load_observer");
  return field<std::string>(state, "observer", "load_observer");
}

ParsedState read_state(std::string_view text, std::string_view observer) {
  const Json state = parse_object(text, observer);
  const auto name = field<std::string>(state, "observer", observer);
  if (!observer.empty() && name != observer) {
    bad_state(observer,
              "the state is of a " + name + " (expected a " + std::string(observer) + ")");
  }
  const auto version = field<std::int64_t>(state, "version", observer);
  if (version != kStateVersion) {
    bad_state(observer, "version = " + std::to_string(version) + " (expected " +
                            std::to_string(kStateVersion) + ")");
  }
  ParsedState parsed{field<Json>(state, "options", observer),
                     field<Json>(state, "stats", observer)};
  if (!parsed.options.is_object() || !parsed.stats.is_object()) {
    bad_state(observer, "\"options\" and \"stats\" must be JSON objects");
  }
  return parsed;
}

Json float_to_json(float value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return static_cast<double>(value);  // exact; dumped with enough digits to read back
}

float float_from_json(const Json& value, std::string_view what) {
  if (value.is_number()) {
    const double wide = value.get<double>();
    const auto narrow = static_cast<float>(wide);
    if (static_cast<double>(narrow) != wide) {
      bad_state(what, json_excerpt(value) + " is not a float32 value");
    }
    return narrow;
  }
  if (value == "inf") return std::numeric_limits<float>::infinity();
  if (value == "-inf") return -std::numeric_limits<float>::infinity();
  if (value == "nan") return std::numeric_limits<float>::quiet_NaN();
  bad_state(what, json_excerpt(value) + " (expected a number, \"inf\", \"-inf\" or \"nan\")");
}

Json floats_to_json(std::span<const float> values) {
  Json out = Json::array();
  for (const float v : values)
    out.push_back(float_to_json(v));
  return out;
}

std::vector<float> floats_from_json(const Json& value, std::string_view what) {
  if (!value.is_array()) bad_state(what, json_excerpt(value) + " (expected an array of numbers)");
  std::vector<float> out;
  out.reserve(value.size());
  for (const Json& v : value)
    out.push_back(float_from_json(v, what));
  return out;
}

Json grid_to_json(const QuantGrid& grid) {
  Json out = Json::object();
  out["dtype"] = grid.dtype.name();
  out["qscheme"] = to_string(grid.qscheme);
  out["reduce_range"] = grid.reduce_range;
  out["quant_min"] = grid.quant_min ? Json(*grid.quant_min) : Json(nullptr);
  out["quant_max"] = grid.quant_max ? Json(*grid.quant_max) : Json(nullptr);
  out["eps"] = float_to_json(grid.eps);
  return out;
}

QuantGrid grid_from_json(const Json& value) {
  constexpr std::string_view what = "observer options";
  QuantGrid grid;
  grid.dtype = qdtype_from_string(field<std::string>(value, "dtype", what));
  grid.qscheme = qscheme_from_string(field<std::string>(value, "qscheme", what));
  grid.reduce_range = field<bool>(value, "reduce_range", what);
  for (const auto& [key, slot] :
       {std::pair{"quant_min", &grid.quant_min}, std::pair{"quant_max", &grid.quant_max}}) {
    const Json bound = field<Json>(value, key, what);
    if (!bound.is_null()) *slot = field<std::int64_t>(value, key, what);
  }
  grid.eps = float_from_json(field<Json>(value, "eps", what), what);
  return grid;
}

template <class T>
T field(const Json& object, const char* key, std::string_view what) {
  if (!object.is_object() || !object.contains(key)) {
    bad_state(what, std::string("missing field \"") + key + "\"");
  }
  const Json& value = object.at(key);
  if constexpr (std::is_same_v<T, Json>) {
    return value;
  } else {
    bool ok = false;
    if constexpr (std::is_same_v<T, bool>) {
      ok = value.is_boolean();
    } else if constexpr (std::is_integral_v<T>) {
      ok = value.is_number_integer();
    } else if constexpr (std::is_floating_point_v<T>) {
      ok = value.is_number();
    } else if constexpr (std::is_same_v<T, std::string>) {
      ok = value.is_string();
    }
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      ok = ok && !(value.is_number_unsigned() &&
                   value.get<std::uint64_t>() > std::uint64_t{std::numeric_limits<T>::max()});
      ok = ok && value.get<std::int64_t>() >= std::int64_t{std::numeric_limits<T>::min()} &&
           value.get<std::int64_t>() <= std::int64_t{std::numeric_limits<T>::max()};
    }
    if (!ok) {
      bad_state(what, std::string("field \"") + key + "\" = " + json_excerpt(value) +
                          " has the wrong type or is out of range");
    }
    return value.get<T>();
  }
}

template Json field<Json>(const Json&, const char*, std::string_view);
template bool field<bool>(const Json&, const char*, std::string_view);
template int field<int>(const Json&, const char*, std::string_view);
template std::int64_t field<std::int64_t>(const Json&, const char*, std::string_view);
template double field<double>(const Json&, const char*, std::string_view);
template std::string field<std::string>(const Json&, const char*, std::string_view);

}  // namespace lucid::quantization::detail
