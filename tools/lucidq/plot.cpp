// `lucidq plot`: one tensor of a checkpoint quantized and drawn (the notes' error heatmaps).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "commands.hpp"
#include "interrupts.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/plot.hpp"
#include "lucid/quantization/quantize.hpp"
#include "output_files.hpp"
#include "plots.hpp"
#include "settings_flags.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

struct PlotArgs {
  std::string input;
  std::string tensor;
  std::string output;
  std::string report;
  std::string rows;
  std::string cols;
  std::shared_ptr<SettingsFlags> flags = std::make_shared<SettingsFlags>();
  bool force = false;
};

void run_plot(const PlotArgs& a) {
  const Q::QuantSettings requested = a.flags->settings();
  Q::PlotOptions options;
  if (!a.rows.empty()) options.rows = Q::parse_slice(a.rows, "--rows");
  if (!a.cols.empty()) options.cols = Q::parse_slice(a.cols, "--cols");
  options.overwrite = a.force;
  check_new_output(a.output, a.force);
  if (!a.report.empty()) check_new_output(a.report, a.force);

  const auto file = Q::SafetensorsFile::open(a.input);
  if (file.metadata().contains(std::string(Q::checkpoint_format_key))) {
    throw Q::Error(a.input +
                   ": is a lucidq checkpoint; plot needs the float original (pass the "
                   "unquantized file; --scheme / --dtype / --axis / --group-size choose the "
                   "quantization)");
  }
  const Q::TensorView view = file.view(a.tensor);
  if (!Q::is_floating_point(view.type)) {
    throw Q::Error(a.input + ": tensor \"" + a.tensor + "\" is " +
                   std::string(Q::to_safetensors_name(view.type)) +
                   " (expected a floating-point tensor)");
  }
  Q::Tensor narrowed;  // float64 is rounded to float32 first, as quantize does
  Q::TensorView x = view;
  if (view.type == Q::ScalarType::float64) {
    narrowed = Q::Tensor::from_floats(Q::to_float32(view, "tensor"), view.shape);
    x = narrowed.view();
  }
  Q::QuantSettings s;
  try {
    s = Q::resolve_settings(requested, x.shape);
  } catch (const Q::Error& e) {
    throw Q::Error(a.input + ": tensor \"" + a.tensor + "\": " + e.what());
  }
  const Q::QuantizedTensor q =
      s.group_size > 0 ? Q::quantize_per_group(x, s.qscheme, s.qdtype, s.axis, s.group_size)
                       : Q::quantize(x, s.qscheme, s.qdtype, s.axis);
  file.check_intact();
  free_font_caches_at_exit();
  const JobOutput job(a.output);
  Q::plot_quantization_errors(x, q, a.output, options);
  fmt::print("wrote {} ({} {} as {})\n", a.output, a.tensor, Q::to_string(x.shape), Q::describe(s));
  if (!a.report.empty()) {
    Q::plot_tensor_report(x, q, a.report, options);
    fmt::print("wrote {} (distribution and per-channel error)\n", a.report);
  }
}

constexpr const char* footer =
    "Quantizes one tensor of a float checkpoint with the given settings (those of `lucidq\n"
    "quantize`) and draws four heatmaps side by side: the original, the integer codes, the\n"
    "dequantized tensor and |error|. Rank > 2 tensors are viewed as [rows, last axis]; large\n"
    "slices are averaged into at most 256 x 256 cells. PNG or SVG by the file extension.\n"
    "\n"
    "Examples:\n"
    "  lucidq plot model.safetensors --tensor layers.0.mlp.up_proj.weight -o up.png\n"
    "  lucidq plot model.safetensors --tensor fc.weight --rows 0:16 --cols 0:16 -o corner.svg\n"
    "  lucidq plot model.safetensors --tensor fc.weight --dtype qint4 --group-size 32 \\\n"
    "      -o fc.q4.png --report fc.q4.report.png";

}  // namespace

void add_plot_command(CLI::App& app) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "Quantize one tensor and plot original, codes, dequantized and error");
  cmd->footer(footer);
  cmd->add_option("input", args->input, "The float safetensors file")
      ->required()
      ->type_name("IN.safetensors");
  cmd->add_option("--tensor", args->tensor, "The tensor to plot")->required()->type_name("NAME");
  cmd->add_option("-o,--output", args->output, "The figure to write (.png or .svg)")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--report", args->report,
                  "Also draw the distribution report (histogram, clipping range, per-channel "
                  "error) to FILE")
      ->type_name("FILE");
  cmd->add_option("--rows", args->rows, "Rows to draw, a:b (half-open)")->type_name("A:B");
  cmd->add_option("--cols", args->cols, "Columns to draw, c:d (half-open)")->type_name("C:D");
  add_settings_flags(*cmd, args->flags);
  cmd->add_flag("-f,--force", args->force, "Replace existing output files");
  cmd->callback([args] { run_plot(*args); });
}

}  // namespace lucidq::cli
