// The "Quantization in Depth" notes' plot_quantization_errors figure: original, codes,
// dequantized and |error|.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/metrics.hpp"
#include "lucid/quantization/plot.hpp"
#include "lucid/quantization/quantize.hpp"
#include "plot/figure.hpp"
#include "plot/heatmap.hpp"

namespace lucid::quantization {
namespace {

using report::CellGrid;
using report::ColorScale;
using report::HeatmapPanel;
using report::HeatmapSpec;

constexpr std::int64_t kMaxCells = 256;    // per side, before blocks are averaged
constexpr std::int64_t kAnnotateMax = 16;  // per side, for value labels
constexpr double kMargin = 24;
constexpr double kPanelGap = 36;
constexpr double kHeaderGap = 18;
constexpr double kLegendLine = 28;
constexpr const char* kWhat = "plot_quantization_errors";

// The integer grid the codes live on.
struct CodeGrid {
  double qmin = 0;
  double qmax = 0;
  std::string title;    // "8-bit quantized codes"
  std::string details;  // "qint8 grid [−128, 127]"
};

// The figure's inputs, flattened row-major, all of `shape`.
struct Inputs {
  Shape shape;
  std::vector<float> original;
  std::vector<std::int32_t> codes;
  std::vector<float> dequantized;
  CodeGrid grid;
  std::string default_title = "Quantization errors";
  std::string qparams_details;                // "scale 3.5 · zero point −70"
  std::optional<ErrorMetrics> whole_metrics;  // with saturation, when qparams are known
};

std::string join(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!text.empty()) text += " \xc2\xb7 ";  // U+00B7 MIDDLE DOT
    text += part;
  }
  return text;
}

std::string block_note(const CellGrid& grid, const char* how) {
  if (!grid.reduced()) return {};
  return std::string("block ") + how + " " + std::to_string(grid.block_rows) + "\xc3\x97" +
         std::to_string(grid.block_cols);
}

std::string nonfinite_note(std::int64_t count) {
  return count > 0 ? std::to_string(count) + " NaN/Inf" : std::string();
}

CodeGrid code_grid(const QDtype& qdtype) {
  return {static_cast<double>(qdtype.quant_min()), static_cast<double>(qdtype.quant_max()),
          std::to_string(qdtype.bits()) + "-bit quantized codes",
          qdtype.name() + " grid [" +
              report::format_number(static_cast<double>(qdtype.quant_min()), 12) + ", " +
              report::format_number(static_cast<double>(qdtype.quant_max()), 12) + "]"};
}

// Min and max of the finite elements of `values` inside `window`, as "min a · max b".
std::string range_note(const std::vector<float>& values, std::int64_t cols,
                       const report::Window& window) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (std::int64_t r = window.row0; r < window.row0 + window.rows; ++r) {
    for (std::int64_t c = window.col0; c < window.col0 + window.cols; ++c) {
      const float v = values[static_cast<std::size_t>(r * cols + c)];
      if (!std::isfinite(v)) continue;
      lo = std::min<double>(lo, v);
      hi = std::max<double>(hi, v);
    }
  }
  if (lo > hi) return "no finite values";
  return "min " + report::format_number(lo) + " \xc2\xb7 max " + report::format_number(hi);
}

// The details line: shape, slice, parameters, metrics and the non-finite count.
std::string details_line(const Inputs& in, report::MatrixDims dims, const report::Window& window,
                         std::int64_t nonfinite) {
  std::string where = "shape " + to_string(in.shape);
  if (!window.covers(dims)) {
    where += ", rows " + std::to_string(window.row0) + ":" +
             std::to_string(window.row0 + window.rows) + ", cols " + std::to_string(window.col0) +
             ":" + std::to_string(window.col0 + window.cols);
  }
  ErrorMetrics m;
  if (window.covers(dims) && in.whole_metrics) {
    m = *in.whole_metrics;
  } else {
    std::vector<float> x;
    std::vector<float> y;
    for (std::int64_t r = window.row0; r < window.row0 + window.rows; ++r) {
      const auto first = static_cast<std::size_t>(r * dims.cols + window.col0);
      const auto last = first + static_cast<std::size_t>(window.cols);
      x.insert(x.end(), in.original.begin() + first, in.original.begin() + last);
      y.insert(y.end(), in.dequantized.begin() + first, in.dequantized.begin() + last);
    }
    m = error_metrics(TensorView(x), TensorView(y));
  }
  std::vector<std::string> parts{where, in.qparams_details, "MSE " + report::format_number(m.mse),
                                 std::isinf(m.sqnr_db)
                                     ? std::string("SQNR \xe2\x88\x9e")
                                     : "SQNR " + report::format_number(m.sqnr_db, 3) + " dB",
                                 "max |error| " + report::format_number(m.max_abs_error)};
  if (window.covers(dims) && in.whole_metrics) {
    parts.push_back(report::format_number(100 * m.fraction_saturated, 3) + "% saturated");
  }
  if (nonfinite > 0) parts.push_back(std::to_string(nonfinite) + " NaN/Inf values (magenta)");
  return join(parts);
}

