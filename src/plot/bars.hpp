// Internal: the per-channel bar-chart panels of the tensor report (scales, errors).
#pragma once

#include <cairo.h>

#include <string>
#include <vector>

namespace lucid::quantization::report {

/// What a bar-chart panel shows: one value per channel (or group), in order.
struct BarSpec {
  std::string title;
  std::string subtitle;
  std::string x_title;
  std::string y_title;
  /// NaN or infinite values are left out (the caller says so in the subtitle).
  std::vector<double> values;
};

/// Consecutive values merged into one bar: the smallest and largest finite value of
/// `values` [first, first + count); `valid` is false when none is finite.
struct BarBin {
  std::size_t first = 0;
  std::size_t count = 0;
  double min = 0;
  double max = 0;
  bool valid = false;
};
/// Splits `values` into at most `max_bars` bins of equal size (the last may be smaller).
std::vector<BarBin> bin_bars(const std::vector<double>& values, std::size_t max_bars);

/// Height of the panel for a plot of `plot_height` pixels.
double bar_panel_height(double plot_height);
/// Draws the panel with its top-left corner at (x, y). One bar per value while each gets at
/// least two pixels; beyond that a bar spans several values and shows the largest magnitude
/// among them (light) and the smallest (dark) of same-signed values.
void draw_bar_panel(cairo_t* cr, const BarSpec& spec, double x, double y, double plot_width,
                    double plot_height);

}  // namespace lucid::quantization::report
