// Internal: chart frames: titles, gridlines, x / y ticks and labels, linear or log y.
#include "plot/axes.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace lucid::quantization::report {
namespace {

constexpr Font kTitleFont{13, true};
constexpr Font kSubtitleFont{11, false};
constexpr Font kTickFont{10, false};
constexpr Font kAxisTitleFont{11, false};
constexpr double kTitleLine = 17;
constexpr double kTickLength = 4;
constexpr double kTickGap = 3;

}  // namespace

double Axes::px(double v) const {
  return x + (v - x_lo) / (x_hi - x_lo) * width;
}

double Axes::py(double v) const {
  const double t = log_y ? (std::log10(std::max(v, y_lo)) - std::log10(y_lo)) /
                               (std::log10(y_hi) - std::log10(y_lo))
                         : (v - y_lo) / (y_hi - y_lo);
  return y + height - std::clamp(t, 0.0, 1.0) * height;
}

std::vector<double> y_ticks(double lo, double hi, bool log) {
  if (!log) return nice_ticks(lo, hi, 5);
  std::vector<double> ticks;
  for (double p = 1; p <= hi * (1 + 1e-9); p *= 10) {
    if (p >= lo) ticks.push_back(p);
  }
  return ticks;
}

void draw_chart_title(cairo_t* cr, double x, double y, std::string_view title,
                      std::string_view subtitle) {
  draw_text(cr, title, x, y, kTitleFont, palette::text, HAlign::left, VAlign::top);
  if (!subtitle.empty()) {
    draw_text(cr, subtitle, x, y + kTitleLine, kSubtitleFont, palette::muted, HAlign::left,
              VAlign::top);
  }
}

void draw_y_axis(cairo_t* cr, const Axes& axes, const std::vector<double>& ticks,
                 std::string_view title) {
  for (const double tick : ticks) {
    const double ty = axes.py(tick);
    draw_line(cr, axes.x, ty, axes.x + axes.width, ty, palette::gridline);
    draw_line(cr, axes.x - kTickLength, ty, axes.x, ty, palette::axis);
    const std::string label = axes.log_y && tick >= 1e5
                                  ? "1e" + std::to_string(std::lround(std::log10(tick)))
                                  : format_number(tick);
    draw_text(cr, label, axes.x - kTickLength - kTickGap, ty, kTickFont, palette::text,
              HAlign::right, VAlign::middle);
  }
  draw_line(cr, axes.x, axes.y, axes.x, axes.y + axes.height, palette::axis);
  draw_text(cr, title, axes.x - kChartGutter + 4, axes.y + axes.height / 2, kAxisTitleFont,
            palette::muted, HAlign::center, VAlign::top, -std::numbers::pi / 2);
}

void draw_x_axis(cairo_t* cr, const Axes& axes, const std::vector<double>& ticks,
                 const std::vector<std::string>& labels, std::string_view title) {
  const double bottom = axes.y + axes.height;
  draw_line(cr, axes.x, bottom, axes.x + axes.width, bottom, palette::axis);
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    const double tx = axes.px(ticks[i]);
    draw_line(cr, tx, bottom, tx, bottom + kTickLength, palette::axis);
    draw_text(cr, labels[i], tx, bottom + kTickLength + kTickGap, kTickFont, palette::text,
              HAlign::center, VAlign::top);
  }
  draw_text(cr, title, axes.x + axes.width / 2, bottom + kChartFooter, kAxisTitleFont,
            palette::muted, HAlign::center, VAlign::bottom);
}

}  // namespace lucid::quantization::report
