// Quantization recipes: settings, glob matching, rule lists and their JSON form.
#include "lucid/quantization/recipe.hpp"

#include <fnmatch.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "support/json_excerpt.hpp"

namespace lucid::quantization {
namespace {

using nlohmann::json;

// Where a problem is: "recipe.json: rules[1]: \"dtype\": ".
struct Place {
  std::string_view file;
  std::optional<std::size_t> rule;
  std::string_view key;

  [[noreturn]] void fail(const std::string& message) const {
    std::string text(file);
    if (rule) text += ": rules[" + std::to_string(*rule) + "]";
    if (!key.empty()) text += ": \"" + std::string(key) + "\"";
    throw Error(text + ": " + message);
  }
};

std::string shown(const json& value) {
  return detail::json_excerpt(value, 60);
}

std::string type_and_value(const json& value) {
  return std::string(value.type_name()) + " " + shown(value);
}

std::string require_string(const json& value, const Place& at, const char* expected) {
  if (!value.is_string()) at.fail(type_and_value(value) + " (expected " + expected + ")");
  return value.get<std::string>();
}

std::int64_t require_integer(const json& value, const Place& at, std::int64_t min, std::int64_t max,
                             const char* expected) {
  const bool fits =
      value.is_number_integer() &&
      !(value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max));
  if (!value.is_number_integer()) at.fail(type_and_value(value) + " (expected " + expected + ")");
  if (!fits || value.get<std::int64_t>() < min || value.get<std::int64_t>() > max) {
    at.fail(shown(value) + " (expected " + expected + ")");
  }
  return value.get<std::int64_t>();
}

std::vector<std::string> parse_patterns(const json& value, const Place& at) {
  constexpr const char* expected = "a name pattern such as \"*.weight\", or an array of them";
  std::vector<std::string> patterns;
  if (value.is_string()) {
    patterns.push_back(value.get<std::string>());
  } else if (value.is_array() && !value.empty()) {
    for (const json& item : value)
      patterns.push_back(require_string(item, at, expected));
  } else {
    at.fail(type_and_value(value) + " (expected " + expected + ")");
  }
  for (const std::string& pattern : patterns) {
    if (pattern.empty()) at.fail("an empty pattern (expected a name pattern such as \"*.weight\")");
  }
  return patterns;
}

// Parses one rule object. The text was checked for UTF-8 by the JSON parser.
RecipeRule parse_rule(const json& value, std::string_view file, std::size_t index) {
  const Place rule_place{file, index, {}};
  if (!value.is_object()) {
    rule_place.fail(
        type_and_value(value) +
        " (expected an object such as {\"match\": \"*.weight\", \"dtype\": \"qint8\"})");
  }
  RecipeRule rule;
  rule.origin = std::string(file) + " rules[" + std::to_string(index) + "]";
  bool skip = false;
  std::optional<std::string> first_setting;  // the first settings key seen, for messages
  std::optional<std::int64_t> axis;
  QuantSettings settings;
  for (const auto& [key, item] : value.items()) {
    const Place at{file, index, key};
    if (key == "ggml_type") {
      const std::string text = require_string(item, at, "a ggml type name such as \"q4_K\"");
      rule.ggml_type = ggml_type_from_name(text);
      if (!rule.ggml_type) {
        at.fail(detail::quoted(text) +
                " is not a ggml type (expected a name such as q8_0, "
                "q4_K, q6_K, iq4_nl, f16)");
      }
    } else if (key == "match") {
      rule.patterns = parse_patterns(item, at);
    } else if (key == "skip") {
      if (!item.is_boolean()) at.fail(type_and_value(item) + " (expected true or false)");
      skip = item.get<bool>();
    } else if (key == "min_ndim") {
      rule.min_ndim = static_cast<int>(require_integer(item, at, 0, 64, "an integer in [0, 64]"));
    } else if (key == "comment") {
      // Free text for the reader of the recipe.
    } else if (key == "scheme" || key == "dtype" || key == "axis" || key == "group_size") {
      if (!first_setting) first_setting = key;
      if (key == "scheme") {
        const std::string text =
            require_string(item, at, "a scheme name such as \"per_channel_symmetric\"");
        try {
          settings.qscheme = qscheme_from_string(text);
        } catch (const Error& e) {
          at.fail(e.what());
        }
      } else if (key == "dtype") {
        const std::string text = require_string(item, at, "a dtype name such as \"qint8\"");
        try {
          settings.qdtype = qdtype_from_string(text);
        } catch (const Error& e) {
          at.fail(e.what());
        }
      } else if (key == "axis") {
        axis = require_integer(item, at, -64, 63, "an integer axis in [-64, 63]");
      } else {
        settings.group_size = require_integer(item, at, 0, std::numeric_limits<std::int64_t>::max(),
                                              "an integer >= 0 (0: no groups)");
      }
    } else {
      at.fail(
          "unknown key (expected match, skip, scheme, dtype, axis, group_size, ggml_type, "
          "min_ndim or comment)");
    }
  }
  if (rule.patterns.empty()) {
    rule_place.fail("no \"match\" (expected a name pattern such as \"match\": \"*.weight\")");
  }
  if (rule.ggml_type) {
    if (skip || first_setting) {
      Place{file, index, skip ? std::string("skip") : *first_setting}.fail(
          "given together with \"ggml_type\" (expected either a ggml type, skip or lucidq "
          "settings)");
    }
    return rule;
  }
  if (skip) {
    if (first_setting) {
      Place{file, index, *first_setting}.fail(
          "given together with \"skip\": true (expected either skip or settings)");
    }
    return rule;
  }
  if (settings.group_size > 0 && !is_per_channel(settings.qscheme)) {
    Place{file, index, "group_size"}.fail(
        std::to_string(settings.group_size) + " with scheme " + to_string(settings.qscheme) +
        " (expected a per_channel scheme for groups, or group_size 0)");
  }
  if (axis && !is_per_channel(settings.qscheme)) {
    Place{file, index, "axis"}.fail("given with scheme " + to_string(settings.qscheme) +
                                    " (expected a per_channel scheme, or no axis)");
  }
  settings.axis = static_cast<int>(axis.value_or(settings.group_size > 0 ? -1 : 0));
  rule.settings = settings;
  return rule;
}

// Parses JSON, refusing an object that repeats a key (nlohmann/json would keep the last one).
json parse_without_duplicate_keys(std::string_view text, const Place& top) {
  std::vector<std::set<std::string>> open;
  return json::parse(text.begin(), text.end(), [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open.emplace_back();
    if (event == json::parse_event_t::object_end) open.pop_back();
    if (event == json::parse_event_t::key &&
        !open.back().insert(parsed.get_ref<const std::string&>()).second) {
      top.fail("key " + detail::quoted(parsed.get_ref<const std::string&>()) +
               " appears twice in one object (expected each key once)");
    }
    return true;
  });
}

std::string join_patterns(const std::vector<std::string>& patterns) {
  std::string out;
  for (const std::string& pattern : patterns)
    out += (out.empty() ? "" : ", ") + pattern;
  return out;
}

}  // namespace

