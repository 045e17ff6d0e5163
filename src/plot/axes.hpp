// Internal: the frame of a chart panel (titles, x / y axes, linear or log y) for histograms and
// bars.
#pragma once

#include <cairo.h>

#include <string>
#include <string_view>
#include <vector>

#include "plot/draw.hpp"

namespace lucid::quantization::report {

/// Space a chart panel needs left of its plot (y labels and title), above it (title and
/// subtitle) and below it (x labels and title).
inline constexpr double kChartGutter = 78;
inline constexpr double kChartHeader = 40;
inline constexpr double kChartFooter = 40;

/// A plot rectangle in pixels and the data ranges it shows.
struct Axes {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
  double x_lo = 0;
  double x_hi = 1;
  double y_lo = 0;
  double y_hi = 1;
  bool log_y = false;

  /// The pixel column of data value v.
  double px(double v) const;
  /// The pixel row of data value v (log_y: of log10 v), clamped into the plot.
  double py(double v) const;
};

/// Round y ticks for [lo, hi]: powers of ten (1, 10, 100, ...) when `log`, else nice_ticks.
std::vector<double> y_ticks(double lo, double hi, bool log);

/// The panel's title (bold) and subtitle, left-aligned at x from the top y.
void draw_chart_title(cairo_t* cr, double x, double y, std::string_view title,
                      std::string_view subtitle);
/// Horizontal gridlines at `ticks`, their labels left of the plot, and `title` turned to read
/// upwards in the gutter.
void draw_y_axis(cairo_t* cr, const Axes& axes, const std::vector<double>& ticks,
                 std::string_view title);
/// Ticks at data positions `ticks` labelled `labels` under the plot, and `title` below them.
void draw_x_axis(cairo_t* cr, const Axes& axes, const std::vector<double>& ticks,
                 const std::vector<std::string>& labels, std::string_view title);

}  // namespace lucid::quantization::report
