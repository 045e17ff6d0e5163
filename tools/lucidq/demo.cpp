// `lucidq demo`: the "Quantization in Depth" notes on linear quantization replayed section by
// section, every number computed by the public lucid::quantization API.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "demo_checkpoint.hpp"
#include "lucid/quantization/metrics.hpp"
#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/qscheme.hpp"
#include "lucid/quantization/quantize.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/version.hpp"
#include "print.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

// ---------------------------------------------------------------------------
// Shared pieces
// ---------------------------------------------------------------------------

// One quantize / dequantize round trip and its error, all from the API.
struct RoundTrip {
  Q::QuantizedTensor q;
  Q::Tensor x_hat;
  std::vector<std::int32_t> codes;
  double mse = 0;  // Q::quantization_error, the notes' (x_hat - x).square().mean()
  Q::ErrorMetrics metrics;
};

RoundTrip round_trip(const Q::Tensor& x, const Q::QParams& qparams) {
  RoundTrip r;
  r.q = Q::quantize(x, qparams);
  r.x_hat = Q::dequantize(r.q);
  r.codes = r.q.int_repr();
  r.mse = Q::quantization_error(x, r.x_hat);
  r.metrics = Q::error_metrics(x, r.q);
  return r;
}

// The notes' 3x3 test tensor (sections 1 and 2).
Q::Tensor notes_tensor_3x3() {
  return Q::Tensor::from_floats(
      {191.6f, -13.5f, 728.6f, 92.14f, 295.5f, -184.0f, 0.0f, 684.6f, 245.5f}, {3, 3});
}

// The notes' 4x4 torch.randn test tensor (section 3).
Q::Tensor notes_tensor_4x4() {
  return Q::Tensor::from_floats({-1.1284f, 2.3800f, -2.2940f, 0.6971f,    //
                                 -0.4221f, -0.4675f, -0.6180f, -1.4234f,  //
                                 0.0705f, 1.3060f, -1.2461f, 0.2461f,     //
                                 -2.6319f, 1.3008f, 0.9376f, 0.7069f},
                                {4, 4});
}

// Row magnitudes of the section-4 weight: four output channels, 200x apart.
constexpr std::array<float, 4> weight_row_magnitude{2.0f, 0.5f, 0.05f, 0.01f};

// A deterministic 4x8 "weight": W[r][c] = m_r * g_c * sin(0.7 + 1.3 c + 2.1 r),
// with g_c = 1 for the first four columns and 0.25 for the last four, so rows
// differ in magnitude (per-channel helps) and so do the halves of a row
// (per-group helps further).
Q::Tensor demo_weight() {
  std::vector<float> w;
  for (std::size_t r = 0; r < weight_row_magnitude.size(); ++r) {
    for (int c = 0; c < 8; ++c) {
      const float half = c < 4 ? 1.0f : 0.25f;
      const float phase = 0.7f + 1.3f * static_cast<float>(c) + 2.1f * static_cast<float>(r);
      w.push_back(weight_row_magnitude[r] * half * std::sin(phase));
    }
  }
  return Q::Tensor::from_floats(std::move(w), {4, 8});
}

// Elementwise x_hat - x and its square, for display only (the figures that
// matter come from Q::quantization_error / Q::error_metrics).
std::vector<float> difference(const Q::Tensor& x_hat, const Q::Tensor& x) {
  std::vector<float> d;
  for (std::size_t i = 0; i < x.floats().size(); ++i) {
    d.push_back(x_hat.floats()[i] - x.floats()[i]);
  }
  return d;
}

std::vector<std::string> squares(std::span<const float> d) {
  std::vector<std::string> cells;
  for (const float v : d) {
    cells.push_back(format_fixed(static_cast<double>(v) * v, 4));
  }
  return cells;
}

// Index of the element with the largest magnitude (display logic only).
std::size_t argmax_abs(std::span<const float> v) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (std::abs(v[i]) > std::abs(v[best])) best = i;
  }
  return best;
}