std::string describe(const QuantSettings& settings) {
  std::string text = settings.qdtype.name() + " " + to_string(settings.qscheme);
  if (!is_per_channel(settings.qscheme)) return text;
  if (settings.group_size > 0) text += " group " + std::to_string(settings.group_size);
  return text + " axis " + std::to_string(settings.axis);
}

QuantSettings resolve_settings(const QuantSettings& settings, const Shape& shape) {
  if (settings.group_size < 0) {
    throw Error("group_size = " + std::to_string(settings.group_size) + " (expected >= 0)");
  }
  QuantSettings resolved = settings;
  if (!is_per_channel(settings.qscheme)) {
    if (settings.group_size > 0) {
      throw Error("group_size = " + std::to_string(settings.group_size) + " with " +
                  to_string(settings.qscheme) + " (expected a per_channel scheme for groups)");
    }
    resolved.axis = 0;
    return resolved;
  }
  const auto rank = static_cast<int>(shape.size());
  if (settings.axis < -rank || settings.axis >= rank) {
    throw Error("axis = " + std::to_string(settings.axis) + " with " + to_string(settings.qscheme) +
                " on a tensor of rank " + std::to_string(rank) +
                (rank == 0 ? std::string(" (expected a per_tensor scheme for a scalar)")
                           : " (expected an axis in [" + std::to_string(-rank) + ", " +
                                 std::to_string(rank - 1) + "])"));
  }
  resolved.axis = settings.axis < 0 ? settings.axis + rank : settings.axis;
  return resolved;
}

