// Guard rails of `lucidq quantize`: flags the chosen job would ignore, an output name that
// disagrees with the format, and plans that look like mistakes (warnings, errors with --strict).
#include "quantize_checks.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

// The flags only a lucidq checkpoint uses, and only GGUF output uses.
constexpr const char* checkpoint_flags[] = {"--scheme", "--dtype",     "--group-size",
                                            "--axis",   "--method",    "--calibration",
                                            "--damp",   "--act-order", "--include"};
constexpr const char* gguf_flags[] = {"--imatrix",
                                      "--pure",
                                      "--output-tensor-type",
                                      "--token-embedding-type",
                                      "--leave-output-tensor",
                                      "--allow-requantize",
                                      "--metadata"};

std::string lower_extension(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

// The warning, or with `strict` the error.
void warn(const std::string& message, bool strict) {
  if (strict) throw Q::Error(message + " (an error with --strict)");
  fmt::print(stderr, "lucidq: warning: {}\n", message);
}

}  // namespace

std::string QuantizeJob::describe() const {
  return fmt::format("{}, chosen by {}", gguf ? "GGUF output" : "a lucidq checkpoint", chosen_by);
}

QuantizeJob quantize_job(const std::string& input, const std::string& output,
                         const std::string& type) {
  if (!type.empty()) return {true, "--type " + type};
  const std::string extension = lower_extension(output);
  if (extension == ".gguf") return {true, "the output suffix .gguf"};
  if (Q::is_gguf_path(input)) return {true, "the GGUF input"};
  if (output.empty()) return {false, "an input that is not GGUF"};
  return {false,
          extension.empty() ? "an output name without .gguf" : "the output suffix " + extension};
}

void check_quantize_flags(const CLI::App& cmd, const QuantizeJob& job, const std::string& output) {
  if (job.gguf) {
    for (const char* flag : checkpoint_flags) {
      if (cmd.count(flag) == 0) continue;
      throw Q::Error(fmt::format(
          "{} is for lucidq checkpoints; this run writes {} (expected --type PRESET, "
          "--output-tensor-type / --token-embedding-type, or --recipe rules with \"ggml_type\" "
          "to choose ggml types; or -o OUT.safetensors without --type for a lucidq checkpoint)",
          flag, job.describe()));
    }
    if (!output.empty() && lower_extension(output) != ".gguf") {
      throw Q::Error(fmt::format(
          "-o {}: this run writes {} (expected -o OUT.gguf; a lucidq checkpoint needs a "
          "safetensors input and no --type; `lucidq dequantize` turns GGUF into safetensors)",
          output, job.describe()));
    }
    return;
  }
  for (const char* flag : gguf_flags) {
    if (cmd.count(flag) == 0) continue;
    const std::string alternative =
        std::string(flag) == "--imatrix"
            ? "; importance-weighted lucidq scales: --method weighted-rtn --calibration FILE"
            : "";
    throw Q::Error(
        fmt::format("{} is for GGUF output; this run writes {} (expected -o OUT.gguf "
                    "or --type PRESET for llama.cpp{})",
                    flag, job.describe(), alternative));
  }
}

void check_patterns_match(const Q::QuantRecipe& recipe, const std::vector<std::string>& names,
                          const std::string& file, bool strict) {
  for (const Q::RecipeRule& rule : recipe.rules) {
    for (const std::string& pattern : rule.patterns) {
      const bool matched = std::any_of(names.begin(), names.end(), [&](const std::string& name) {
        return Q::glob_match(pattern, name);
      });
      if (matched) continue;
      warn(fmt::format("{}: pattern '{}' matches no tensor of {} (expected a name such as '{}'; "
                       "--dry-run lists them)",
                       rule.origin, pattern, file, names.empty() ? "" : names.front()),
           strict);
    }
  }
}

void check_plan(const std::vector<Q::TensorPlan>& plan, const std::string& file, bool strict) {
  for (const Q::TensorPlan& p : plan) {
    if (!p.settings) continue;
    const Q::QuantSettings& s = *p.settings;
    const std::string tensor =
        fmt::format("{}: tensor \"{}\" {}", file, p.entry.name, Q::to_string(p.entry.shape));
    if (p.entry.shape.size() < 2) {
      warn(fmt::format("{}: {} quantizes a 1-D tensor (a bias or norm; expected \"min_ndim\": 2 "
                       "in the rule, or --exclude, to keep it as it is)",
                       tensor, p.reason),
           strict);
    }
    const Q::QuantizedTensorLayout layout{p.entry.name, p.entry.shape, p.entry.type, s};
    if (layout.nbytes() >= p.entry.nbytes()) {
      warn(fmt::format("{}: {} makes it {} bytes from {} (expected fewer: its scales and zero "
                       "points outweigh the smaller codes; keep it with --exclude)",
                       tensor, p.reason, layout.nbytes(), p.entry.nbytes()),
           strict);
    }
    if (s.group_size > 0 && !p.entry.shape.empty()) {
      const std::int64_t length = p.entry.shape[static_cast<std::size_t>(s.axis)];
      if (length % s.group_size != 0) {
        const std::string what =
            s.group_size > length
                ? fmt::format("is longer than its {} elements along axis {}: one group of {}",
                              length, s.axis, length)
                : fmt::format("does not divide its {} elements along axis {}: a last group of {}",
                              length, s.axis, length % s.group_size);
        warn(fmt::format("{}: {}: group size {} {} (expected a divisor of {})", tensor, p.reason,
                         s.group_size, what, length),
             strict);
      }
    }
  }
}

std::string quantize_parse_hint(const CLI::App& cmd, const std::vector<std::string>& extras) {
  if (extras.empty()) return "";
  const CLI::Option* input = cmd.get_option_no_throw("input");
  const std::string in = input != nullptr && input->count() > 0 ? input->results().front() : "IN";
  const std::string out = extras.front();
  const std::string type = extras.size() > 1 ? extras[1] : "PRESET";
  return fmt::format(
      "llama-quantize's `IN OUT TYPE` is spelled with flags here: lucidq quantize {} -o {} "
      "--type {}",
      in, out, type);
}

}  // namespace lucidq::cli
