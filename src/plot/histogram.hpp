// Internal: the histogram panel of the tensor report: values, clipping range, grid points.
#pragma once

#include <cairo.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lucid::quantization::report {

/// A quantization grid: the points s (q - z) for integer q in [qmin, qmax].
struct GridPoints {
  double scale = 1;
  double zero_point = 0;
  double qmin = 0;
  double qmax = 0;
};

/// What the histogram panel shows.
struct HistogramSpec {
  std::string title;
  std::string subtitle;
  std::vector<float> values;  ///< finite values only
  int bins = 10;              ///< > 0; see auto_bins()
  bool log_counts = false;
  /// The clipping range [s (qmin - z), s (qmax - z)] (per-channel: the widest over channels).
  double clip_lo = 0;
  double clip_hi = 0;
  /// Colour the values outside [clip_lo, clip_hi] (one range for the whole tensor).
  bool mark_clipped = true;
  /// The grid; its points are drawn when at most 64 fall inside the x range. Unset: no
  /// single grid (per-channel quantization).
  std::optional<GridPoints> grid;
  std::string clip_label = "clipping range";
  /// What has its own grid when `grid` is unset: "channel" or "group".
  std::string unit = "channel";
};

/// Histogram counts of `values` in `bins` equal bins over [lo, hi] (the last bin closed),
/// split into values inside [clip_lo, clip_hi] and outside it.
struct HistogramCounts {
  double lo = 0;
  double hi = 0;
  std::vector<std::int64_t> inside;
  std::vector<std::int64_t> outside;
};
HistogramCounts count_histogram(const std::vector<float>& values, int bins, double clip_lo,
                                double clip_hi);

/// The default bin count for `n` values: 2 sqrt(n) clamped to [10, 100].
int auto_bins(std::size_t n);

/// Height of the panel for a plot of `plot_height` pixels.
double histogram_panel_height(double plot_height);
/// Draws the panel with its top-left corner at (x, y): title, plot (kChartGutter wide gutter
/// on the left), axes and a legend line.
void draw_histogram_panel(cairo_t* cr, const HistogramSpec& spec, double x, double y,
                          double plot_width, double plot_height);

}  // namespace lucid::quantization::report
