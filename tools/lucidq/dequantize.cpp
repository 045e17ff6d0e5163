// `lucidq dequantize`: a lucidq checkpoint turned back into plain float tensors.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "gguf_commands.hpp"
#include "interrupts.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf.hpp"
#include "output_files.hpp"
#include "progress.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

struct DequantizeArgs {
  std::string input;
  std::string output;
  std::string dtype = "float32";
  bool force = false;
  bool quiet = false;
};

std::optional<Q::ScalarType> dtype_from(const std::string& text) {
  if (text == "original") return std::nullopt;
  if (text == "float32" || text == "f32") return Q::ScalarType::float32;
  if (text == "bfloat16" || text == "bf16") return Q::ScalarType::bfloat16;
  if (text == "float16" || text == "f16") return Q::ScalarType::float16;
  throw Q::Error("--dtype = \"" + text + "\" (expected float32, bfloat16, float16 or original)");
}

void run_dequantize(const DequantizeArgs& a) {
  if (Q::is_gguf_path(a.input)) {
    if (a.dtype != "float32" && a.dtype != "f32") {
      throw Q::Error("--dtype = \"" + a.dtype +
                     "\" for a GGUF input (expected float32: GGUF "
                     "tensors are decoded to float32)");
    }
    dequantize_gguf_file(a.input, a.output, a.force, a.quiet);
    return;
  }
  Q::DequantizeCheckpointOptions options;
  options.dtype = dtype_from(a.dtype);
  options.overwrite = a.force;
  check_new_output(a.output, a.force);
  ProgressBar bar(!a.quiet);
  options.progress = bar.callback();
  const Q::DequantizeSummary summary = [&] {
    const JobOutput job(a.output);
    return Q::dequantize_checkpoint(a.input, a.output, options);
  }();
  bar.finish();
  if (a.quiet) return;
  fmt::print("dequantized {} tensor{} to {}, copied {} as they were\n", summary.dequantized,
             summary.dequantized == 1 ? "" : "s",
             a.dtype == "original" ? "their original dtypes" : a.dtype, summary.copied);
  fmt::print("wrote {} ({} -> {})\n", a.output, Q::format_bytes(summary.input_bytes),
             Q::format_bytes(summary.output_bytes));
}

constexpr const char* footer =
    "Each quantized tensor W becomes W = scale * (code - zero_point) with its original shape;\n"
    "its companions W.scale and W.zero_point are dropped. Tensors that were kept as they were,\n"
    "and the file's own metadata, are copied unchanged. A plain safetensors file is copied.\n"
    "\n"
    "Examples:\n"
    "  lucidq dequantize model.q8.safetensors -o model.f32.safetensors\n"
    "  lucidq dequantize model.q4.safetensors -o model.bf16.safetensors --dtype bfloat16\n"
    "  lucidq dequantize model.q4.safetensors -o back.safetensors --dtype original\n"
    "  lucidq dequantize model-Q4_K_M.gguf -o model.f32.safetensors   (ggml's decode)";

}  // namespace

void add_dequantize_command(CLI::App& app) {
  auto args = std::make_shared<DequantizeArgs>();
  CLI::App* cmd =
      app.add_subcommand("dequantize", "Turn a lucidq checkpoint back into float tensors");
  cmd->footer(footer);
  cmd->add_option("input", args->input, "The lucidq checkpoint to read")
      ->required()
      ->type_name("Q.safetensors");
  cmd->add_option("-o,--output", args->output, "The safetensors file to write")
      ->required()
      ->type_name("OUT.safetensors");
  cmd->add_option("--dtype", args->dtype,
                  "float32, bfloat16, float16, or original (each tensor's dtype before "
                  "quantization)")
      ->capture_default_str();
  cmd->add_flag("-f,--force", args->force, "Replace an existing output file");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress bar and no summary");
  cmd->callback([args] { run_dequantize(*args); });
}

}  // namespace lucidq::cli
