// Internal: drawing primitives for the figures: text, lines, number labels and axis ticks.
#include "plot/draw.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace lucid::quantization::report {
namespace {

constexpr const char* kFontFamily = "sans-serif";
constexpr Font kHeaderTitleFont{16, true};
constexpr Font kHeaderDetailsFont{12, false};
constexpr Font kLegendFont{11, false};
constexpr double kHeaderTitleLine = 22;
constexpr double kHeaderDetailsLine = 17;
constexpr double kSwatch = 10;
constexpr const char* kMinus = "\xe2\x88\x92";  // U+2212 MINUS SIGN

void select_font(cairo_t* cr, Font font) {
  cairo_select_font_face(cr, kFontFamily, CAIRO_FONT_SLANT_NORMAL,
                         font.bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, font.size);
}

void set_colour(cairo_t* cr, Rgb colour) {
  cairo_set_source_rgb(cr, colour.r, colour.g, colour.b);
}

// Drops trailing zeros of a fixed-point mantissa: "0.9000" -> "0.9", "10.000" -> "10".
std::string trim_zeros(std::string text) {
  if (text.find('.') == std::string::npos) return text;
  while (text.back() == '0')
    text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

// The step among 1, 2, 5 x 10^k that is the smallest >= raw.
double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  }
  return 10 * magnitude;
}

}  // namespace

double text_width(cairo_t* cr, std::string_view text, Font font) {
  select_font(cr, font);
  const std::string s(text);
  cairo_text_extents_t extents;
  cairo_text_extents(cr, s.c_str(), &extents);
  return extents.x_advance;
}

void draw_text(cairo_t* cr, std::string_view text, double x, double y, Font font, Rgb colour,
               HAlign halign, VAlign valign, double angle) {
  select_font(cr, font);
  const std::string s(text);
  cairo_text_extents_t extents;
  cairo_text_extents(cr, s.c_str(), &extents);
  cairo_font_extents_t fe;
  cairo_font_extents(cr, &fe);
  double dx = 0;
  if (halign == HAlign::center) dx = -extents.x_advance / 2;
  if (halign == HAlign::right) dx = -extents.x_advance;
  double dy = 0;
  if (valign == VAlign::top) dy = fe.ascent;
  if (valign == VAlign::middle) dy = (fe.ascent - fe.descent) / 2;
  if (valign == VAlign::bottom) dy = -fe.descent;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_rotate(cr, angle);
  cairo_move_to(cr, dx, dy);
  set_colour(cr, colour);
  cairo_show_text(cr, s.c_str());
  cairo_restore(cr);
}

void fill_rect(cairo_t* cr, double x, double y, double w, double h, Rgb colour) {
  set_colour(cr, colour);
  cairo_rectangle(cr, x, y, w, h);
  cairo_fill(cr);
}

void draw_line(cairo_t* cr, double x0, double y0, double x1, double y1, Rgb colour, double width,
               double dash) {
  // Odd widths sit on pixel centres so that horizontal and vertical lines stay crisp.
  const auto snap = [width](double v) {
    return std::lround(width) % 2 == 1 ? std::floor(v) + 0.5 : std::round(v);
  };
  if (x0 == x1) x0 = x1 = snap(x0);
  if (y0 == y1) y0 = y1 = snap(y0);
  cairo_save(cr);
  set_colour(cr, colour);
  cairo_set_line_width(cr, width);
  if (dash > 0) cairo_set_dash(cr, &dash, 1, 0);
  cairo_move_to(cr, x0, y0);
  cairo_line_to(cr, x1, y1);
  cairo_stroke(cr);
  cairo_restore(cr);
}

void stroke_rect(cairo_t* cr, double x, double y, double w, double h, Rgb colour) {
  cairo_save(cr);
  set_colour(cr, colour);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, std::round(x) - 0.5, std::round(y) - 0.5, std::round(w) + 1,
                  std::round(h) + 1);
  cairo_stroke(cr);
  cairo_restore(cr);
}

double Header::width(cairo_t* measure) const {
  return std::max(text_width(measure, title, kHeaderTitleFont),
                  text_width(measure, details, kHeaderDetailsFont));
}

double Header::height() const {
  return kHeaderTitleLine + (details.empty() ? 0 : kHeaderDetailsLine);
}

void Header::draw(cairo_t* cr, double x, double y) const {
  draw_text(cr, title, x, y, kHeaderTitleFont, palette::text, HAlign::left, VAlign::top);
  if (!details.empty()) {
    draw_text(cr, details, x, y + kHeaderTitleLine, kHeaderDetailsFont, palette::muted,
              HAlign::left, VAlign::top);
  }
}

double draw_legend_item(cairo_t* cr, double x, double y, Rgb colour, std::string_view label) {
  fill_rect(cr, x, std::round(y - kSwatch / 2), kSwatch, kSwatch, colour);
  draw_text(cr, label, x + kSwatch + 5, y, kLegendFont, palette::text, HAlign::left,
            VAlign::middle);
  return kSwatch + 5 + text_width(cr, label, kLegendFont);
}

std::string format_number(double value, int significant) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : std::string(kMinus) + "inf";
  if (value == 0) return "0";
  const double magnitude = std::abs(value);
  char buffer[64];
  std::string text;
  if (magnitude >= 1e5 || magnitude < 1e-3) {
    std::snprintf(buffer, sizeof buffer, "%.*e", significant - 1, magnitude);
    const std::string s(buffer);
    const std::size_t e = s.find('e');
    const int exponent = std::stoi(s.substr(e + 1));
    text = trim_zeros(s.substr(0, e)) + "e" + (exponent < 0 ? kMinus : "") +
           std::to_string(std::abs(exponent));
  } else {
    const int digits = static_cast<int>(std::floor(std::log10(magnitude)));
    std::snprintf(buffer, sizeof buffer, "%.*f", std::max(0, significant - 1 - digits), magnitude);
    text = trim_zeros(buffer);
  }
  if (value < 0 && text != "0") text = kMinus + text;
  return text;
}

std::string format_fixed(double value, int decimals) {
  if (!std::isfinite(value)) return format_number(value);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, std::abs(value));
  const std::string text(buffer);
  const bool zero = text.find_first_not_of("0.") == std::string::npos;
  return value < 0 && !zero ? kMinus + text : text;
}

std::vector<double> nice_ticks(double lo, double hi, int max_count) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) return {};
  if (lo == hi) return {lo};
  const double step = nice_step((hi - lo) / std::max(1, max_count));
  std::vector<double> ticks;
  // Steps below 1 divide by their integer reciprocal, so that 3 steps of 0.1 give 0.3 exactly.
  const double inverse = step < 1 ? std::round(1 / step) : 0;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1) {
    const double tick = inverse > 0 ? k / inverse : k * step;
    ticks.push_back(tick == 0 ? 0.0 : tick);
  }
  return ticks;
}

std::vector<std::int64_t> nice_index_ticks(std::int64_t first, std::int64_t last, int max_count) {
  if (last < first) return {};
  const double raw = static_cast<double>(last - first) / std::max(1, max_count);
  const auto step = std::max<std::int64_t>(1, std::llround(raw < 1 ? 1 : nice_step(raw)));
  std::vector<std::int64_t> ticks;
  for (std::int64_t t = (first + step - 1) / step * step; t <= last; t += step)
    ticks.push_back(t);
  return ticks;
}

}  // namespace lucid::quantization::report
