// `lucidq quantize`: a safetensors checkpoint quantized into a lucidq checkpoint, with a report.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gguf_commands.hpp"
#include "interrupts.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/error.hpp"
#include "method_flags.hpp"
#include "output_files.hpp"
#include "plots.hpp"
#include "print.hpp"
#include "progress.hpp"
#include "quantize_checks.hpp"
#include "settings_flags.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

struct QuantizeArgs {
  std::string input;
  std::string output;
  std::shared_ptr<SettingsFlags> flags = std::make_shared<SettingsFlags>();
  std::shared_ptr<MethodFlags> method = std::make_shared<MethodFlags>();
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  std::string recipe;
  std::string json;
  std::string plots;
  bool strict = false;
  bool force = false;
  bool quiet = false;
  bool dry_run = false;
  GgufQuantizeFlags gguf;
};

GgufQuantizeRun gguf_run_of(const QuantizeArgs& a) {
  return {a.input, a.output, a.recipe, a.exclude, a.json,
          a.plots, a.strict, a.force,  a.quiet,   a.dry_run};
}

Q::QuantRecipe recipe_from(const QuantizeArgs& a) {
  const Q::QuantRecipe file = a.recipe.empty() ? Q::QuantRecipe{} : Q::load_recipe(a.recipe);
  return Q::compose_recipe(a.exclude, file, a.include, a.flags->settings());
}

std::string action_text(const Q::TensorPlan& p) {
  return p.settings ? Q::describe(*p.settings) : "keep";
}

// The plan, after warning about patterns that match nothing and tensors that look like
// mistakes (errors with --strict).
std::vector<Q::TensorPlan> checked_plan(const QuantizeArgs& a, const Q::QuantRecipe& recipe) {
  const auto file = Q::SafetensorsFile::open(a.input);
  std::vector<Q::TensorPlan> plan = Q::plan_quantization(file, recipe);
  std::vector<std::string> names;
  for (const Q::TensorPlan& p : plan)
    names.push_back(p.entry.name);
  check_patterns_match(recipe, names, a.input, a.strict);
  check_plan(plan, a.input, a.strict);
  return plan;
}

// --dry-run: what each tensor would become, and why.
void print_plan(const std::vector<Q::TensorPlan>& plan) {
  Table table({{"tensor", Align::left},
               {"shape", Align::left},
               {"dtype", Align::left},
               {"action", Align::left},
               {"rule", Align::left}});
  for (const Q::TensorPlan& p : plan) {
    table.add_row({p.entry.name, Q::to_string(p.entry.shape),
                   std::string(Q::to_safetensors_name(p.entry.type)), action_text(p), p.reason});
  }
  fmt::print("{}", table.str(""));
}

void run_quantize(const QuantizeArgs& a) {
  const Q::QuantRecipe recipe = recipe_from(a);
  const std::vector<Q::TensorPlan> plan = checked_plan(a, recipe);
  if (a.dry_run) {
    print_plan(plan);
    return;
  }
  check_new_output(a.output, a.force);
  const bool json_to_stdout = a.json == "-";
  if (!a.json.empty() && !json_to_stdout) check_new_output(a.json, a.force);

  Q::QuantizeCheckpointOptions options;
  options.recipe = recipe;
  options.overwrite = a.force;
  options.strict = a.strict;
  a.method->apply(options);
  std::vector<std::string> plots;
  if (!a.plots.empty()) {
    std::vector<std::string> planned;
    for (const Q::TensorPlan& p : plan) {
      if (p.settings) planned.push_back(p.entry.name);
    }
    options.on_tensor = plot_writer(a.plots, a.force, planned, plots);
  }
  ProgressBar bar(!a.quiet);
  options.progress = bar.callback();
  const Q::CheckpointReport report = [&] {
    const JobOutput job(a.output);
    return Q::quantize_checkpoint(a.input, a.output, options);
  }();
  bar.finish();

  if (!a.json.empty()) {
    if (json_to_stdout) {
      fmt::print("{}", Q::report_to_json(report));
    } else {
      Q::write_report_json(report, a.json, a.force);
    }
  }
  if (a.quiet || json_to_stdout) return;
  fmt::print("{}", Q::format_report(report));
  fmt::print("wrote {}\n", a.output);
  if (!a.json.empty()) fmt::print("wrote {} (the report as JSON)\n", a.json);
  if (!plots.empty()) fmt::print("wrote {} plots to {}\n", plots.size(), a.plots);
}

