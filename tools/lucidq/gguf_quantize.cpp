// `lucidq quantize` for llama.cpp: GGUF or safetensors in, GGUF out, llama-quantize's presets.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>

#include "gguf_commands.hpp"
#include "interrupts.hpp"
#include "lucid/quantization/checkpoint_algorithms.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf_quantize.hpp"
#include "output_files.hpp"
#include "plots.hpp"
#include "print.hpp"
#include "progress.hpp"
#include "quantize_checks.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

Q::GgmlType parse_type(const std::string& flag, const std::string& text) {
  const auto type = Q::ggml_type_from_name(text);
  if (!type) {
    throw Q::Error(flag + " = \"" + text +
                   "\" is not a ggml type (expected e.g. q8_0, q6_K, q4_K, q4_0, iq4_nl, f16)");
  }
  return *type;
}

// KEY=TYPE:VALUE, TYPE a GGUF value type name (u8 ... f64, bool, str).
Q::GgufValue parse_value(const std::string& item, std::string& key) {
  const auto equals = item.find('=');
  const auto colon = item.find(':', equals == std::string::npos ? 0 : equals);
  if (equals == std::string::npos || equals == 0 || colon == std::string::npos) {
    throw Q::Error("--metadata = \"" + item +
                   "\" (expected KEY=TYPE:VALUE, e.g. general.architecture=str:llama or "
                   "llama.block_count=u32:32)");
  }
  key = item.substr(0, equals);
  const std::string type = item.substr(equals + 1, colon - equals - 1);
  const std::string text = item.substr(colon + 1);
  auto fail = [&]() -> Q::GgufValue {
    throw Q::Error("--metadata " + key + ": \"" + text + "\" is not a valid " + type);
  };
  try {
    std::size_t used = 0;
    if (type == "str") return Q::GgufValue(text);
    if (type == "bool") {
      if (text == "true") return Q::GgufValue(true);
      if (text == "false") return Q::GgufValue(false);
      return fail();
    }
    if (type == "f32") {
      const float v = std::stof(text, &used);
      return used == text.size() ? Q::GgufValue(v) : fail();
    }
    if (type == "f64") {
      const double v = std::stod(text, &used);
      return used == text.size() ? Q::GgufValue(v) : fail();
    }
    if (type == "i8" || type == "i16" || type == "i32" || type == "i64") {
      const long long v = std::stoll(text, &used);
      if (used != text.size()) return fail();
      if (type == "i8" && v == static_cast<std::int8_t>(v))
        return Q::GgufValue(static_cast<std::int8_t>(v));
      if (type == "i16" && v == static_cast<std::int16_t>(v))
        return Q::GgufValue(static_cast<std::int16_t>(v));
      if (type == "i32" && v == static_cast<std::int32_t>(v))
        return Q::GgufValue(static_cast<std::int32_t>(v));
      if (type == "i64") return Q::GgufValue(static_cast<std::int64_t>(v));
      return fail();
    }
    if (type == "u8" || type == "u16" || type == "u32" || type == "u64") {
      if (text.empty() || text[0] == '-') return fail();
      const unsigned long long v = std::stoull(text, &used);
      if (used != text.size()) return fail();
      if (type == "u8" && v == static_cast<std::uint8_t>(v))
        return Q::GgufValue(static_cast<std::uint8_t>(v));
      if (type == "u16" && v == static_cast<std::uint16_t>(v))
        return Q::GgufValue(static_cast<std::uint16_t>(v));
      if (type == "u32" && v == static_cast<std::uint32_t>(v))
        return Q::GgufValue(static_cast<std::uint32_t>(v));
      if (type == "u64") return Q::GgufValue(static_cast<std::uint64_t>(v));
      return fail();
    }
  } catch (const std::logic_error&) {  // std::stoll and friends: invalid or out of range
    return fail();
  }
  throw Q::Error("--metadata " + key + ": type \"" + type +
                 "\" (expected u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, bool or str)");
}

Q::GgufQuantizeOptions options_from(const GgufQuantizeRun& run, const GgufQuantizeFlags& f) {
  Q::GgufQuantizeOptions options;
  const std::string preset = f.type.empty() ? "Q8_0" : f.type;
  const auto file_type = Q::llama_file_type_from_name(preset);
  if (!file_type) {
    throw Q::Error("--type = \"" + preset + "\" is not a preset (expected one of " +
                   Q::llama_file_type_names() + "; aliases Q3_K, Q4_K, Q5_K)");
  }
  options.mixture.file_type = *file_type;
  options.mixture.pure = f.pure;
  options.mixture.leave_output_tensor = f.leave_output_tensor;
  if (!f.output_tensor_type.empty()) {
    options.mixture.output_tensor_type = parse_type("--output-tensor-type", f.output_tensor_type);
  }
  if (!f.token_embedding_type.empty()) {
    options.mixture.token_embedding_type =
        parse_type("--token-embedding-type", f.token_embedding_type);
  }
  options.allow_requantize = f.allow_requantize;
  options.strict = run.strict;
  options.overwrite = run.force;
  for (const std::string& item : f.metadata) {
    std::string key;
    Q::GgufValue value = parse_value(item, key);
    options.metadata.set(key, std::move(value));
  }
  // --exclude patterns keep tensors as they are; then the recipe's rules.
  if (!run.exclude.empty()) options.recipe.rules.push_back(Q::exclude_rule(run.exclude));
  if (!run.recipe.empty()) {
    for (Q::RecipeRule& rule : Q::load_recipe(run.recipe).rules)
      options.recipe.rules.push_back(std::move(rule));
  }
  return options;
}