void print_text(std::FILE* out, std::string_view text) {
  fmt::print(out, "{}\n", wrap(text));
}

void print_tensor(std::FILE* out, std::string_view label, const std::string& tensor) {
  fmt::print(out, "{}\n{}\n", label, tensor);
}

// "qint8 [-128, 127]", or "qint8[-127,127]" when the name already shows the range.
std::string grid_name(const Q::QDtype& d) {
  if (d.has_custom_range()) return d.name();
  return fmt::format("{} [{}, {}]", d.name(), d.quant_min(), d.quant_max());
}

// ---------------------------------------------------------------------------
// Section 1: a hand-picked scale and zero point
// ---------------------------------------------------------------------------

void section_fixed_qparams(std::FILE* out) {
  const Q::Tensor x = notes_tensor_3x3();
  const Q::QParams qp = Q::QParams::per_tensor(3.5f, -70, Q::qint8);
  const float s = qp.scale[0];
  const std::int32_t z = qp.zero_point[0];
  print_text(out,
             "Linear quantization maps a real value x to an integer code q, and q back to an "
             "approximation x_hat of x:\n"
             "    q     = clamp(round(x / s) + z, q_min, q_max)\n"
             "    x_hat = s * (q - z)\n"
             "with a scale s > 0 and an integer zero point z (round ties to even). The notes "
             "quantize a 3x3 tensor to qint8, q in [-128, 127], with a hand-picked s = 3.5 and "
             "z = -70.");
  fmt::print(out, "  qparams: {}, scale = {}, zero point = {}\n\n", Q::describe(qp),
             format_scale(s), z);

  const RoundTrip r = round_trip(x, qp);
  const std::vector<float> error = difference(r.x_hat, x);
  print_tensor(out, "original x:", format_tensor(x.floats(), x.shape(), 4));
  print_tensor(
      out, "codes q = clamp(round(x / 3.5) - 70, -128, 127):", format_tensor(r.codes, x.shape()));
  print_tensor(
      out, "dequantized x_hat = 3.5 * (q + 70):", format_tensor(r.x_hat.floats(), x.shape(), 4));
  print_tensor(out, "error x_hat - x:", format_tensor(error, x.shape(), 4));
  const std::vector<std::string> squared = squares(error);
  print_tensor(out, "squared error (x_hat - x)^2:", format_tensor(squared, x.shape()));
  fmt::print(out, "  MSE = mean((x_hat - x)^2) = {}\n\n", format_error(r.mse));

  // Which codes were clamped: compare with the unclamped code on a 32-bit grid.
  for (std::size_t i = 0; i < r.codes.size(); ++i) {
    const float xi = x.floats()[i];
    const std::int32_t unclamped = Q::quantize_value(xi, s, z, Q::qint32);
    if (unclamped == r.codes[i]) continue;
    print_text(
        out,
        fmt::format("Saturation: {} / {} + ({}) rounds to code {}, beyond q_max = {}, so it is "
                    "clamped to {} and comes back as {}: an error of {}. That single squared "
                    "error, {}, dominates the MSE; every code that was not clamped is off by at "
                    "most half a step, s / 2.",
                    format_fixed(xi, 1), format_scale(s), z, unclamped, Q::qint8.quant_max(),
                    r.codes[i], format_fixed(r.x_hat.floats()[i], 1), format_fixed(error[i], 1),
                    squared[i]));
  }
  fmt::print(out, "  saturated codes: {} of {} elements ({})\n\n",
             std::lround(r.metrics.fraction_saturated * static_cast<double>(r.metrics.count)),
             r.metrics.count, format_percent(r.metrics.fraction_saturated));
}

// ---------------------------------------------------------------------------
// Section 2: scale and zero point derived from the range
// ---------------------------------------------------------------------------

