// The GGUF side of `lucidq quantize`, `inspect` and `dequantize` (llama.cpp's format).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace lucidq::cli {

/// The llama-quantize flags of `lucidq quantize` (added by add_gguf_quantize_flags).
struct GgufQuantizeFlags {
  std::string type;  ///< --type PRESET
  std::string imatrix;
  std::string output_tensor_type;
  std::string token_embedding_type;
  std::vector<std::string> metadata;  ///< --metadata KEY=TYPE:VALUE
  bool pure = false;
  bool leave_output_tensor = false;
  bool allow_requantize = false;
};

/// Adds --type, --imatrix, --pure, --output-tensor-type, --token-embedding-type,
/// --leave-output-tensor, --allow-requantize and --metadata to `cmd`.
void add_gguf_quantize_flags(CLI::App& cmd, GgufQuantizeFlags& flags);

/// What `lucidq quantize` needs for a GGUF job besides the flags.
struct GgufQuantizeRun {
  std::string input;
  std::string output;
  std::string recipe;
  std::vector<std::string> exclude;
  std::string json;
  std::string plots;
  bool strict = false;
  bool force = false;
  bool quiet = false;
  bool dry_run = false;
};

/// Runs the GGUF job (or prints its plan with --dry-run) and prints the report.
void run_gguf_quantize(const GgufQuantizeRun& run, const GgufQuantizeFlags& flags);

/// `lucidq inspect` of a GGUF file: metadata and tensors, as a table or JSON.
void inspect_gguf(const std::string& path, bool json);
/// `lucidq dequantize` of a GGUF file: every tensor as float32 into safetensors.
void dequantize_gguf_file(const std::string& input, const std::string& output, bool force,
                          bool quiet);

}  // namespace lucidq::cli
