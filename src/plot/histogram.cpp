// Internal: the histogram panel: value counts, the clipping range and the quantization grid.
#include "plot/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "plot/axes.hpp"
#include "plot/draw.hpp"

namespace lucid::quantization::report {
namespace {

constexpr double kMaxGridTicks = 64;
constexpr double kGridTickLength = 7;
constexpr double kLegendLine = 26;
constexpr double kClipLabelStrip = 16;  // above the plot, for the clipping-range labels
constexpr Font kLegendFont{11, false};
constexpr Font kClipFont{10, false};

struct LegendCursor {
  cairo_t* cr;
  double x;
  double y;

  void swatch(Rgb colour, const std::string& label) {
    x += draw_legend_item(cr, x, y, colour, label) + 18;
  }
  void line(Rgb colour, double dash, double tick, const std::string& label) {
    if (tick > 0) {
      draw_line(cr, x + 5, y - tick / 2, x + 5, y + tick / 2, colour, 1.5);
    } else {
      draw_line(cr, x, y, x + 16, y, colour, 1.5, dash);
    }
    const double start = x + (tick > 0 ? 12 : 21);
    draw_text(cr, label, start, y, kLegendFont, palette::text, HAlign::left, VAlign::middle);
    x = start + text_width(cr, label, kLegendFont) + 18;
  }
};

}  // namespace

int auto_bins(std::size_t n) {
  return std::clamp(static_cast<int>(std::lround(2 * std::sqrt(static_cast<double>(n)))), 10, 100);
}

HistogramCounts count_histogram(const std::vector<float>& values, int bins, double clip_lo,
                                double clip_hi) {
  HistogramCounts h;
  h.inside.assign(static_cast<std::size_t>(bins), 0);
  h.outside.assign(static_cast<std::size_t>(bins), 0);
  if (values.empty()) return h;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  h.lo = *lo;
  h.hi = *hi;
  if (h.lo == h.hi) {
    const double pad = std::max(std::abs(h.lo) * 0.05, 0.5);
    h.lo -= pad;
    h.hi += pad;
  }
  const double width = h.hi - h.lo;
  for (const float v : values) {
    const auto bin = std::min<std::size_t>(static_cast<std::size_t>((v - h.lo) / width * bins),
                                           static_cast<std::size_t>(bins - 1));
    ++(v < clip_lo || v > clip_hi ? h.outside : h.inside)[bin];
  }
  return h;
}

double histogram_panel_height(double plot_height) {
  return kChartHeader + kClipLabelStrip + plot_height + kChartFooter + kLegendLine;
}

void draw_histogram_panel(cairo_t* cr, const HistogramSpec& spec, double x, double y,
                          double plot_width, double plot_height) {
  draw_chart_title(cr, x, y, spec.title, spec.subtitle);
  const int bins = spec.bins;
  const double inf = std::numeric_limits<double>::infinity();
  const HistogramCounts h =
      count_histogram(spec.values, bins, spec.mark_clipped ? spec.clip_lo : -inf,
                      spec.mark_clipped ? spec.clip_hi : inf);
  std::int64_t max_count = 1;
  for (std::size_t i = 0; i < h.inside.size(); ++i)
    max_count = std::max(max_count, h.inside[i] + h.outside[i]);

  Axes axes;
  axes.x = x + kChartGutter;
  axes.y = y + kChartHeader + kClipLabelStrip;
  axes.width = plot_width;
  axes.height = plot_height;
  const double lo = std::min(h.lo, spec.clip_lo);
  const double hi = std::max(h.hi, spec.clip_hi);
  const double pad = (hi - lo) * 0.03;
  axes.x_lo = lo - pad;
  axes.x_hi = hi + pad;
  axes.log_y = spec.log_counts;
  const auto top = static_cast<double>(max_count);
  axes.y_lo = spec.log_counts ? 0.7 : 0;
  axes.y_hi = spec.log_counts ? std::max(10.0, std::pow(10.0, std::ceil(std::log10(top * 1.5))))
                              : top * 1.05;
  std::vector<double> yt = y_ticks(axes.y_lo, axes.y_hi, axes.log_y);
  std::erase_if(yt, [](double t) { return t != std::floor(t); });  // counts are integers
  if (!axes.log_y && !yt.empty()) axes.y_hi = std::max(axes.y_hi, yt.back());
  draw_y_axis(cr, axes, yt, spec.log_counts ? "count (log)" : "count");

  // Bars: values inside the clipping range in blue, those outside stacked on top in orange.
  const double bin_width = (h.hi - h.lo) / bins;
  const double base = axes.py(axes.y_lo);
  for (std::size_t i = 0; i < h.inside.size(); ++i) {
    const std::int64_t total = h.inside[i] + h.outside[i];
    if (total == 0) continue;
    double x0 = axes.px(h.lo + bin_width * static_cast<double>(i));
    double x1 = axes.px(h.lo + bin_width * static_cast<double>(i + 1));
    if (x1 - x0 >= 4) x1 -= 1;  // a hairline gap between wide bars
    x0 = std::round(x0);
    x1 = std::max(std::round(x1), x0 + 1);
    const double y_total = std::round(axes.py(static_cast<double>(total)));
    fill_rect(cr, x0, y_total, x1 - x0, base - y_total,
              h.outside[i] > 0 ? palette::clipped : palette::bar);
    if (h.outside[i] > 0 && h.inside[i] > 0) {
      const double y_inside = std::round(axes.py(static_cast<double>(h.inside[i])));
      fill_rect(cr, x0, y_inside, x1 - x0, base - y_inside, palette::bar);
    }
  }

  // Grid points as ticks hanging from the top edge, when few enough are in view.
  double grid_in_view = 0;
  if (const auto& g = spec.grid) {
    const double q0 = std::max(g->qmin, std::ceil(axes.x_lo / g->scale + g->zero_point));
    const double q1 = std::min(g->qmax, std::floor(axes.x_hi / g->scale + g->zero_point));
    grid_in_view = std::max(0.0, q1 - q0 + 1);
    if (grid_in_view <= kMaxGridTicks) {
      for (double q = q0; q <= q1; ++q) {
        const double gx = axes.px(g->scale * (q - g->zero_point));
        draw_line(cr, gx, axes.y, gx, axes.y + kGridTickLength, palette::grid_tick, 1.5);
      }
    }
  }

  // The clipping range as dashed lines, labelled above the plot.
  const double label_y = axes.y - 3;
  const double lx = axes.px(spec.clip_lo);
  const double hx = axes.px(spec.clip_hi);
  draw_line(cr, lx, axes.y, lx, base, palette::clip_line, 1.5, 5);
  draw_line(cr, hx, axes.y, hx, base, palette::clip_line, 1.5, 5);
  // Centred on their lines, unless that would make them overlap: then pushed apart.
  const std::string lo_label = format_number(spec.clip_lo);
  const std::string hi_label = format_number(spec.clip_hi);
  const double half_widths =
      (text_width(cr, lo_label, kClipFont) + text_width(cr, hi_label, kClipFont)) / 2;
  const bool apart = hx - lx > half_widths + 8;
  draw_text(cr, lo_label, apart ? lx : lx - 2, label_y, kClipFont, palette::clip_line,
            apart ? HAlign::center : HAlign::right, VAlign::bottom);
  draw_text(cr, hi_label, apart ? hx : hx + 2, label_y, kClipFont, palette::clip_line,
            apart ? HAlign::center : HAlign::left, VAlign::bottom);

  std::vector<double> xt =
      nice_ticks(axes.x_lo, axes.x_hi, std::max(2, static_cast<int>(plot_width / 90)));
  std::vector<std::string> labels;
  for (const double t : xt)
    labels.push_back(format_number(t));
  draw_x_axis(cr, axes, xt, labels, "value");
  stroke_rect(cr, axes.x, axes.y, axes.width, axes.height, palette::axis);

  LegendCursor legend{cr, axes.x, axes.y + plot_height + kChartFooter + kLegendLine / 2 + 2};
  std::int64_t outside = 0;
  for (const std::int64_t n : h.outside)
    outside += n;
  legend.swatch(palette::bar, spec.mark_clipped ? "inside the clipping range" : "values");
  if (outside > 0) legend.swatch(palette::clipped, "outside it");
  legend.line(palette::clip_line, 5, 0,
              spec.clip_label + " [" + format_number(spec.clip_lo) + ", " +
                  format_number(spec.clip_hi) + "]");
  if (!spec.grid) {
    legend.line(palette::grid_tick, 0, 10, "grid: one per " + spec.unit + ", not drawn");
  } else if (grid_in_view <= kMaxGridTicks) {
    legend.line(palette::grid_tick, 0, 10, "grid points (" + format_number(grid_in_view, 12) + ")");
  } else {
    legend.line(palette::grid_tick, 0, 10,
                "grid: " + format_number(grid_in_view, 12) + " points, too dense to draw");
  }
}

}  // namespace lucid::quantization::report