void section_derived_qparams(std::FILE* out) {
  const Q::Tensor x = notes_tensor_3x3();
  print_text(out,
             "Instead of guessing, map the observed range [r_min, r_max] onto the whole grid "
             "[q_min, q_max]. From r_min = s (q_min - z) and r_max = s (q_max - z):\n"
             "    s = (r_max - r_min) / (q_max - q_min)\n"
             "    z = clamp(round(q_min - r_min / s), q_min, q_max)\n"
             "This is the notes' get_q_scale_and_zero_point, and calculate_qparams with "
             "per_tensor_affine (which also widens the range to include 0, so that real 0 is "
             "exactly a code; this tensor already straddles 0).");

  const Q::RangeStats range = Q::observe_range(x, Q::per_tensor_affine);
  const float r_min = range.min[0];
  const float r_max = range.max[0];
  const Q::QParams qp = Q::calculate_qparams(r_min, r_max, Q::per_tensor_affine, Q::qint8);
  const Q::QParams chosen = Q::choose_qparams(x, Q::per_tensor_affine, Q::qint8);
  const float s = qp.scale[0];
  const std::int32_t z = qp.zero_point[0];
  const auto qmin = Q::qint8.quant_min();
  const auto qmax = Q::qint8.quant_max();

  fmt::print(out, "  observe_range:      r_min = {}, r_max = {}\n", format_fixed(r_min, 4),
             format_fixed(r_max, 4));
  fmt::print(out, "  calculate_qparams:  s = ({} - ({})) / ({} - ({})) = {}\n",
             format_fixed(r_max, 1), format_fixed(r_min, 1), qmax, qmin, format_scale(s));
  fmt::print(out, "                      z = round({} - ({}) / {}) = {}\n", qmin,
             format_fixed(r_min, 1), format_scale(s), z);
  fmt::print(out, "  choose_qparams (observe + calculate in one call): s = {}, z = {}\n",
             format_scale(chosen.scale[0]), chosen.zero_point[0]);
  fmt::print(out,
             "  (the notes, in float64: s = 3.578823433670343, z = -77; lucidq computes in "
             "float32)\n\n");

  const RoundTrip r = round_trip(x, qp);
  print_tensor(
      out,
      fmt::format("codes q = clamp(round(x / {}) + ({}), {}, {}):", format_scale(s), z, qmin, qmax),
      format_tensor(r.codes, x.shape()));
  print_tensor(out,
               "dequantized x_hat = s * (q - z):", format_tensor(r.x_hat.floats(), x.shape(), 4));
  print_tensor(out, "error x_hat - x:", format_tensor(difference(r.x_hat, x), x.shape(), 4));
  fmt::print(out, "  MSE = mean((x_hat - x)^2) = {}\n", format_error(r.mse));
  fmt::print(out, "  saturated codes: {} of {} elements ({})\n\n",
             std::lround(r.metrics.fraction_saturated * static_cast<double>(r.metrics.count)),
             r.metrics.count, format_percent(r.metrics.fraction_saturated));

  const RoundTrip fixed = round_trip(x, Q::QParams::per_tensor(3.5f, -70, Q::qint8));
  print_text(
      out, fmt::format("The derived step is slightly coarser than the hand-picked one ({} vs 3.5), "
                       "but r_min and r_max now land on the ends of the grid instead of past them, "
                       "so nothing is clamped and every error is at most s / 2: the MSE drops from "
                       "{} to {}.",
                       format_scale(s), format_error(fixed.mse), format_error(r.mse)));
}

// ---------------------------------------------------------------------------
// Section 3: symmetric scale, two conventions
// ---------------------------------------------------------------------------

