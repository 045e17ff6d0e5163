// Internal: one heatmap panel (cells, axes, colour bar, optional value labels) of a figure.
#pragma once

#include <cairo.h>

#include <string>
#include <vector>

#include "plot/colormap.hpp"
#include "plot/grid.hpp"

namespace lucid::quantization::report {

/// What one heatmap panel shows.
struct HeatmapSpec {
  std::string title;
  std::string subtitle;  ///< a second, lighter line under the title (may be empty)
  CellGrid grid;
  ColorScale scale;
  /// Write each cell's value into it (only sensible for small, unreduced grids).
  bool annotate = false;
  /// Label the cells as integers (codes); otherwise with the panel's LabelFormat.
  bool integer_labels = false;
};

/// The size in pixels of the cell area.
struct PlotArea {
  double width = 0;
  double height = 0;
};

/// The cell area that fits the panels of one figure, which share their grid's shape: about
/// 300 pixels on the longer side, at least 36 on the shorter, and, for annotated panels,
/// cells wide enough for the widest label of any of them.
PlotArea plot_area_for(cairo_t* measure, const std::vector<HeatmapSpec>& specs);

/// A laid-out heatmap panel: title, subtitle, the cells framed by index ticks (the window's
/// original row and column indices), and a colour bar to the right (below for flat plots).
class HeatmapPanel {
 public:
  HeatmapPanel(cairo_t* measure, HeatmapSpec spec, PlotArea area);

  double width() const { return width_; }
  double height() const { return height_; }
  /// Draws the panel with its top-left corner at (x, y).
  void draw(cairo_t* cr, double x, double y) const;

 private:
  void draw_cells(cairo_t* cr, double x, double y) const;
  void draw_axes(cairo_t* cr, double x, double y) const;
  void draw_colour_bar(cairo_t* cr, double x, double y) const;

  HeatmapSpec spec_;
  PlotArea area_;
  bool vertical_bar_ = true;
  double row_label_width_ = 0;
  double bar_label_width_ = 0;
  double header_height_ = 0;
  double core_width_ = 0;
  double width_ = 0;
  double height_ = 0;
};

/// How the value labels of one panel are written: integers, a fixed number of decimals
/// shared by every cell (as seaborn's fmt=".2f", so that columns line up), or, for very
/// large or small magnitudes, compact general numbers.
struct LabelFormat {
  bool integer = false;
  bool general = false;
  int decimals = 0;
  int significant = 4;
};
/// The format of `spec`'s labels: enough decimals for `significant` digits of the largest
/// finite |cell| (at most 6), general numbers when that is >= 1e5 or < 1e-3.
LabelFormat label_format(const HeatmapSpec& spec, int significant);
/// The text of one cell's label.
std::string cell_label(double value, const LabelFormat& format);

}  // namespace lucid::quantization::report
