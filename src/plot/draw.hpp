// Internal: drawing primitives for the figures: colours, text, lines, numbers and axis ticks.
#pragma once

#include <cairo.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lucid::quantization::report {

/// An sRGB colour, components in [0, 1].
struct Rgb {
  double r = 0;
  double g = 0;
  double b = 0;
};

/// The palette shared by every figure.
namespace palette {
inline constexpr Rgb text{0.13, 0.13, 0.13};
inline constexpr Rgb muted{0.38, 0.38, 0.38};
inline constexpr Rgb axis{0.25, 0.25, 0.25};
inline constexpr Rgb gridline{0.89, 0.89, 0.89};
inline constexpr Rgb bar{0.27, 0.47, 0.67};        // values, scales
inline constexpr Rgb bar_light{0.66, 0.77, 0.87};  // the max of a binned bar
inline constexpr Rgb clipped{0.87, 0.44, 0.20};    // values outside the clipping range
inline constexpr Rgb clip_line{0.70, 0.11, 0.11};  // clipping range markers
inline constexpr Rgb grid_tick{0.16, 0.55, 0.35};  // quantization grid points
inline constexpr Rgb non_finite{1.0, 0.0, 1.0};    // NaN / +-Inf cells (magenta)
}  // namespace palette

/// A font of the toy "sans-serif" family; size in pixels.
struct Font {
  double size = 12;
  bool bold = false;
};

enum class HAlign { left, center, right };
enum class VAlign { top, middle, baseline, bottom };

/// The advance width of `text` in `font`.
double text_width(cairo_t* cr, std::string_view text, Font font);
/// Draws `text` anchored at (x, y) with the given alignment; `angle` in radians turns it
/// around the anchor (-pi/2: reading upwards). Vertical alignment uses the font's ascent and
/// descent, so labels of one font line up whatever their glyphs.
void draw_text(cairo_t* cr, std::string_view text, double x, double y, Font font, Rgb colour,
               HAlign halign = HAlign::left, VAlign valign = VAlign::baseline, double angle = 0);

void fill_rect(cairo_t* cr, double x, double y, double w, double h, Rgb colour);
/// A 1-pixel line from (x0, y0) to (x1, y1), snapped to the pixel grid; `dash` > 0 dashes it.
void draw_line(cairo_t* cr, double x0, double y0, double x1, double y1, Rgb colour,
               double width = 1, double dash = 0);
/// A rectangle outline along the pixel grid.
void stroke_rect(cairo_t* cr, double x, double y, double w, double h, Rgb colour);

/// The title block of a figure: a bold title and a lighter line of details under it.
struct Header {
  std::string title;
  std::string details;

  double width(cairo_t* measure) const;
  double height() const;
  /// Draws the block with its top-left corner at (x, y).
  void draw(cairo_t* cr, double x, double y) const;
};

/// A small colour swatch followed by `label`, vertically centred on y; returns its width.
double draw_legend_item(cairo_t* cr, double x, double y, Rgb colour, std::string_view label);

/// A compact label for `value` with `significant` digits: "728.6", "0.02072", "−13.5",
/// "1.235e5", "NaN", "inf", "−inf". Negative numbers use the Unicode minus sign.
std::string format_number(double value, int significant = 4);
/// `value` with exactly `decimals` decimals ("0.90", "−13.50"); a value that rounds to zero
/// loses its sign. Non-finite values as format_number.
std::string format_fixed(double value, int decimals);
/// Up to about `max_count` round tick values (1, 2 or 5 times a power of ten apart) inside
/// [lo, hi]. Empty when lo or hi is not finite; {lo} when lo == hi.
std::vector<double> nice_ticks(double lo, double hi, int max_count);
/// The same for integer positions (a step of at least 1).
std::vector<std::int64_t> nice_index_ticks(std::int64_t first, std::int64_t last, int max_count);

}  // namespace lucid::quantization::report
