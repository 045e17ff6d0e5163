// Internal: Cairo handles, the output format of a path, and writing a figure atomically.
#pragma once

#include <cairo.h>

#include <filesystem>
#include <functional>
#include <memory>

#include "support/atomic_file.hpp"

namespace lucid::quantization::report {

/// Owning handle of a cairo_t.
struct CairoDeleter {
  void operator()(cairo_t* cr) const { cairo_destroy(cr); }
  void operator()(cairo_surface_t* surface) const { cairo_surface_destroy(surface); }
};
using CairoPtr = std::unique_ptr<cairo_t, CairoDeleter>;
using SurfacePtr = std::unique_ptr<cairo_surface_t, CairoDeleter>;

/// The file formats a figure can be written as.
enum class Format { png, svg };

/// The format `out`'s extension names (".png" or ".svg", any case). Throws Error naming the
/// path and the accepted extensions otherwise.
Format format_of(const std::filesystem::path& out);

/// A context on a 1 x 1 image surface, for measuring text before a figure's size is known.
CairoPtr measuring_context();

/// An output file for one figure, opened before the figure is computed so that a bad path
/// fails fast. The constructor checks the extension (format_of) and creates a temporary file
/// in out's directory (support/atomic_file.hpp); write() renders the figure into it and renames it
/// onto `out`. An existing file is replaced only when `overwrite` is true. On any error
/// (including one thrown by `draw` or reported by Cairo), and when the object is destroyed
/// without a successful write(), no file and no temporary file remain. Throws Error naming
/// the path. Move-only, not thread-safe.
class FigureFile {
 public:
  FigureFile(const std::filesystem::path& out, bool overwrite);

  /// Draws a width x height figure (pixels; SVG user units) with `draw` on a white background
  /// and commits the file. At most 32767 pixels a side.
  void write(double width, double height, const std::function<void(cairo_t*)>& draw);

 private:
  std::filesystem::path out_;
  Format format_;
  detail::AtomicFile file_;
};

}  // namespace lucid::quantization::report