constexpr const char* footer =
    "Tensors are chosen by rules, first match wins: --exclude patterns, then the --recipe\n"
    "rules, then the default rule, which quantizes floating-point tensors of 2 or more\n"
    "dimensions (narrowed by --include) with --scheme/--dtype/--axis/--group-size. Everything\n"
    "else (biases, norms, integer tensors) is copied bit for bit. Patterns are globs: '*' matches\n"
    "any text (dots too), '?' one character. Format and recipe files: docs/formats.md.\n"
    "\n"
    "Examples:\n"
    "  lucidq quantize model.safetensors -o model.q8.safetensors\n"
    "      int8 per output channel (axis 0), symmetric: the default\n"
    "  lucidq quantize model.safetensors -o model.q4.safetensors --dtype qint4 --group-size 128\n"
    "      int4 in groups of 128 along the last axis (the input features)\n"
    "  lucidq quantize model.safetensors -o q.safetensors --exclude 'lm_head.*' --json "
    "report.json\n"
    "  lucidq quantize model.safetensors -o q.safetensors --recipe recipe.json --dry-run\n"
    "      show which rule each tensor takes, write nothing\n"
    "  lucidq quantize model.safetensors -o q.safetensors --dtype quint4 --scheme "
    "per_channel_affine --group-size 128 --method gptq --calibration stats.safetensors\n"
    "      GPTQ from calibration statistics (docs/algorithms.md)\n"
    "  lucidq quantize model.safetensors -o q.safetensors --dtype qint4 --group-size 32 --method "
    "weighted-rtn --calibration imatrix.gguf\n"
    "      importance-weighted scales from a llama.cpp imatrix (GGUF or .dat) or lucidq "
    "statistics\n"
    "\n"
    "GGUF (llama.cpp): when the input is GGUF, the output ends in .gguf or --type is given,\n"
    "the job is llama-quantize's: --type picks a preset, its per-tensor mixture decides each\n"
    "tensor (after --exclude and recipe rules naming \"ggml_type\"), and the blocks are ggml's\n"
    "bytes. The report adds bits per weight. docs/gguf.md has the mixture table.\n"
    "  lucidq quantize model-f16.gguf -o model-Q4_K_M.gguf --type Q4_K_M --imatrix imatrix.gguf\n"
    "      (--imatrix also takes lucidq calibration statistics: their per-column mean squares)\n"
    "  lucidq quantize model.safetensors -o model.gguf --type Q8_0";

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Quantize a safetensors or GGUF checkpoint (one tensor at a time) and report the error");
  cmd->footer(footer);
  cmd->add_option("input", args->input, "The safetensors or GGUF file to quantize")
      ->required()
      ->type_name("IN.safetensors|IN.gguf");
  cmd->add_option("-o,--output", args->output, "The quantized checkpoint to write")
      ->type_name("OUT.safetensors|OUT.gguf");
  add_settings_flags(*cmd, args->flags);
  add_method_flags(*cmd, args->method);
  cmd->add_option("--include", args->include,
                  "Quantize by default only tensors matching this pattern; repeatable")
      ->type_name("PATTERN");
  cmd->add_option("--exclude", args->exclude, "Keep tensors matching this pattern; repeatable")
      ->type_name("PATTERN");
  cmd->add_option("--recipe", args->recipe, "JSON rules: name patterns -> settings or skip")
      ->type_name("FILE");
  cmd->add_option("--json", args->json, "Also write the report as JSON to FILE ('-': stdout)")
      ->type_name("FILE");
  cmd->add_option("--plots", args->plots,
                  "Write two PNG plots per quantized tensor into DIR (uses memory: 12 bytes per "
                  "element of the largest tensor)")
      ->type_name("DIR");
  cmd->add_flag("--strict", args->strict,
                "Fail on NaN or Inf instead of counting them, and on the warnings: patterns "
                "that match no tensor, 1-D or growing tensors quantized, ragged groups");
  cmd->add_flag("-f,--force", args->force, "Replace existing output files");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress bar and no report on stdout");
  cmd->add_flag("-n,--dry-run", args->dry_run,
                "Print what each tensor would become and which rule decides; write nothing");
  add_gguf_quantize_flags(*cmd, args->gguf);
  cmd->callback([args, cmd] {
    const QuantizeJob job = quantize_job(args->input, args->output, args->gguf.type);
    check_quantize_flags(*cmd, job, args->output);
    if (job.gguf) {
      run_gguf_quantize(gguf_run_of(*args), args->gguf);
      return;
    }
    if (!args->dry_run && args->output.empty()) {
      throw Q::Error("--output is required (expected -o OUT.safetensors)");
    }
    run_quantize(*args);
  });
}

}  // namespace lucidq::cli