bool glob_match(std::string_view pattern, std::string_view name) {
  // fnmatch needs NUL-terminated strings; a name with an embedded NUL never matches.
  if (name.find('\0') != std::string_view::npos) return false;
  const std::string p(pattern), n(name);
  return ::fnmatch(p.c_str(), n.c_str(), 0) == 0;
}

const RecipeRule* QuantRecipe::match(std::string_view name, std::size_t ndim) const {
  for (const RecipeRule& rule : rules) {
    if (ndim < static_cast<std::size_t>(rule.min_ndim)) continue;
    for (const std::string& pattern : rule.patterns) {
      if (glob_match(pattern, name)) return &rule;
    }
  }
  return nullptr;
}

RecipeRule default_rule(QuantSettings settings, std::vector<std::string> include) {
  RecipeRule rule;
  rule.origin = include.empty() ? "default" : "--include " + join_patterns(include);
  rule.patterns = include.empty() ? std::vector<std::string>{"*"} : std::move(include);
  rule.min_ndim = 2;
  rule.settings = settings;
  return rule;
}

RecipeRule exclude_rule(std::vector<std::string> patterns) {
  RecipeRule rule;
  rule.origin = "--exclude " + join_patterns(patterns);
  rule.patterns = std::move(patterns);
  return rule;
}

QuantRecipe compose_recipe(const std::vector<std::string>& exclude, const QuantRecipe& recipe,
                           const std::vector<std::string>& include, const QuantSettings& settings) {
  QuantRecipe out;
  if (!exclude.empty()) out.rules.push_back(exclude_rule(exclude));
  out.rules.insert(out.rules.end(), recipe.rules.begin(), recipe.rules.end());
  out.rules.push_back(default_rule(settings, include));
  return out;
}

QuantRecipe parse_recipe(std::string_view json_text, std::string_view display_name) {
  const Place top{display_name, std::nullopt, {}};
  if (const std::size_t bad = detail::find_invalid_utf8(json_text); bad != std::string_view::npos) {
    top.fail("not valid UTF-8 (bad byte at offset " + std::to_string(bad) +
             "; expected UTF-8 JSON)");
  }
  json root;
  try {
    root = parse_without_duplicate_keys(json_text, top);
  } catch (const json::exception& e) {
    std::string what = e.what();
    if (const auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
    top.fail("not valid JSON (" + what + ")");
  }
  if (!root.is_object()) {
    top.fail("the recipe is a JSON " + std::string(root.type_name()) +
             " (expected an object such as {\"rules\": [...]})");
  }
  QuantRecipe recipe;
  bool has_rules = false;
  for (const auto& [key, value] : root.items()) {
    const Place at{display_name, std::nullopt, key};
    if (key == "rules") {
      if (!value.is_array()) at.fail(type_and_value(value) + " (expected an array of rules)");
      for (std::size_t i = 0; i < value.size(); ++i)
        recipe.rules.push_back(parse_rule(value[i], display_name, i));
      has_rules = true;
    } else if (key == "version") {
      if (!value.is_number_integer() || value.get<std::int64_t>() != 1) {
        at.fail(type_and_value(value) + " (expected 1, the only recipe version)");
      }
    } else if (key != "comment") {
      at.fail("unknown key (expected rules, version or comment)");
    }
  }
  if (!has_rules) top.fail("no \"rules\" (expected {\"rules\": [...]})");
  return recipe;
}

QuantRecipe load_recipe(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw Error(path.string() + ": not a readable file (expected a recipe JSON file)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open the recipe file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(path.string() + ": cannot read the recipe file");
  return parse_recipe(text.str(), path.string());
}

}  // namespace lucid::quantization