void draw_errors_figure(const Inputs& in, report::FigureFile& file, const PlotOptions& options) {
  const report::MatrixDims dims = report::matrix_dims(in.shape);
  const report::Window window = report::resolve_window(dims, options.rows, options.cols);
  const auto at = [&](const auto& values) {
    return [&values, cols = dims.cols](std::int64_t r, std::int64_t c) {
      return static_cast<double>(values[static_cast<std::size_t>(r * cols + c)]);
    };
  };
  const CellGrid original =
      report::reduce_to_cells(window, report::Reduce::mean, kMaxCells, at(in.original));
  const CellGrid codes =
      report::reduce_to_cells(window, report::Reduce::mean, kMaxCells, at(in.codes));
  const CellGrid dequantized =
      report::reduce_to_cells(window, report::Reduce::mean, kMaxCells, at(in.dequantized));
  const CellGrid error = report::reduce_to_cells(
      window, report::Reduce::abs_max, kMaxCells, [&](std::int64_t r, std::int64_t c) {
        const auto i = static_cast<std::size_t>(r * dims.cols + c);
        return std::abs(static_cast<double>(in.dequantized[i]) - in.original[i]);
      });

  // Original and dequantized share one scale: diverging around 0 for signed data.
  auto values = report::finite_range(original);
  if (const auto d = report::finite_range(dequantized)) {
    values = values ? report::Range{std::min(values->lo, d->lo), std::max(values->hi, d->hi)} : d;
  }
  const report::Range v = values.value_or(report::Range{0, 1});
  const ColorScale value_scale = v.lo < 0 && v.hi > 0 ? ColorScale::diverging(v.lo, v.hi, 0)
                                                      : ColorScale::sequential(v.lo, v.hi);
  const auto e = report::finite_range(error);
  const bool annotate =
      options.annotate && window.rows <= kAnnotateMax && window.cols <= kAnnotateMax;

  std::vector<HeatmapSpec> specs{
      {"Original tensor",
       join({range_note(in.original, dims.cols, window), nonfinite_note(original.nonfinite),
             block_note(original, "mean")}),
       original, value_scale, annotate},
      {in.grid.title, join({in.grid.details, block_note(codes, "mean")}), codes,
       ColorScale::sequential(in.grid.qmin, in.grid.qmax), annotate, true},
      {"Dequantized tensor",
       join({range_note(in.dequantized, dims.cols, window), block_note(dequantized, "mean")}),
       dequantized, value_scale, annotate},
      {"Quantization error |x\xcc\x82 \xe2\x88\x92 x|",
       join({"max " + (e ? report::format_number(e->hi) : std::string("NaN")),
             nonfinite_note(error.nonfinite), block_note(error, "max")}),
       error, ColorScale::sequential(0, e ? e->hi : 0), annotate},
  };

  const report::CairoPtr measure = report::measuring_context();
  const report::PlotArea area = report::plot_area_for(measure.get(), specs);
  std::vector<HeatmapPanel> panels;
  double panels_width = kPanelGap * static_cast<double>(specs.size() - 1);
  for (HeatmapSpec& spec : specs) {
    panels.emplace_back(measure.get(), std::move(spec), area);
    panels_width += panels.back().width();
  }
  const std::int64_t nonfinite = original.nonfinite;
  const report::Header header{options.title.empty() ? in.default_title : options.title,
                              details_line(in, dims, window, nonfinite)};
  const double width = 2 * kMargin + std::ceil(std::max(panels_width, header.width(measure.get())));
  const double panels_top = kMargin + header.height() + kHeaderGap;
  const double height = panels_top + panels.front().height() +
                        (nonfinite > 0 || error.nonfinite > 0 ? kLegendLine : 0) + kMargin;

  file.write(width, height, [&](cairo_t* cr) {
    header.draw(cr, kMargin, kMargin);
    double x = std::round((width - panels_width) / 2);
    for (const HeatmapPanel& panel : panels) {
      panel.draw(cr, x, panels_top);
      x += panel.width() + kPanelGap;
    }
    if (nonfinite > 0 || error.nonfinite > 0) {
      report::draw_legend_item(cr, kMargin, height - kMargin - kLegendLine / 2,
                               report::palette::non_finite, "NaN / \xc2\xb1Inf");
    }
  });
}

void check_shape(const Shape& original, const Shape& other, const char* name) {
  if (original != other) {
    throw Error(std::string(kWhat) + ": " + name + " shape " + to_string(other) +
                " differs from original shape " + to_string(original) + " (expected equal shapes)");
  }
  if (shape_numel(original) == 0) {
    throw Error(std::string(kWhat) + ": original has shape " + to_string(original) +
                ", no elements (expected at least one to plot)");
  }
}

