// Internal: Cairo surfaces for figures and their atomic output as PNG or SVG files.
#include "plot/figure.hpp"

#include <cairo-svg.h>

#include <cctype>
#include <cmath>
#include <string>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization::report {
namespace {

// Cairo image surfaces are limited to 32767 pixels a side.
constexpr double kMaxPixels = 32767;

// Cairo's write callback: appends to the std::string `closure`. Must not throw into C code.
cairo_status_t append_bytes(void* closure, const unsigned char* data, unsigned int length) {
  try {
    static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
    return CAIRO_STATUS_SUCCESS;
  } catch (...) {
    return CAIRO_STATUS_WRITE_ERROR;
  }
}

void check(cairo_status_t status, const std::filesystem::path& out, const char* step) {
  if (status != CAIRO_STATUS_SUCCESS) {
    throw Error(out.string() + ": cannot " + step + " (cairo: " + cairo_status_to_string(status) +
                ")");
  }
}

// Draws on `surface` over a white background; checks the context's status afterwards.
void paint(cairo_surface_t* surface, const std::filesystem::path& out,
           const std::function<void(cairo_t*)>& draw) {
  const CairoPtr cr(cairo_create(surface));
  cairo_set_source_rgb(cr.get(), 1, 1, 1);
  cairo_paint(cr.get());
  draw(cr.get());
  check(cairo_status(cr.get()), out, "draw the figure");
}

std::string render_png(const std::filesystem::path& out, int width, int height,
                       const std::function<void(cairo_t*)>& draw) {
  const SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
  check(cairo_surface_status(surface.get()), out, "create a PNG surface");
  paint(surface.get(), out, draw);
  std::string bytes;
  check(cairo_surface_write_to_png_stream(surface.get(), append_bytes, &bytes), out,
        "encode the PNG");
  return bytes;
}

std::string render_svg(const std::filesystem::path& out, double width, double height,
                       const std::function<void(cairo_t*)>& draw) {
  std::string bytes;
  const SurfacePtr surface(
      cairo_svg_surface_create_for_stream(append_bytes, &bytes, width, height));
  check(cairo_surface_status(surface.get()), out, "create an SVG surface");
  cairo_svg_surface_set_document_unit(surface.get(), CAIRO_SVG_UNIT_PX);
  paint(surface.get(), out, draw);
  cairo_surface_finish(surface.get());
  check(cairo_surface_status(surface.get()), out, "write the SVG");
  return bytes;
}

}  // namespace

Format format_of(const std::filesystem::path& out) {
  std::string ext = out.extension().string();
  for (char& c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".png") return Format::png;
  if (ext == ".svg") return Format::svg;
  throw Error("plot output " + out.string() + ": extension '" + out.extension().string() +
              "' is not supported (expected .png or .svg)");
}

CairoPtr measuring_context() {
  const SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  return CairoPtr(cairo_create(surface.get()));
}

FigureFile::FigureFile(const std::filesystem::path& out, bool overwrite)
    : out_(out), format_(format_of(out)), file_(out, overwrite) {}

void FigureFile::write(double width, double height, const std::function<void(cairo_t*)>& draw) {
  const double w = std::ceil(width);
  const double h = std::ceil(height);
  if (!(w >= 1 && h >= 1 && w <= kMaxPixels && h <= kMaxPixels)) {
    throw Error(out_.string() + ": the figure would be " + std::to_string(std::llround(w)) + " x " +
                std::to_string(std::llround(h)) + " pixels (expected at most 32767 a side)");
  }
  file_.write(format_ == Format::png
                  ? render_png(out_, static_cast<int>(w), static_cast<int>(h), draw)
                  : render_svg(out_, w, h, draw));
  file_.commit();
}

}  // namespace lucid::quantization::report
