// Internal: colour maps (sequential viridis-like, diverging blue-white-red) and value scales.
#pragma once

#include "plot/draw.hpp"

namespace lucid::quantization::report {

enum class ColormapKind { sequential, diverging };

/// The colour of `t` in [0, 1] (clamped) on a map: `sequential` is viridis (dark purple to
/// yellow, perceptually uniform), `diverging` is ColorBrewer's RdBu reversed (blue, white at
/// 0.5, red).
Rgb sample_colormap(ColormapKind kind, double t);

/// Maps values in [lo, hi] to colours. A sequential scale spreads [lo, hi] over the whole
/// map; a diverging scale puts `centre` at white and uses one slope on both sides, the
/// larger of centre - lo and hi - centre reaching the map's end, so equal distances from
/// the centre get equally strong colours. Non-finite values get palette::non_finite.
struct ColorScale {
  ColormapKind kind = ColormapKind::sequential;
  double lo = 0;
  double hi = 1;
  double centre = 0;

  /// A sequential scale over [lo, hi]; widened around lo when the range is empty.
  static ColorScale sequential(double lo, double hi);
  /// A diverging scale over [lo, hi] centred on `centre` (which must lie in [lo, hi]).
  static ColorScale diverging(double lo, double hi, double centre);

  Rgb at(double value) const;
};

/// Black or white, whichever reads better on `background`.
Rgb text_colour_on(Rgb background);

}  // namespace lucid::quantization::report