// The codes of an integer view, widened to int32.
std::vector<std::int32_t> codes_of(const TensorView& codes) {
  const auto n = static_cast<std::size_t>(codes.numel());
  std::vector<std::int32_t> out(n);
  const auto widen = [&](const auto* data) {
    for (std::size_t i = 0; i < n; ++i)
      out[i] = static_cast<std::int32_t>(data[i]);
  };
  switch (codes.type) {
    case ScalarType::int8:
      widen(codes.data_as<std::int8_t>());
      break;
    case ScalarType::uint8:
      widen(codes.data_as<std::uint8_t>());
      break;
    case ScalarType::int16:
      widen(codes.data_as<std::int16_t>());
      break;
    case ScalarType::uint16:
      widen(codes.data_as<std::uint16_t>());
      break;
    case ScalarType::int32:
      widen(codes.data_as<std::int32_t>());
      break;
    default:
      throw Error(std::string(kWhat) + ": codes have element type " + to_string(codes.type) +
                  " (expected int8, uint8, int16, uint16 or int32)");
  }
  return out;
}

// The grid of plain codes: options.code_dtype, else the element type's, else the codes' range.
CodeGrid plain_code_grid(ScalarType type, const std::vector<std::int32_t>& codes,
                         const PlotOptions& options) {
  if (options.code_dtype) return code_grid(*options.code_dtype);
  switch (type) {
    case ScalarType::int8:
      return code_grid(qint8);
    case ScalarType::uint8:
      return code_grid(quint8);
    case ScalarType::int16:
      return code_grid(qint16);
    case ScalarType::uint16:
      return code_grid(QDtype::full_range(16, false));
    default:
      break;
  }
  const auto [lo, hi] = std::minmax_element(codes.begin(), codes.end());
  CodeGrid grid{codes.empty() ? 0.0 : *lo, codes.empty() ? 0.0 : *hi, "Quantized codes (int32)",
                ""};
  grid.details = "observed [" + report::format_number(grid.qmin, 12) + ", " +
                 report::format_number(grid.qmax, 12) + "]";
  return grid;
}

void plot_plain(const TensorView& original, std::vector<std::int32_t> codes, const CodeGrid& grid,
                const TensorView& dequantized, const std::filesystem::path& out,
                const PlotOptions& options) {
  check_shape(original.shape, dequantized.shape, "dequantized");
  report::FigureFile file(out, options.overwrite);
  Inputs in;
  in.shape = original.shape;
  in.original = to_float32(original, "plot_quantization_errors: original");
  in.dequantized = to_float32(dequantized, "plot_quantization_errors: dequantized");
  in.codes = std::move(codes);
  in.grid = grid;
  draw_errors_figure(in, file, options);
}

}  // namespace

void plot_quantization_errors(const TensorView& original, const QuantizedTensor& quantized,
                              const std::filesystem::path& out, const PlotOptions& options) {
  check_shape(original.shape, quantized.shape(), "quantized");
  report::FigureFile file(out, options.overwrite);
  const QParams& qp = quantized.qparams();
  Inputs in;
  in.shape = original.shape;
  in.original = to_float32(original, "plot_quantization_errors: original");
  in.codes = quantized.int_repr();
  const Tensor dequantized = dequantize(quantized);
  const auto deq = dequantized.floats();
  in.dequantized.assign(deq.begin(), deq.end());
  in.grid = code_grid(qp.qdtype);
  in.default_title = "Quantization errors: " + describe(qp);
  if (qp.scale.size() == 1) {
    in.qparams_details = "scale " + report::format_number(qp.scale[0], 7) +
                         " \xc2\xb7 zero point " + report::format_number(qp.zero_point[0], 12);
  } else {
    in.qparams_details = std::to_string(qp.scale.size()) + " scales";
  }
  in.whole_metrics = error_metrics(original, quantized);
  draw_errors_figure(in, file, options);
}

void plot_quantization_errors(const TensorView& original, const TensorView& codes,
                              const TensorView& dequantized, const std::filesystem::path& out,
                              const PlotOptions& options) {
  check_shape(original.shape, codes.shape, "codes");
  std::vector<std::int32_t> values = codes_of(codes);
  const CodeGrid grid = plain_code_grid(codes.type, values, options);
  plot_plain(original, std::move(values), grid, dequantized, out, options);
}

void plot_quantization_errors(const TensorView& original, std::span<const std::int32_t> codes,
                              const TensorView& dequantized, const std::filesystem::path& out,
                              const PlotOptions& options) {
  if (static_cast<std::int64_t>(codes.size()) != original.numel()) {
    throw Error(std::string(kWhat) + ": codes hold " + std::to_string(codes.size()) +
                " values but original has shape " + to_string(original.shape) + " (expected " +
                std::to_string(original.numel()) + ")");
  }
  std::vector<std::int32_t> values(codes.begin(), codes.end());
  const CodeGrid grid = plain_code_grid(ScalarType::int32, values, options);
  plot_plain(original, std::move(values), grid, dequantized, out, options);
}

}  // namespace lucid::quantization
