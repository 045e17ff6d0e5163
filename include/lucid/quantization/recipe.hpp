// Quantization recipes: rules that map tensor-name patterns to settings (or to "keep as is").
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/ggml_type.hpp"
#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/qscheme.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// How to quantize one tensor: the arguments of quantize() / quantize_per_group().
/// group_size > 0 (per-group) needs a per-channel scheme; `axis` may be negative (counted
/// from the end) and is ignored by per-tensor schemes.
struct QuantSettings {
  QScheme qscheme = QScheme::PER_CHANNEL_SYMMETRIC;
  QDtype qdtype = qint8;
  int axis = 0;
  std::int64_t group_size = 0;

  friend bool operator==(const QuantSettings&, const QuantSettings&) = default;
};

/// "qint8 per_channel_symmetric axis 0", "qint4 per_channel_symmetric group 128 axis -1",
/// "quint8 per_tensor_affine".
std::string describe(const QuantSettings& settings);

/// Checks `settings` against a tensor of `shape` and returns them with the axis made
/// non-negative (0 for per-tensor schemes). Throws Error when the scheme is per-channel and
/// the axis is outside the rank, or when group_size is negative, or > 0 with a per-tensor
/// scheme. The message names the setting and value; callers prefix file, tensor and rule.
QuantSettings resolve_settings(const QuantSettings& settings, const Shape& shape);

/// True when `name` matches the glob `pattern`: `*` matches any run of characters (dots
/// included), `?` one character, `[abc]` / `[a-z]` / `[!a]` one character of a set, and `\`
/// quotes the next character; everything else matches itself. This is fnmatch(3) without
/// flags. Thread-safe.
///
///   glob_match("*.weight", "model.layers.0.mlp.up_proj.weight") == true
bool glob_match(std::string_view pattern, std::string_view name);

/// One rule: which tensors it applies to, and what to do with them.
struct RecipeRule {
  /// Glob patterns (see glob_match); the rule applies when any of them matches the name.
  std::vector<std::string> patterns;
  /// The rule applies only to tensors of at least this many dimensions.
  int min_ndim = 0;
  /// The settings for matching tensors; nullopt keeps them as they are ("skip").
  std::optional<QuantSettings> settings;
  /// Where the rule comes from, for reports and messages: "recipe.json rules[2]",
  /// "--exclude", "default".
  std::string origin;
  /// A ggml block type for GGUF output ("ggml_type": "q4_K"); settings is then nullopt.
  /// Only quantize_gguf uses these rules (quantize_checkpoint refuses them).
  std::optional<GgmlType> ggml_type;
};

/// An ordered list of rules: the first rule that applies to a tensor decides what happens to
/// it; a floating-point tensor that no rule applies to is kept as it is. Rules never apply
/// to tensors that are not floating point (integer and boolean tensors are always kept).
struct QuantRecipe {
  std::vector<RecipeRule> rules;

  /// The first rule that applies to a tensor called `name` with `ndim` dimensions, or
  /// nullptr. Thread-safe.
  const RecipeRule* match(std::string_view name, std::size_t ndim) const;
};

/// The rule lucidq ends every recipe with: quantize tensors of rank >= 2 whose name matches
/// one of `include` (every name when empty) with `settings`. Origin "default" (or
/// "--include" when patterns are given).
RecipeRule default_rule(QuantSettings settings = {}, std::vector<std::string> include = {});

/// A rule that keeps every tensor whose name matches one of `patterns`. Origin "--exclude".
RecipeRule exclude_rule(std::vector<std::string> patterns);

/// The recipe a command line describes: the `exclude` rule first (excluding always wins),
/// then the `recipe` rules in order, then default_rule(settings, include).
QuantRecipe compose_recipe(const std::vector<std::string>& exclude, const QuantRecipe& recipe,
                           const std::vector<std::string>& include, const QuantSettings& settings);

/// Parses a recipe from JSON text (format in docs/formats.md):
///
///   {"version": 1,
///    "rules": [
///      {"match": "lm_head.weight", "skip": true},
///      {"match": ["*.q_proj.weight", "*.k_proj.weight"], "dtype": "qint4", "group_size": 128},
///      {"match": "*.weight", "min_ndim": 2, "scheme": "per_channel_affine", "dtype": "quint8"}]}
///
/// Per rule: "match" (a pattern or a non-empty array of them, required), then either
/// "skip": true or any of "scheme" (default per_channel_symmetric), "dtype" (default qint8;
/// any name qdtype_from_string accepts), "group_size" (default 0), "axis" (default 0, or -1
/// when group_size > 0: groups run along the last axis), plus "min_ndim" (default 0) and
/// "comment" (ignored); or, for GGUF output, "ggml_type" (a ggml type name, alone).
/// Top level: "rules" (required), "version" (1 if given), "comment".
/// Throws Error naming `display_name`, the rule index and the key, e.g.
/// `recipe.json: rules[1]: "dtype": "int3" is unknown (expected qint8, ...)`, for invalid
/// JSON or UTF-8, unknown keys, wrong types, bad values, and "skip" mixed with settings.
/// Thread-safe.
QuantRecipe parse_recipe(std::string_view json_text, std::string_view display_name);

/// Reads and parses the recipe file at `path` (see parse_recipe). Throws Error naming the
/// path when it cannot be read or is invalid.
QuantRecipe load_recipe(const std::filesystem::path& path);

}  // namespace lucid::quantization
