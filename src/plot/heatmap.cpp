// Internal: heatmap panels: layout, cells, value labels, index axes and colour bars.
#include "plot/heatmap.hpp"

#include <algorithm>
#include <cmath>

namespace lucid::quantization::report {
namespace {

constexpr Font kTitleFont{13, true};
constexpr Font kSubtitleFont{11, false};
constexpr Font kTickFont{10, false};
constexpr double kTitleLine = 17;
constexpr double kSubtitleLine = 15;
constexpr double kHeaderGap = 8;
constexpr double kTickLength = 4;
constexpr double kTickGap = 3;
constexpr double kTickLine = 12;
constexpr double kBarGap = 14;
constexpr double kBarThickness = 12;
constexpr double kFlatBarGap = 10;
constexpr double kMinVerticalBar = 100;  // plots lower than this get a horizontal colour bar
constexpr double kBox = 300;             // the longer side of an unannotated plot
constexpr double kMinSide = 36;          // the shorter side of a strip
constexpr double kMaxAnnotatedCell = 72;
constexpr int kColourStops = 33;

Font annotation_font(std::int64_t cols) {
  return {cols <= 8 ? 11.0 : 8.5, false};
}

// Horizontal room around a label inside its cell.
double annotation_padding(std::int64_t cols) {
  return cols <= 8 ? 10 : 6;
}

// Significant digits of the largest label: fewer when many columns share the width.
int annotation_digits(std::int64_t cols) {
  return cols <= 8 ? 4 : 3;
}

// Index ticks for `count` indices from `first`, about `spacing` pixels apart over `length`.
std::vector<std::int64_t> index_ticks(std::int64_t first, std::int64_t count, double length,
                                      double spacing) {
  if (count <= 16 && length / static_cast<double>(count) >= 14) {
    std::vector<std::int64_t> all(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
      all[static_cast<std::size_t>(i)] = first + i;
    return all;
  }
  return nice_index_ticks(first, first + count - 1,
                          std::max(2, static_cast<int>(length / spacing)));
}

std::vector<double> bar_ticks(const ColorScale& scale, double length, bool vertical) {
  return nice_ticks(scale.lo, scale.hi,
                    std::max(2, static_cast<int>(length / (vertical ? 32 : 55))));
}

}  // namespace

LabelFormat label_format(const HeatmapSpec& spec, int significant) {
  LabelFormat format;
  format.significant = significant;
  format.integer = spec.integer_labels;
  double largest = 0;
  for (const double v : spec.grid.cells) {
    if (std::isfinite(v)) largest = std::max(largest, std::abs(v));
  }
  if (largest > 0 && (largest >= 1e5 || largest < 1e-3)) {
    format.general = true;
  } else if (largest > 0) {
    const int magnitude = static_cast<int>(std::floor(std::log10(largest)));
    format.decimals = std::clamp(significant - 1 - magnitude, 0, 6);
  }
  return format;
}

std::string cell_label(double value, const LabelFormat& format) {
  if (!std::isfinite(value)) return format_number(value);
  if (format.integer) return format_fixed(value, 0);
  if (format.general) return format_number(value, format.significant);
  return format_fixed(value, format.decimals);
}

PlotArea plot_area_for(cairo_t* measure, const std::vector<HeatmapSpec>& specs) {
  const CellGrid& grid = specs.front().grid;
  const auto rows = static_cast<double>(grid.rows);
  const auto cols = static_cast<double>(grid.cols);
  const bool annotate =
      std::any_of(specs.begin(), specs.end(), [](const HeatmapSpec& s) { return s.annotate; });
  if (annotate) {
    const Font font = annotation_font(grid.cols);
    double label = 0;
    for (const HeatmapSpec& spec : specs) {
      if (!spec.annotate) continue;
      const LabelFormat format = label_format(spec, annotation_digits(grid.cols));
      for (const double v : spec.grid.cells)
        label = std::max(label, text_width(measure, cell_label(v, format), font));
    }
    const double base = std::min(kMaxAnnotatedCell, std::floor(kBox / std::max(rows, cols)));
    return {cols * std::max(base, std::ceil(label) + annotation_padding(grid.cols)),
            rows * std::max(base, std::ceil(font.size) + 12)};
  }
  double cell = kBox / std::max(rows, cols);
  if (cell >= 4) cell = std::floor(cell);
  return {std::max(cols * cell, kMinSide), std::max(rows * cell, kMinSide)};
}

HeatmapPanel::HeatmapPanel(cairo_t* measure, HeatmapSpec spec, PlotArea area)
    : spec_(std::move(spec)), area_(area), vertical_bar_(area.height >= kMinVerticalBar) {
  const Window& w = spec_.grid.window;
  for (const std::int64_t tick : index_ticks(w.row0, w.rows, area_.height, 28)) {
    row_label_width_ =
        std::max(row_label_width_, text_width(measure, std::to_string(tick), kTickFont));
  }
  row_label_width_ = std::ceil(row_label_width_) + kTickLength + kTickGap;
  header_height_ = kTitleLine + (spec_.subtitle.empty() ? 0 : kSubtitleLine) + kHeaderGap;

  core_width_ = row_label_width_ + area_.width;
  double bottom = kTickLength + kTickGap + kTickLine;
  const auto ticks =
      bar_ticks(spec_.scale, vertical_bar_ ? area_.height : area_.width, vertical_bar_);
  if (vertical_bar_) {
    for (const double tick : ticks)
      bar_label_width_ =
          std::max(bar_label_width_, text_width(measure, format_number(tick), kTickFont));
    core_width_ += kBarGap + kBarThickness + kTickLength + kTickGap + std::ceil(bar_label_width_);
  } else {
    bottom += kFlatBarGap + kBarThickness + kTickLength + kTickGap + kTickLine;
    // Room for the last colour-bar label, centred on the bar's right end.
    if (!ticks.empty()) {
      core_width_ += text_width(measure, format_number(ticks.back()), kTickFont) / 2;
    }
  }
  width_ = std::ceil(std::max({core_width_, text_width(measure, spec_.title, kTitleFont),
                               text_width(measure, spec_.subtitle, kSubtitleFont)}));
  height_ = std::ceil(header_height_ + area_.height + bottom);
}

void HeatmapPanel::draw(cairo_t* cr, double x, double y) const {
  draw_text(cr, spec_.title, x + width_ / 2, y, kTitleFont, palette::text, HAlign::center,
            VAlign::top);
  if (!spec_.subtitle.empty()) {
    draw_text(cr, spec_.subtitle, x + width_ / 2, y + kTitleLine, kSubtitleFont, palette::muted,
              HAlign::center, VAlign::top);
  }
  const double plot_x = std::round(x + (width_ - core_width_) / 2 + row_label_width_);
  const double plot_y = std::round(y + header_height_);
  draw_cells(cr, plot_x, plot_y);
  draw_axes(cr, plot_x, plot_y);
  draw_colour_bar(cr, plot_x, plot_y);
}

void HeatmapPanel::draw_cells(cairo_t* cr, double x, double y) const {
  const CellGrid& grid = spec_.grid;
  const auto edge = [](double origin, double length, std::int64_t i, std::int64_t n) {
    return std::round(origin + length * static_cast<double>(i) / static_cast<double>(n));
  };
  cairo_save(cr);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  for (std::int64_t r = 0; r < grid.rows; ++r) {
    const double y0 = edge(y, area_.height, r, grid.rows);
    const double y1 = edge(y, area_.height, r + 1, grid.rows);
    for (std::int64_t c = 0; c < grid.cols; ++c) {
      const double x0 = edge(x, area_.width, c, grid.cols);
      const double x1 = edge(x, area_.width, c + 1, grid.cols);
      fill_rect(cr, x0, y0, x1 - x0, y1 - y0, spec_.scale.at(grid.at(r, c)));
    }
  }
  cairo_restore(cr);
  if (spec_.annotate) {
    const Font font = annotation_font(grid.cols);
    const LabelFormat format = label_format(spec_, annotation_digits(grid.cols));
    for (std::int64_t r = 0; r < grid.rows; ++r) {
      const double cy =
          (edge(y, area_.height, r, grid.rows) + edge(y, area_.height, r + 1, grid.rows)) / 2;
      for (std::int64_t c = 0; c < grid.cols; ++c) {
        const double cx =
            (edge(x, area_.width, c, grid.cols) + edge(x, area_.width, c + 1, grid.cols)) / 2;
        const double v = grid.at(r, c);
        draw_text(cr, cell_label(v, format), cx, cy, font, text_colour_on(spec_.scale.at(v)),
                  HAlign::center, VAlign::middle);
      }
    }
  }
  stroke_rect(cr, x, y, area_.width, area_.height, palette::axis);
}

void HeatmapPanel::draw_axes(cairo_t* cr, double x, double y) const {
  const Window& w = spec_.grid.window;
  for (const std::int64_t tick : index_ticks(w.row0, w.rows, area_.height, 28)) {
    const double ty =
        y + (static_cast<double>(tick - w.row0) + 0.5) / static_cast<double>(w.rows) * area_.height;
    draw_line(cr, x - kTickLength, ty, x, ty, palette::axis);
    draw_text(cr, std::to_string(tick), x - kTickLength - kTickGap, ty, kTickFont, palette::text,
              HAlign::right, VAlign::middle);
  }
  const double bottom = y + area_.height;
  for (const std::int64_t tick : index_ticks(w.col0, w.cols, area_.width, 45)) {
    const double tx =
        x + (static_cast<double>(tick - w.col0) + 0.5) / static_cast<double>(w.cols) * area_.width;
    draw_line(cr, tx, bottom, tx, bottom + kTickLength, palette::axis);
    draw_text(cr, std::to_string(tick), tx, bottom + kTickLength + kTickGap, kTickFont,
              palette::text, HAlign::center, VAlign::top);
  }
}

void HeatmapPanel::draw_colour_bar(cairo_t* cr, double x, double y) const {
  const ColorScale& scale = spec_.scale;
  double bx = 0;
  double by = 0;
  double bw = 0;
  double bh = 0;
  if (vertical_bar_) {
    bx = x + area_.width + kBarGap;
    by = y;
    bw = kBarThickness;
    bh = area_.height;
  } else {
    bx = x;
    by = y + area_.height + kTickLength + kTickGap + kTickLine + kFlatBarGap;
    bw = area_.width;
    bh = kBarThickness;
  }
  // Low values at the bottom (vertical) or the left (horizontal).
  cairo_pattern_t* gradient = vertical_bar_ ? cairo_pattern_create_linear(0, by + bh, 0, by)
                                            : cairo_pattern_create_linear(bx, 0, bx + bw, 0);
  for (int i = 0; i < kColourStops; ++i) {
    const double t = i / static_cast<double>(kColourStops - 1);
    const Rgb c = scale.at(scale.lo + t * (scale.hi - scale.lo));
    cairo_pattern_add_color_stop_rgb(gradient, t, c.r, c.g, c.b);
  }
  cairo_set_source(cr, gradient);
  cairo_rectangle(cr, bx, by, bw, bh);
  cairo_fill(cr);
  cairo_pattern_destroy(gradient);
  stroke_rect(cr, bx, by, bw, bh, palette::axis);

  const double span = scale.hi - scale.lo;
  for (const double tick : bar_ticks(scale, vertical_bar_ ? bh : bw, vertical_bar_)) {
    const double t = span > 0 ? (tick - scale.lo) / span : 0.5;
    const std::string label = format_number(tick);
    if (vertical_bar_) {
      const double ty = by + bh - t * bh;
      draw_line(cr, bx + bw, ty, bx + bw + kTickLength, ty, palette::axis);
      draw_text(cr, label, bx + bw + kTickLength + kTickGap, ty, kTickFont, palette::text,
                HAlign::left, VAlign::middle);
    } else {
      const double tx = bx + t * bw;
      draw_line(cr, tx, by + bh, tx, by + bh + kTickLength, palette::axis);
      draw_text(cr, label, tx, by + bh + kTickLength + kTickGap, kTickFont, palette::text,
                HAlign::center, VAlign::top);
    }
  }
}

}  // namespace lucid::quantization::report