void section_symmetric(std::FILE* out) {
  const Q::Tensor x = notes_tensor_4x4();
  print_text(out,
             "Symmetric mode pins the zero point (z = 0 on a signed grid) and maps "
             "[-r_max, r_max] onto the grid, with r_max = max|x|. There is no zero point to store, "
             "and an integer matmul needs no zero-point correction terms, which is why weights are "
             "usually quantized this way. Two conventions for the scale are in use:\n"
             "    s = r_max / ((q_max - q_min) / 2) = r_max / 127.5   on qint8 [-128, 127]\n"
             "    s = r_max / q_max                 = r_max / 127     on qint8 [-127, 127]\n"
             "The first is Lucid's (lucid.quantization) and PyTorch's observers': "
             "per_tensor_symmetric on qint8. The second is the notes' get_q_scale_symmetric (and "
             "ONNX Runtime's and TensorRT's): per_tensor_symmetric on the narrow grid "
             "qint8.narrow_range().");
  print_tensor(out,
               "the notes' test tensor x (torch.randn):", format_tensor(x.floats(), x.shape(), 4));

  struct Convention {
    std::string label;
    Q::QDtype qdtype;
  };
  const std::array<Convention, 2> conventions{{
      {"max|x| / 127.5", Q::qint8},
      {"max|x| / 127", Q::qint8.narrow_range()},
  }};
  const std::size_t peak = argmax_abs(x.floats());

  Table table({{"convention", Align::left},
               {"grid", Align::left},
               {"scale"},
               {"code of max|x|"},
               {"MSE"},
               {"SQNR dB"}});
  std::vector<RoundTrip> results;
  for (std::size_t i = 0; i < conventions.size(); ++i) {
    const Convention& c = conventions[i];
    const Q::QParams qp = Q::choose_qparams(x, Q::per_tensor_symmetric, c.qdtype);
    const RoundTrip r = round_trip(x, qp);
    const char letter = static_cast<char>('a' + i);
    fmt::print(out, "{}) s = {} on {}: scale = {}, zero point = {}\n", letter, c.label,
               grid_name(c.qdtype), format_scale(qp.scale[0]), qp.zero_point[0]);
    print_tensor(out, "   codes:", format_tensor(r.codes, x.shape(), "     "));
    fmt::print(out, "   MSE = {}\n\n", format_error(r.mse));
    table.add_row({c.label, grid_name(c.qdtype), format_scale(qp.scale[0]),
                   fmt::format("{}", r.codes[peak]), format_error(r.mse),
                   format_db(r.metrics.sqnr_db)});
    results.push_back(r);
  }
  fmt::print(out, "{}\n", table.str());
  print_text(out, fmt::format("The notes' get_q_scale_symmetric(test_tensor) = "
                              "0.020723763413316623 saw the unrounded torch.randn values "
                              "(max|x| = 2.63192 or so); their 4-decimal printout, used here, "
                              "gives {} / 127 = {}.",
                              format_fixed(std::abs(x.floats()[peak]), 4),
                              format_scale(results[1].q.qparams().scale[0])));

  const bool full_wins = results[0].mse < results[1].mse;
  print_text(
      out,
      fmt::format("Dividing by 127.5 uses the whole grid, so the step is 0.4% finer. The price "
                  "is asymmetry: -128 is a code but +128 is not, so a positive value at "
                  "+max|x| would round past 127 and be clamped (here max|x| = {} is negative "
                  "and lands on code {}). The narrow grid gives up -128 so that x and -x always "
                  "get opposite codes, which is what symmetric int8 GEMM kernels and the "
                  "notes assume. On this tensor the {} grid has the lower MSE ({} vs {}); "
                  "either way the difference is small next to the choice of granularity below.",
                  format_fixed(x.floats()[peak], 4), results[0].codes[peak],
                  full_wins ? "/127.5" : "/127",
                  format_error(full_wins ? results[0].mse : results[1].mse),
                  format_error(full_wins ? results[1].mse : results[0].mse)));
}

// ---------------------------------------------------------------------------
// Section 4: granularity
// ---------------------------------------------------------------------------

