// Internal: per-channel bar charts, with min / max bars when channels outnumber pixels.
#include "plot/bars.hpp"

#include <algorithm>
#include <cmath>

#include "plot/axes.hpp"
#include "plot/draw.hpp"

namespace lucid::quantization::report {

std::vector<BarBin> bin_bars(const std::vector<double>& values, std::size_t max_bars) {
  const std::size_t per_bin = std::max<std::size_t>(1, (values.size() + max_bars - 1) / max_bars);
  std::vector<BarBin> bins;
  for (std::size_t first = 0; first < values.size(); first += per_bin) {
    BarBin bin{first, std::min(per_bin, values.size() - first)};
    for (std::size_t i = first; i < first + bin.count; ++i) {
      const double v = values[i];
      if (!std::isfinite(v)) continue;
      bin.min = bin.valid ? std::min(bin.min, v) : v;
      bin.max = bin.valid ? std::max(bin.max, v) : v;
      bin.valid = true;
    }
    bins.push_back(bin);
  }
  return bins;
}

double bar_panel_height(double plot_height) {
  return kChartHeader + plot_height + kChartFooter;
}

void draw_bar_panel(cairo_t* cr, const BarSpec& spec, double x, double y, double plot_width,
                    double plot_height) {
  draw_chart_title(cr, x, y, spec.title, spec.subtitle);
  const auto max_bars = static_cast<std::size_t>(std::max(1.0, plot_width / 2));
  const std::vector<BarBin> bins = bin_bars(spec.values, max_bars);
  const bool merged = bins.size() < spec.values.size();

  double lo = 0;
  double hi = 0;
  for (const BarBin& bin : bins) {
    if (!bin.valid) continue;
    lo = std::min(lo, bin.min);
    hi = std::max(hi, bin.max);
  }
  if (lo == hi) hi = 1;  // all zero (or nothing finite): an empty-looking [0, 1] axis
  Axes axes;
  axes.x = x + kChartGutter;
  axes.y = y + kChartHeader;
  axes.width = plot_width;
  axes.height = plot_height;
  const auto n = static_cast<double>(spec.values.size());
  axes.x_lo = 0;
  axes.x_hi = std::max(1.0, n);
  axes.y_lo = lo < 0 ? lo * 1.05 : 0;
  axes.y_hi = hi > 0 ? hi * 1.05 : 0;
  std::vector<double> yt = nice_ticks(axes.y_lo, axes.y_hi, 4);
  if (!yt.empty()) {
    axes.y_lo = std::min(axes.y_lo, yt.front());
    axes.y_hi = std::max(axes.y_hi, yt.back());
  }
  draw_y_axis(cr, axes, yt, spec.y_title);

  const double zero = std::round(axes.py(0));
  for (const BarBin& bin : bins) {
    if (!bin.valid) continue;
    double x0 = axes.px(static_cast<double>(bin.first));
    double x1 = axes.px(static_cast<double>(bin.first + bin.count));
    if (x1 - x0 >= 4) {  // leave a gap between wide bars
      const double gap = std::min(0.2 * (x1 - x0), 6.0);
      x0 += gap / 2;
      x1 -= gap / 2;
    }
    x0 = std::round(x0);
    x1 = std::max(std::round(x1), x0 + 1);
    const auto bar = [&](double v, Rgb colour) {
      const double yv = std::round(axes.py(v));
      fill_rect(cr, x0, std::min(yv, zero), x1 - x0, std::abs(zero - yv), colour);
    };
    if (merged && bin.min >= 0) {
      bar(bin.max, palette::bar_light);
      bar(bin.min, palette::bar);
    } else if (merged && bin.max <= 0) {
      bar(bin.min, palette::bar_light);
      bar(bin.max, palette::bar);
    } else if (merged) {  // both signs: the whole span is light
      bar(bin.max, palette::bar_light);
      bar(bin.min, palette::bar_light);
    } else {
      bar(bin.max, palette::bar);
    }
  }
  if (axes.y_lo < 0) draw_line(cr, axes.x, zero, axes.x + axes.width, zero, palette::axis);

  std::vector<double> xt;
  std::vector<std::string> labels;
  const auto count = static_cast<std::int64_t>(spec.values.size());
  for (const std::int64_t i :
       nice_index_ticks(0, count - 1, std::max(2, static_cast<int>(plot_width / 70)))) {
    xt.push_back(static_cast<double>(i) + 0.5);
    labels.push_back(std::to_string(i));
  }
  draw_x_axis(cr, axes, xt, labels,
              merged ? spec.x_title + " (each bar: " + std::to_string(bins.front().count) +
                           " values; light: largest, dark: smallest magnitude)"
                     : spec.x_title);
  stroke_rect(cr, axes.x, axes.y, axes.width, axes.height, palette::axis);
}

}  // namespace lucid::quantization::report
