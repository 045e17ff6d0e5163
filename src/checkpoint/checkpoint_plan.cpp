// plan_quantization: which tensors of a safetensors file a recipe quantizes, and how.
#include <set>

#include "checkpoint/checkpoint_format.hpp"
#include "io/safetensors_format.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

[[noreturn]] void fail_tensor(const std::string& file, std::string_view tensor,
                              const std::string& message) {
  throw Error(file + ": tensor " + detail::quoted(tensor) + ": " + message);
}

// Why no rule applied to a floating-point tensor.
std::string kept_reason(const QuantRecipe& recipe, const SafetensorsEntry& entry) {
  for (const RecipeRule& rule : recipe.rules) {
    for (const std::string& pattern : rule.patterns) {
      if (glob_match(pattern, entry.name)) {
        return std::to_string(entry.shape.size()) + "-D; " + rule.origin + " needs " +
               std::to_string(rule.min_ndim) + "-D+";
      }
    }
  }
  return "no rule matches";
}

}  // namespace

std::vector<TensorPlan> plan_quantization(const SafetensorsFile& file, const QuantRecipe& recipe) {
  const std::string path = file.path().string();
  detail::check_not_lucidq_checkpoint(file);
  std::vector<TensorPlan> plan;
  plan.reserve(file.entries().size());
  for (const SafetensorsEntry& entry : file.entries()) {
    TensorPlan p{entry, std::nullopt, {}};
    if (!is_floating_point(entry.type)) {
      p.reason = std::string(to_safetensors_name(entry.type)) + " is not floating point";
    } else if (const RecipeRule* rule = recipe.match(entry.name, entry.shape.size())) {
      p.reason = rule->origin;
      if (rule->ggml_type) {
        fail_tensor(path, entry.name,
                    rule->origin + ": names ggml type " +
                        std::string(ggml_type_traits(*rule->ggml_type).name) +
                        " (expected lucidq settings: ggml types are for GGUF output, "
                        "e.g. `lucidq quantize -o out.gguf`)");
      }
      if (rule->settings) {
        try {
          p.settings = resolve_settings(*rule->settings, entry.shape);
        } catch (const Error& e) {
          fail_tensor(path, entry.name, rule->origin + ": " + e.what());
        }
      }
    } else {
      p.reason = kept_reason(recipe, entry);
    }
    plan.push_back(std::move(p));
  }

  // Every stored name of the output must be unique. Companion names end in ".scale" or
  // ".zero_point" after a unique tensor name, so they can only clash with input names.
  std::set<std::string, std::less<>> names;
  for (const TensorPlan& p : plan)
    names.insert(p.entry.name);
  for (const TensorPlan& p : plan) {
    if (!p.settings) continue;
    const QuantizedTensorLayout layout =
        detail::make_layout(p.entry.name, p.entry.shape, p.entry.type, *p.settings);
    for (const SafetensorsTensorSpec& spec : layout.stored_tensors()) {
      if (spec.name != p.entry.name && names.contains(spec.name)) {
        fail_tensor(path, p.entry.name,
                    "quantizing it stores " + detail::quoted(spec.name) +
                        ", a name the input already uses (expected distinct names: keep one of "
                        "the two tensors with a skip rule or --exclude)");
      }
    }
  }
  return plan;
}

}  // namespace lucid::quantization