void section_granularity(std::FILE* out) {
  const Q::Tensor w = demo_weight();
  const auto rows = static_cast<std::size_t>(w.shape()[0]);
  const auto cols = static_cast<std::size_t>(w.shape()[1]);
  constexpr std::int64_t group_size = 4;
  print_text(out,
             "One scale for a whole tensor has to reach its largest value, so channels whose "
             "weights are small get only a handful of codes. Per-channel quantization gives each "
             "output channel (a row, axis 0) its own scale; per-group goes further and gives each "
             "block of group_size consecutive values along a row (axis 1) its own scale, as 4-bit "
             "LLM formats do. Both cost a few more parameters. The 4x8 weight below is "
             "deterministic, with rows 200x apart in magnitude and a quieter second half in "
             "every row:\n"
             "    W[r][c] = m_r * g_c * sin(0.7 + 1.3 c + 2.1 r)\n"
             "    m = (2, 0.5, 0.05, 0.01),  g_c = 1 for c < 4 and 0.25 for c >= 4\n"
             "Each granularity uses symmetric qint8, s = max|w| / 127.5 over its tensor, "
             "channel or group.");
  print_tensor(out, "weight W (4 x 8):", format_tensor(w.floats(), w.shape(), 4));

  struct Granularity {
    std::string label;
    Q::QParams qparams;
  };
  const std::array<Granularity, 3> granularities{{
      {"per-tensor", Q::choose_qparams(w, Q::per_tensor_symmetric, Q::qint8)},
      {"per-channel (axis 0)", Q::choose_qparams(w, Q::per_channel_symmetric, Q::qint8, 0)},
      {fmt::format("per-group ({} along axis 1)", group_size),
       Q::choose_qparams(w, Q::per_channel_symmetric, Q::qint8, 1, group_size)},
  }};

  Table table({{"granularity", Align::left},
               {"channel"},
               {"max|w|"},
               {"scale(s)", Align::left},
               {"MSE"},
               {"SQNR dB"}});
  std::vector<RoundTrip> results;
  std::vector<std::vector<Q::ErrorMetrics>> per_channel;
  for (const Granularity& g : granularities) {
    const RoundTrip r = round_trip(w, g.qparams);
    const std::vector<Q::ErrorMetrics> channel = Q::error_metrics_per_channel(w, r.q, 0);
    // The scales of row `row`: the parameters are laid out row-major with
    // param_shape() [1] (per-tensor), [4] (per-channel, axis 0) or [4, 2]
    // (per-group along axis 1), so each row owns scale.size() / 4 of them.
    const bool shared = g.qparams.scale.size() == 1;
    const std::size_t per_row = shared ? 1 : g.qparams.scale.size() / rows;
    for (std::size_t row = 0; row < rows; ++row) {
      std::string scales;
      const std::size_t first = shared ? 0 : row * per_row;
      for (std::size_t k = 0; k < per_row; ++k) {
        if (k > 0) scales += ' ';
        scales += format_sci(g.qparams.scale[first + k]);
      }
      const std::span<const float> row_values = w.floats().subspan(row * cols, cols);
      table.add_row({row == 0 ? g.label : "", fmt::format("{}", row),
                     format_fixed(std::abs(row_values[argmax_abs(row_values)]), 4), scales,
                     format_error(channel[row].mse), format_db(channel[row].sqnr_db)});
    }
    table.add_row({fmt::format("  ({} scale{})", g.qparams.scale.size(),
                               g.qparams.scale.size() == 1 ? "" : "s"),
                   "all", "", "", format_error(r.metrics.mse), format_db(r.metrics.sqnr_db)});
    table.add_rule();
    results.push_back(r);
    per_channel.push_back(channel);
  }
  fmt::print(out, "{}\n", table.str());

  const std::size_t small = rows - 1;  // the row with the smallest magnitude
  auto row_codes = [&](const RoundTrip& r) {
    return format_tensor(std::span<const std::int32_t>(r.codes).subspan(small * cols, cols),
                         {static_cast<std::int64_t>(cols)}, "    ");
  };
  fmt::print(out, "codes of channel {} (m = {}):\n", small, weight_row_magnitude[small]);
  fmt::print(out, "  per-tensor:\n{}  per-channel:\n{}  per-group:\n{}\n", row_codes(results[0]),
             row_codes(results[1]), row_codes(results[2]));
  print_text(
      out,
      fmt::format(
          "With one scale sized for channel 0, channel {} uses only a few codes near 0 "
          "and keeps {} dB of SQNR; its own scale raises that to {} dB. Per-group "
          "also fits the quieter second half of each row ({} dB on channel {}, {} dB "
          "over the tensor, against {} per-channel and {} per-tensor). The cost is one "
          "float32 scale per channel or per group instead of one per tensor.",
          small, format_db(per_channel[0][small].sqnr_db), format_db(per_channel[1][small].sqnr_db),
          format_db(per_channel[2][small].sqnr_db), small, format_db(results[2].metrics.sqnr_db),
          format_db(results[1].metrics.sqnr_db), format_db(results[0].metrics.sqnr_db)));
}

