// `lucidq demo`, checkpoint section: the main job run end to end on a small synthetic model.
#include "demo_checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/error.hpp"
#include "plots.hpp"
#include "print.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

constexpr const char* marker_name = ".lucidq-demo";

// A small deterministic generator (splitmix64 and Box-Muller), so the model is the same
// bytes on every platform and standard library.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  double uniform() {  // in (0, 1]
    state_ += 0x9E3779B97F4A7C15u;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    z ^= z >> 31;
    return static_cast<double>((z >> 11) + 1) * 0x1.0p-53;
  }
  float normal() {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    return static_cast<float>(r * std::cos(6.283185307179586 * uniform()));
  }

 private:
  std::uint64_t state_;
};

enum class Kind { linear, embedding, bias, norm };

struct Spec {
  std::string name;
  Q::Shape shape;
  Kind kind;
};

// One llama decoder block at toy size, with llama's tensor names as GGUF files spell them:
// hidden 256, MLP 512, vocab 256, so every row is a multiple of 256 elements (the K-quants'
// super-block) and `lucidq quantize --type Q4_K_M` applies llama-quantize's mixture.
std::vector<Spec> model_specs() {
  const std::string layer = "blk.0.";
  return {{"token_embd.weight", {256, 256}, Kind::embedding},
          {layer + "attn_norm.weight", {256}, Kind::norm},
          {layer + "attn_q.weight", {256, 256}, Kind::linear},
          {layer + "attn_q.bias", {256}, Kind::bias},
          {layer + "attn_k.weight", {256, 256}, Kind::linear},
          {layer + "attn_v.weight", {256, 256}, Kind::linear},
          {layer + "attn_output.weight", {256, 256}, Kind::linear},
          {layer + "ffn_norm.weight", {256}, Kind::norm},
          {layer + "ffn_gate.weight", {512, 256}, Kind::linear},
          {layer + "ffn_up.weight", {512, 256}, Kind::linear},
          {layer + "ffn_down.weight", {256, 512}, Kind::linear},
          {"output_norm.weight", {256}, Kind::norm},
          {"output.weight", {256, 256}, Kind::linear}};
}

// The values of one tensor. Linear weights: rows (output channels) whose magnitudes spread
// over a factor of 20, two input features 6x louder than the rest (as LLM outlier features),
// and one element in 500 a 10x outlier.
std::vector<float> values_of(const Spec& spec, Random& rng) {
  const std::int64_t rows = spec.shape[0];
  const std::int64_t cols = spec.shape.size() > 1 ? spec.shape[1] : 1;
  std::vector<float> v;
  v.reserve(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto magnitude = static_cast<float>(0.02 * std::exp(1.5 * (2 * rng.uniform() - 1)));
    for (std::int64_t c = 0; c < cols; ++c) {
      const float noise = rng.normal();
      switch (spec.kind) {
        case Kind::linear: {
          const float feature = (c == 7 || c == 2 * cols / 3) ? 6.0f : 1.0f;
          const float outlier = rng.uniform() < 0.002 ? 10.0f : 1.0f;
          v.push_back(magnitude * feature * outlier * noise);
          break;
        }
        case Kind::embedding:
          v.push_back(0.02f * noise);
          break;
        case Kind::bias:
          v.push_back(0.01f * noise);
          break;
        case Kind::norm:
          v.push_back(1.0f + 0.05f * noise);
          break;
      }
    }
  }
  return v;
}

// Writes the bfloat16 model to `path`; returns its tensor count.
std::size_t write_model(const std::filesystem::path& path) {
  Random rng(20261130);
  std::vector<Q::Tensor> tensors;
  std::vector<std::pair<std::string, Q::TensorView>> views;
  const std::vector<Spec> specs = model_specs();
  for (const Spec& spec : specs) {
    Q::Tensor t(Q::ScalarType::bfloat16, spec.shape);
    const std::vector<float> values = values_of(spec, rng);
    std::transform(values.begin(), values.end(), t.data_as<std::uint16_t>(),
                   [](float x) { return Q::float_to_bfloat16(x); });
    tensors.push_back(std::move(t));
  }
  for (std::size_t i = 0; i < specs.size(); ++i)
    views.emplace_back(specs[i].name, tensors[i].view());
  Q::write_safetensors(path, views, {{"format", "pt"}, {"source", "lucidq demo (synthetic)"}},
                       /*overwrite=*/true);
  return specs.size();
}

// Creates `dir`, or accepts it when it is empty or a directory this demo made.
void prepare_directory(const std::filesystem::path& dir) {
  std::error_code error;
  if (std::filesystem::exists(dir, error)) {
    if (!std::filesystem::is_directory(dir, error)) {
      throw Q::Error(dir.string() +
                     ": exists and is not a directory (expected a directory for "
                     "the demo's files; choose another with --out DIR)");
    }
    if (!std::filesystem::exists(dir / marker_name, error) &&
        !std::filesystem::is_empty(dir, error)) {
      throw Q::Error(dir.string() +
                     ": exists and was not made by lucidq demo (expected a new or empty "
                     "directory; choose another with --out DIR)");
    }
  } else if (!std::filesystem::create_directories(dir, error) && error) {
    throw Q::Error(dir.string() + ": cannot create the directory (" + error.message() + ")");
  }
  std::ofstream marker(dir / marker_name, std::ios::trunc);
  marker << "Made by lucidq demo: running it again replaces the files here.\n";
  if (!marker) throw Q::Error((dir / marker_name).string() + ": cannot write the demo's marker");
}

