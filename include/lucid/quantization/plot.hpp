// Plots of a quantization as PNG or SVG files (library lucidq::plot, drawn with Cairo).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// A half-open index range [begin, end) of one dimension; `end` unset means "to the end".
struct Slice {
  std::int64_t begin = 0;
  std::optional<std::int64_t> end;
};

/// Parses "a:b", "a:", ":b" or ":" (non-negative integers) into a Slice. Checks only the
/// syntax and a < b; the fit to a tensor is checked where the slice is used.
/// Throws Error naming `option` and the text, e.g. "--rows = 5:3 (expected a:b with a < b)".
Slice parse_slice(std::string_view text, std::string_view option);

/// What the per-channel error bars of plot_tensor_report() show.
enum class ChannelMetric : std::uint8_t { mse, sqnr_db };

/// Options of the plot functions. Every field has a sensible default.
struct PlotOptions {
  /// Rows / columns of the 2-D view to draw in the heatmaps (see plot_quantization_errors).
  /// Each must satisfy 0 <= begin < end <= the dimension, else the plot throws Error naming
  /// "rows" or "cols" and the value.
  std::optional<Slice> rows;
  std::optional<Slice> cols;
  /// The figure's title; empty: a title describing the tensor and its quantization.
  std::string title;
  /// Replace an existing output file. Without it an existing file is an Error.
  bool overwrite = false;
  /// Write each cell's value into it when the drawn slice has at most 16 x 16 cells.
  bool annotate = true;
  /// Histogram: logarithmic count axis.
  bool log_counts = false;
  /// Histogram bins; 0 picks 2 sqrt(n) clamped to [10, 100].
  int histogram_bins = 0;
  /// Per-channel error bars of plot_tensor_report.
  ChannelMetric channel_metric = ChannelMetric::mse;
  /// The code grid of the array overload of plot_quantization_errors, for its title and
  /// colour range. Unset: taken from the codes' element type (int8 -> qint8, uint8 -> quint8,
  /// int16 -> qint16, uint16 -> 16-bit unsigned) or, for int32 codes, their observed range.
  std::optional<QDtype> code_dtype;
};

/// Draws the "Quantization in Depth" notes' plot_quantization_errors figure to `out`: four
/// heatmaps in a row, each with a title and a colour bar:
///   1. the original tensor,
///   2. the n-bit integer codes (colour range = the dtype's [quant_min, quant_max]),
///   3. the dequantized tensor (same colour range as the original),
///   4. the absolute error |dequantized - original|.
/// Original and dequantized share one colour scale: a diverging blue-white-red map with
/// white at 0 when the values have both signs, else a perceptual sequential (viridis-like)
/// map; the codes and the error use the sequential map. NaN / +-Inf cells are drawn magenta
/// and counted in the panel subtitles and the figure's details line. The details line gives
/// the shape, the slice, scale and zero point (per-tensor), MSE, SQNR, max |error| (over the
/// drawn slice) and, for the whole tensor, the share of saturated codes.
///
/// Shapes: a 1-D tensor is a 1 x N strip, a scalar a 1 x 1 cell, and a tensor of rank > 2
/// is viewed as [product of the leading dimensions, last dimension]. options.rows / cols
/// select a slice of that view (axis labels keep the original indices). Slices larger than
/// 256 x 256 cells are reduced by averaging blocks (the error panel keeps each block's
/// largest error; a block holding a non-finite value is drawn as non-finite). Cells carry
/// their values when the slice has at most 16 x 16 cells (options.annotate), with one
/// number of decimals per panel. An empty tensor is an Error, not an empty figure.
///
/// Output: PNG when `out` ends in ".png", SVG when it ends in ".svg" (any case). The file
/// is written to a temporary file in the same directory and renamed into place, so a
/// failure never leaves a partial file; an existing file is replaced only with
/// options.overwrite. Throws Error for another extension, an existing file, an empty
/// tensor, mismatched shapes, a bad slice or an I/O failure; the message names the
/// argument and the value. Thread-safe for distinct outputs.
///
///   plot_quantization_errors(x, quantize(x, qparams), "errors.png");
void plot_quantization_errors(const TensorView& original, const QuantizedTensor& quantized,
                              const std::filesystem::path& out, const PlotOptions& options = {});

/// The same figure from plain arrays, as the notes' helper takes them: `codes` is an
/// integer tensor (int8, uint8, int16, uint16 or int32) and `dequantized` a floating one,
/// both with the original's shape. The code grid comes from options.code_dtype or the
/// codes' element type (see PlotOptions). Throws Error as above, and when the shapes
/// differ or an element type is not accepted.
void plot_quantization_errors(const TensorView& original, const TensorView& codes,
                              const TensorView& dequantized, const std::filesystem::path& out,
                              const PlotOptions& options = {});
/// The same with int32 codes in a span (row-major, the original's element count).
void plot_quantization_errors(const TensorView& original, std::span<const std::int32_t> codes,
                              const TensorView& dequantized, const std::filesystem::path& out,
                              const PlotOptions& options = {});

/// Draws the distribution report of a quantized tensor to `out`, a second figure:
///   - a histogram of the original's finite values (options.log_counts for a log count
///     axis) with the clipping range [s (quant_min - z), s (quant_max - z)] as dashed
///     vertical lines, values outside it in a warm colour, and, when at most 64 grid points
///     s (q - z) fall in view, those grid points as ticks along the top. Per-channel and
///     per-group tensors mark the widest clipping range over their channels and draw no
///     grid (each channel has its own);
///   - for per-channel and per-group tensors, below it, bar charts of the scale and of the
///     error (options.channel_metric: MSE or SQNR in dB) per channel (per group for
///     per-group tensors, in parameter order). With more channels than fit one pixel
///     column each, a bar spans several channels and shows their minimum and maximum.
/// The report always covers the whole tensor: options.rows / cols are not used.
/// Output and errors as for plot_quantization_errors.
void plot_tensor_report(const TensorView& original, const QuantizedTensor& quantized,
                        const std::filesystem::path& out, const PlotOptions& options = {});

}  // namespace lucid::quantization
