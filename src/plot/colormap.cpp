// Internal: colour maps (viridis-like sequential, RdBu diverging) and value-to-colour scales.
#include "plot/colormap.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace lucid::quantization::report {
namespace {

constexpr Rgb hex(unsigned rgb) {
  return {((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0};
}

// matplotlib's viridis at t = 0, 0.1, ..., 1.
constexpr std::array<Rgb, 11> kViridis{hex(0x440154), hex(0x482475), hex(0x414487), hex(0x355f8d),
                                       hex(0x2a788e), hex(0x21918c), hex(0x22a884), hex(0x44bf70),
                                       hex(0x7ad151), hex(0xbddf26), hex(0xfde725)};
// ColorBrewer RdBu (11 classes), reversed: blue for low values, red for high.
constexpr std::array<Rgb, 11> kRdBuReversed{
    hex(0x053061), hex(0x2166ac), hex(0x4393c3), hex(0x92c5de), hex(0xd1e5f0), hex(0xf7f7f7),
    hex(0xfddbc7), hex(0xf4a582), hex(0xd6604d), hex(0xb2182b), hex(0x67001f)};

Rgb interpolate(const std::array<Rgb, 11>& table, double t) {
  const double x = std::clamp(t, 0.0, 1.0) * static_cast<double>(table.size() - 1);
  const auto i = std::min(static_cast<std::size_t>(x), table.size() - 2);
  const double f = x - static_cast<double>(i);
  const Rgb& a = table[i];
  const Rgb& b = table[i + 1];
  return {a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

}  // namespace

Rgb sample_colormap(ColormapKind kind, double t) {
  return interpolate(kind == ColormapKind::sequential ? kViridis : kRdBuReversed, t);
}

ColorScale ColorScale::sequential(double lo, double hi) {
  if (!(hi > lo)) hi = lo + std::max(std::abs(lo) * 0.5, 1.0);
  return {ColormapKind::sequential, lo, hi, lo};
}

ColorScale ColorScale::diverging(double lo, double hi, double centre) {
  return {ColormapKind::diverging, lo, hi, centre};
}

Rgb ColorScale::at(double value) const {
  if (!std::isfinite(value)) return palette::non_finite;
  if (kind == ColormapKind::sequential) return sample_colormap(kind, (value - lo) / (hi - lo));
  const double half = std::max(centre - lo, hi - centre);
  return sample_colormap(kind, half > 0 ? 0.5 + (value - centre) / (2 * half) : 0.5);
}

Rgb text_colour_on(Rgb background) {
  const double luminance = 0.2126 * background.r + 0.7152 * background.g + 0.0722 * background.b;
  return luminance > 0.5 ? palette::text : Rgb{1, 1, 1};
}

}  // namespace lucid::quantization::report