// ---------------------------------------------------------------------------
// The section registry: add a section by writing a function and a row here.
// ---------------------------------------------------------------------------

struct Section {
  std::string_view name;
  std::string_view title;
  void (*run)(std::FILE* out);
};

constexpr std::array<Section, 4> sections{{
    {"fixed", "Quantize with a chosen scale and zero point", &section_fixed_qparams},
    {"derived", "Derive the scale and zero point from the data", &section_derived_qparams},
    {"symmetric", "Symmetric quantization: max|x|/127.5 or max|x|/127", &section_symmetric},
    {"granularity", "Per-tensor, per-channel and per-group scales", &section_granularity},
}};

// Runs the sections whose names are in `selected` (all when empty), in order.
void run_demo(std::FILE* out, const std::vector<std::string>& selected) {
  fmt::print(out, "{}\n",
             heading(fmt::format("lucidq {} demo: linear quantization, step by step", Q::version)));
  print_text(out,
             "A walk through the \"Quantization in Depth\" notes on linear quantization. "
             "Every number below is computed by the lucid::quantization C++ API; the notes' own "
             "figures are quoted for comparison.");
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const Section& section = sections[i];
    if (!selected.empty() &&
        std::find(selected.begin(), selected.end(), section.name) == selected.end()) {
      continue;
    }
    fmt::print(out, "{}\n", heading(fmt::format("{}. {}", i + 1, section.title), '-'));
    section.run(out);
  }
}

}  // namespace

void add_demo_command(CLI::App& app) {
  CLI::App* demo = app.add_subcommand(
      "demo", "Walk through the \"Quantization in Depth\" notes with real numbers");
  auto selected = std::make_shared<std::vector<std::string>>();
  std::vector<std::string> names;
  std::string footer = "Sections:\n";
  for (std::size_t i = 0; i < sections.size(); ++i) {
    names.emplace_back(sections[i].name);
    footer += fmt::format("  {}. {:<12} {}\n", i + 1, sections[i].name, sections[i].title);
  }
  names.emplace_back("checkpoint");
  footer += fmt::format("  {}. {:<12} {}\n", sections.size() + 1, "checkpoint",
                        "The main job: quantize a checkpoint (writes files into --out DIR)");
  footer +=
      "\nExamples:\n"
      "  lucidq demo                              all sections\n"
      "  lucidq demo -s symmetric -s granularity  two of them\n"
      "  lucidq demo -s checkpoint --out /tmp/q   the checkpoint job, files in /tmp/q";
  demo->footer(footer);
  demo->add_option("-s,--section", *selected, "Run only this section; repeat for several")
      ->type_name("NAME")
      ->check(CLI::IsMember(names));
  auto out_dir = std::make_shared<std::string>(default_demo_dir);
  demo->add_option("--out", *out_dir,
                   "Where the checkpoint section writes its files (a new or empty directory, or "
                   "one it made before: its files are replaced)")
      ->type_name("DIR")
      ->capture_default_str();
  demo->callback([selected, out_dir] {
    run_demo(stdout, *selected);
    if (selected->empty() ||
        std::find(selected->begin(), selected->end(), "checkpoint") != selected->end()) {
      run_checkpoint_demo(stdout, static_cast<int>(sections.size()) + 1, *out_dir);
    }
  });
}

}  // namespace lucidq::cli
