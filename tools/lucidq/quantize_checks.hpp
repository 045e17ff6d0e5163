// Guard rails of `lucidq quantize`: flags the chosen job would ignore, an output name that
// disagrees with the format, and plans that look like mistakes (warnings, errors with --strict).
#pragma once

#include <string>
#include <vector>

#include "lucid/quantization/checkpoint.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace lucidq::cli {

/// Which job `lucidq quantize` runs and what chose it (for messages).
struct QuantizeJob {
  bool gguf = false;
  std::string chosen_by;  ///< "--type Q4_K_M", "the output suffix .gguf", "the GGUF input", ...

  /// "GGUF output, chosen by --type Q4_K_M" or "a lucidq checkpoint, chosen by the output
  /// suffix .safetensors".
  std::string describe() const;
};

/// The job for these arguments: GGUF when --type is given, the output ends in ".gguf" or the
/// input is a GGUF file; a lucidq checkpoint otherwise.
QuantizeJob quantize_job(const std::string& input, const std::string& output,
                         const std::string& type);

/// Throws lucid::quantization::Error naming the first flag given on `cmd`'s command line that
/// `job` does not use, and an output name whose suffix is not ".gguf" for a GGUF job.
void check_quantize_flags(const CLI::App& cmd, const QuantizeJob& job, const std::string& output);

/// Warns (on stderr, "lucidq: warning: ...") about rule patterns that match no tensor of
/// `names`, for `file`; with `strict` the first one is an Error instead.
void check_patterns_match(const lucid::quantization::QuantRecipe& recipe,
                          const std::vector<std::string>& names, const std::string& file,
                          bool strict);

/// Warns about planned tensors that are 1-D, would grow, or get a ragged last group; with
/// `strict` the first one is an Error instead.
void check_plan(const std::vector<lucid::quantization::TensorPlan>& plan, const std::string& file,
                bool strict);

/// A hint for the unexpected arguments `extras` of `lucidq quantize` (llama-quantize's
/// positional `IN OUT TYPE`), or "" when there is none.
std::string quantize_parse_hint(const CLI::App& cmd, const std::vector<std::string>& extras);

}  // namespace lucidq::cli
