// The tensor report figure: value histogram with clipping range and grid, per-channel bars.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/metrics.hpp"
#include "lucid/quantization/plot.hpp"
#include "lucid/quantization/quantize.hpp"
#include "plot/axes.hpp"
#include "plot/bars.hpp"
#include "plot/figure.hpp"
#include "plot/histogram.hpp"

namespace lucid::quantization {
namespace {

constexpr double kMargin = 24;
constexpr double kRightPad = 16;
constexpr double kPanelGap = 22;
constexpr double kPlotWidth = 860;
constexpr double kHistogramHeight = 250;
constexpr double kBarHeight = 120;
constexpr const char* kWhat = "plot_tensor_report";
constexpr const char* kDot = " \xc2\xb7 ";

std::string min_max(const std::vector<double>& values) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (const double v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) return "no finite values";
  return "min " + report::format_number(lo) + kDot + "max " + report::format_number(hi);
}

// The chosen figure of each entry; NaN for one without finite values.
std::vector<double> chosen_metric(const std::vector<ErrorMetrics>& metrics, ChannelMetric metric) {
  std::vector<double> out;
  for (const ErrorMetrics& m : metrics) {
    out.push_back(m.count == 0                   ? std::numeric_limits<double>::quiet_NaN()
                  : metric == ChannelMetric::mse ? m.mse
                                                 : m.sqnr_db);
  }
  return out;
}

// The error bar panel: values per slot, with the ones not drawn counted in the subtitle.
report::BarSpec error_bars(std::vector<double> values, ChannelMetric metric, const char* unit,
                           const std::string& x_title) {
  std::size_t exact = 0;
  std::size_t empty = 0;
  for (const double v : values) {
    exact += std::isinf(v);
    empty += std::isnan(v);
  }
  std::string subtitle = min_max(values);
  if (exact > 0)
    subtitle += kDot + std::to_string(exact) + " with zero error (SQNR \xe2\x88\x9e) not drawn";
  if (empty > 0) subtitle += kDot + std::to_string(empty) + " without finite values not drawn";
  const bool mse = metric == ChannelMetric::mse;
  return {std::string(mse ? "MSE" : "SQNR") + " per " + unit, subtitle, x_title,
          mse ? "MSE" : "SQNR (dB)", std::move(values)};
}

}  // namespace

void plot_tensor_report(const TensorView& original, const QuantizedTensor& quantized,
                        const std::filesystem::path& out, const PlotOptions& options) {
  if (original.shape != quantized.shape()) {
    throw Error(std::string(kWhat) + ": quantized shape " + to_string(quantized.shape()) +
                " differs from original shape " + to_string(original.shape) +
                " (expected equal shapes)");
  }
  if (original.numel() == 0) {
    throw Error(std::string(kWhat) + ": original has shape " + to_string(original.shape) +
                ", no elements (expected at least one to plot)");
  }
  report::FigureFile file(out, options.overwrite);
  const std::vector<float> x = to_float32(original, "plot_tensor_report: original");
  const QParams& qp = quantized.qparams();
  const auto qmin = static_cast<double>(qp.qdtype.quant_min());
  const auto qmax = static_cast<double>(qp.qdtype.quant_max());
  const bool one_grid = qp.scale.size() == 1;

  report::HistogramSpec hist;
  for (const float v : x) {
    if (std::isfinite(v)) hist.values.push_back(v);
  }
  hist.clip_lo = std::numeric_limits<double>::infinity();
  hist.clip_hi = -hist.clip_lo;
  for (std::size_t i = 0; i < qp.scale.size(); ++i) {
    hist.clip_lo = std::min(hist.clip_lo, qp.scale[i] * (qmin - qp.zero_point[i]));
    hist.clip_hi = std::max(hist.clip_hi, qp.scale[i] * (qmax - qp.zero_point[i]));
  }
  hist.bins =
      options.histogram_bins > 0 ? options.histogram_bins : report::auto_bins(hist.values.size());
  hist.log_counts = options.log_counts;
  hist.mark_clipped = one_grid;
  if (one_grid) {
    hist.grid = report::GridPoints{qp.scale[0], static_cast<double>(qp.zero_point[0]), qmin, qmax};
  } else {
    hist.unit = qp.is_per_group() ? "group" : "channel";
    hist.clip_label = "widest clipping range of " + std::to_string(qp.scale.size()) +
                      (qp.is_per_group() ? " groups" : " channels");
  }
  const auto nonfinite = static_cast<std::int64_t>(x.size() - hist.values.size());
  hist.title = "Distribution of the original values";
  hist.subtitle = std::to_string(hist.values.size()) + " finite values in " +
                  std::to_string(hist.bins) + " bins" + kDot +
                  min_max(std::vector<double>(hist.values.begin(), hist.values.end()));
  if (nonfinite > 0) hist.subtitle += kDot + std::to_string(nonfinite) + " NaN/Inf not shown";

  std::vector<report::BarSpec> bars;
  if (!one_grid || is_per_channel(qp.qscheme)) {
    const char* unit = qp.is_per_group() ? "group" : "channel";
    const std::string x_title = qp.is_per_group()
                                    ? "group (parameter order)"
                                    : "channel (axis " + std::to_string(qp.ch_axis) + ")";
    const std::vector<double> scales(qp.scale.begin(), qp.scale.end());
    bars.push_back({std::string("Scale per ") + unit,
                    std::to_string(scales.size()) + " " + unit + "s" + kDot + min_max(scales),
                    x_title, "scale", scales});
    const std::vector<ErrorMetrics> metrics =
        qp.is_per_group() ? error_metrics_per_group(original, quantized)
                          : error_metrics_per_channel(original, quantized, qp.ch_axis);
    bars.push_back(error_bars(chosen_metric(metrics, options.channel_metric),
                              options.channel_metric, unit, x_title));
  }

  const ErrorMetrics m = error_metrics(original, quantized);
  std::string details = "shape " + to_string(original.shape);
  if (one_grid) {
    details += std::string(kDot) + "scale " + report::format_number(qp.scale[0], 7) + kDot +
               "zero point " + report::format_number(qp.zero_point[0], 12);
  }
  details += std::string(kDot) + "MSE " + report::format_number(m.mse) + kDot +
             (std::isinf(m.sqnr_db) ? std::string("SQNR \xe2\x88\x9e")
                                    : "SQNR " + report::format_number(m.sqnr_db, 3) + " dB") +
             kDot + report::format_number(100 * m.fraction_saturated, 3) + "% saturated";
  const report::Header header{
      options.title.empty() ? "Tensor report: " + describe(qp) : options.title, details};

  const report::CairoPtr measure = report::measuring_context();
  const double width = 2 * kMargin + std::max(report::kChartGutter + kPlotWidth + kRightPad,
                                              std::ceil(header.width(measure.get())));
  const double top = kMargin + header.height() + kPanelGap;
  double height = top + report::histogram_panel_height(kHistogramHeight) + kMargin;
  for (std::size_t i = 0; i < bars.size(); ++i)
    height += kPanelGap + report::bar_panel_height(kBarHeight);

  file.write(width, height, [&](cairo_t* cr) {
    header.draw(cr, kMargin, kMargin);
    double y = top;
    report::draw_histogram_panel(cr, hist, kMargin, y, kPlotWidth, kHistogramHeight);
    y += report::histogram_panel_height(kHistogramHeight);
    for (const report::BarSpec& bar : bars) {
      y += kPanelGap;
      report::draw_bar_panel(cr, bar, kMargin, y, kPlotWidth, kBarHeight);
      y += report::bar_panel_height(kBarHeight);
    }
  });
}

}  // namespace lucid::quantization