// "19.1 to 23.4 dB" over the quantized tensors of `report`.
std::string sqnr_range(const Q::CheckpointReport& report) {
  double low = INFINITY, high = -INFINITY;
  for (const Q::TensorReport& t : report.tensors) {
    if (!t.settings) continue;
    low = std::min(low, t.metrics.sqnr_db);
    high = std::max(high, t.metrics.sqnr_db);
  }
  return fmt::format("{:.1f} to {:.1f} dB", low, high);
}

void print_command(std::FILE* out, const std::string& command) {
  fmt::print(out, "$ {}\n", command);
}

}  // namespace

void run_checkpoint_demo(std::FILE* out, int number, const std::filesystem::path& dir) {
  fmt::print(out, "{}\n",
             heading(fmt::format("{}. The main job: quantize a checkpoint", number), '-'));
  prepare_directory(dir);
  const auto model = dir / "model.safetensors";
  const std::size_t count = write_model(model);
  fmt::print(out, "{}\n",
             wrap(fmt::format(
                 "A model file at toy size but with a real layout: one llama decoder block "
                 "(attention and MLP Linear weights, a bias, three norms), an embedding and an "
                 "LM head under llama's GGUF tensor names, rows of 256 or 512, {} tensors in "
                 "bfloat16, written to {} ({}). The weight rows differ in magnitude "
                 "by up to 20x, two input features are 6x louder than the rest and one weight "
                 "in 500 is a 10x outlier, as in trained models.",
                 count, model.string(), Q::format_bytes(std::filesystem::file_size(model)))));

  const auto q8 = dir / "model.q8.safetensors";
  const auto q8_json = dir / "model.q8.json";
  const auto plots = dir / "plots";
  print_command(out, fmt::format("lucidq quantize {} -o {} --plots {} --json {}", model.string(),
                                 q8.string(), plots.string(), q8_json.string()));
  Q::QuantizeCheckpointOptions int8;
  int8.overwrite = true;
  std::vector<std::string> plotted;
  // Plots of three weights (each takes about 0.1 s; all nine would triple the demo's time).
  const TensorCallback writer = plot_writer(plots, /*force=*/true, {}, plotted);
  int8.on_tensor = [writer](std::string_view name, const Q::TensorView& x,
                            const Q::QuantizedTensor& q) {
    if (name == "blk.0.attn_v.weight" || name == "blk.0.ffn_up.weight" || name == "output.weight")
      writer(name, x, q);
  };
  const Q::CheckpointReport r8 = Q::quantize_checkpoint(model, q8, int8);
  Q::write_report_json(r8, q8_json, /*overwrite=*/true);
  fmt::print(out, "{}\n", Q::format_report(r8));

  const auto q4 = dir / "model.q4.safetensors";
  print_command(out, fmt::format("lucidq quantize {} -o {} --dtype qint4 --group-size 32",
                                 model.string(), q4.string()));
  Q::QuantizeCheckpointOptions int4;
  int4.overwrite = true;
  int4.recipe = Q::QuantRecipe{{Q::default_rule({Q::per_channel_symmetric, Q::qint4, -1, 32})}};
  const Q::CheckpointReport r4 = Q::quantize_checkpoint(model, q4, int4);
  fmt::print(out, "{}\n", Q::format_report(r4));

  fmt::print(out, "{}\n",
             wrap(fmt::format(
                 "The 2-D weights became integer codes plus one float32 scale per row (int8) or "
                 "per 32 inputs of a row (int4); the 1-D bias and norms stayed bfloat16. int8 "
                 "per channel keeps {} of SQNR at {:.2f}x smaller; int4 in groups of 32 gives "
                 "{:.2f}x for {}. The outlier features and single outliers widen their rows' "
                 "and groups' ranges; the plots show where the error lands.",
                 sqnr_range(r8), r8.compression_ratio(), r4.compression_ratio(), sqnr_range(r4))));
  fmt::print(out, "Files in {}:\n", dir.string());
  Table files({{"file", Align::left}, {"size", Align::right}, {"what", Align::left}});
  files.add_row({model.filename().string(), Q::format_bytes(std::filesystem::file_size(model)),
                 "the bfloat16 checkpoint"});
  files.add_row({q8.filename().string(), Q::format_bytes(std::filesystem::file_size(q8)),
                 "int8 per channel (docs/formats.md)"});
  files.add_row({q8_json.filename().string(), Q::format_bytes(std::filesystem::file_size(q8_json)),
                 "its report as JSON"});
  files.add_row({q4.filename().string(), Q::format_bytes(std::filesystem::file_size(q4)),
                 "int4, groups of 32"});
  files.add_row({"plots/", std::to_string(plotted.size()) + " PNG",
                 "attn_v, ffn_up, output (--plots draws all): NAME.errors.png, NAME.report.png"});
  fmt::print(out, "{}", files.str());
  fmt::print(out, "{}",
             wrap("NAME.errors.png: the original, the codes, the dequantized tensor and |error| "
                  "side by side; NAME.report.png: the histogram with the clipping range and the "
                  "error per channel.",
                  text_width, "  "));
  fmt::print(out, "\nNext, try:\n");
  for (const std::string& command :
       {fmt::format("lucidq inspect {}", q4.string()),
        fmt::format("lucidq dequantize {} -o {} --dtype bfloat16 --force", q4.string(),
                    (dir / "model.q4.bf16.safetensors").string()),
        fmt::format("lucidq plot {} --tensor blk.0.ffn_up.weight --rows 0:16 "
                    "--cols 0:16 --dtype qint4 --group-size 8 -o {} --force",
                    model.string(), (dir / "ffn_up.corner.png").string()),
        fmt::format("lucidq quantize {} -o {} --type Q4_K_M --force", model.string(),
                    (dir / "model-Q4_K_M.gguf").string())}) {
    fmt::print(out, "  {}\n", command);
  }
}

}  // namespace lucidq::cli