void print_plan(const std::vector<Q::GgufTensorPlan>& plan) {
  Table table({{"tensor", Align::left},
               {"shape", Align::left},
               {"type", Align::left},
               {"why", Align::left}});
  for (const Q::GgufTensorPlan& p : plan) {
    const std::string from(Q::ggml_type_traits(p.input_type).name);
    const std::string to(Q::ggml_type_traits(p.output_type).name);
    table.add_row({p.name, Q::to_string(Q::Shape(p.ne.rbegin(), p.ne.rend())),
                   p.input_type == p.output_type ? from : from + " -> " + to, p.reason});
  }
  fmt::print("{}", table.str(""));
}

}  // namespace

void add_gguf_quantize_flags(CLI::App& cmd, GgufQuantizeFlags& f) {
  cmd.add_option("--type", f.type,
                 "GGUF output: the llama-quantize preset (Q8_0, Q6_K, Q5_K_M, Q5_K_S, Q5_0, "
                 "Q5_1, Q4_K_M, Q4_K_S, Q4_0, Q4_1, Q3_K_L, Q3_K_M, Q3_K_S, Q2_K, IQ4_NL, F16, "
                 "BF16, F32); default Q8_0")
      ->type_name("PRESET");
  cmd.add_option("--imatrix", f.imatrix,
                 "GGUF output: importance matrix: llama-imatrix GGUF or legacy .dat, or lucidq "
                 "calibration statistics (per-column mean squares; told by content)")
      ->type_name("FILE");
  cmd.add_flag("--pure", f.pure, "GGUF output: every quantizable tensor the preset's type");
  cmd.add_option("--output-tensor-type", f.output_tensor_type,
                 "GGUF output: the ggml type of output.weight")
      ->type_name("TYPE");
  cmd.add_option("--token-embedding-type", f.token_embedding_type,
                 "GGUF output: the ggml type of token_embd.weight")
      ->type_name("TYPE");
  cmd.add_flag("--leave-output-tensor", f.leave_output_tensor,
               "GGUF output: keep output.weight as it is");
  cmd.add_flag("--allow-requantize", f.allow_requantize,
               "GGUF output: re-encode tensors that are already block-quantized");
  cmd.add_option("--metadata", f.metadata,
                 "GGUF output from safetensors: a metadata entry KEY=TYPE:VALUE "
                 "(general.architecture=str:llama); repeatable")
      ->type_name("KEY=TYPE:VALUE");
}

void run_gguf_quantize(const GgufQuantizeRun& run, const GgufQuantizeFlags& flags) {
  Q::GgufQuantizeOptions options = options_from(run, flags);
  std::optional<Q::ImportanceMatrix> imatrix;
  if (!flags.imatrix.empty()) {
    imatrix = Q::load_importance_matrix(flags.imatrix);
    options.imatrix = &*imatrix;
  }
  const std::vector<Q::GgufTensorPlan> plan = Q::plan_gguf_quantization(run.input, options);
  std::vector<std::string> names;
  for (const Q::GgufTensorPlan& p : plan)
    names.push_back(p.name);
  check_patterns_match(options.recipe, names, run.input, run.strict);
  if (run.dry_run) {
    print_plan(plan);
    return;
  }
  if (run.output.empty()) throw Q::Error("--output is required (expected -o OUT.gguf)");
  check_new_output(run.output, run.force);
  const bool json_to_stdout = run.json == "-";
  if (!run.json.empty() && !json_to_stdout) check_new_output(run.json, run.force);
  std::vector<std::string> plots;
  if (!run.plots.empty()) {
    std::vector<std::string> planned;
    for (const Q::GgufTensorPlan& p : plan) {
      if (p.output_type != p.input_type) planned.push_back(p.name);
    }
    options.on_tensor = reconstruction_plot_writer(run.plots, run.force, planned, plots);
  }
  ProgressBar bar(!run.quiet);
  options.progress = bar.callback();
  const Q::CheckpointReport report = [&] {
    const JobOutput job(run.output);
    return Q::quantize_gguf(run.input, run.output, options);
  }();
  bar.finish();
  if (!run.json.empty()) {
    if (json_to_stdout) {
      fmt::print("{}", Q::report_to_json(report));
    } else {
      Q::write_report_json(report, run.json, run.force);
    }
  }
  if (run.quiet || json_to_stdout) return;
  fmt::print("{}", Q::format_report(report));
  fmt::print("wrote {} ({} {})\n", run.output, "GGUF", Q::to_string(options.mixture.file_type));
  if (!run.json.empty()) fmt::print("wrote {} (the report as JSON)\n", run.json);
  if (!plots.empty()) fmt::print("wrote {} plots to {}\n", plots.size(), run.plots);
}

}  // namespace lucidq::cli
