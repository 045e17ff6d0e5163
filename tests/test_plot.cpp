// Tests for plot.hpp (lucidq::plot): files written, formats, safety, shapes, slices, internals.
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "lucid/quantization.hpp"
#include "lucid/quantization/plot.hpp"
#include "plot/bars.hpp"
#include "plot/colormap.hpp"
#include "plot/draw.hpp"
#include "plot/figure.hpp"
#include "plot/grid.hpp"
#include "plot/heatmap.hpp"
#include "plot/histogram.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
namespace R = lucid::quantization::report;
namespace fs = std::filesystem;

namespace {

// The seed-004 worked example: qint8, scale 3.5, zero point -70.
const std::vector<float> kSeed{191.6f,  -13.5f, 728.6f, 92.14f, 295.5f,
                               -184.0f, 0.0f,   684.6f, 245.5f};

Q::QuantizedTensor seed_quantized() {
  return Q::quantize(Q::TensorView(kSeed, {3, 3}), Q::QParams::per_tensor(3.5f, -70, Q::qint8));
}

// A smooth, deterministic weight-like matrix whose rows have different ranges.
std::vector<float> weights(std::int64_t rows, std::int64_t cols) {
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      w[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(
          (1 + r % 7) * 0.01 * std::sin(0.37 * static_cast<double>(r * cols + c)));
    }
  }
  return w;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Size {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
};

// Width and height from the PNG's IHDR chunk (bytes 16..23, big-endian).
Size png_ihdr_size(const fs::path& path) {
  const std::string b = read_bytes(path);
  if (b.size() < 24) return {};
  const auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i)
      v = (v << 8) | static_cast<unsigned char>(b[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

// The PNG decoded by Cairo: its size and its pixels as 0xRRGGBB.
struct Pixels {
  Size size;
  std::vector<std::uint32_t> rgb;

  std::size_t distinct() const { return std::set<std::uint32_t>(rgb.begin(), rgb.end()).size(); }
  std::size_t count(std::uint32_t colour) const {
    return static_cast<std::size_t>(std::count(rgb.begin(), rgb.end(), colour));
  }
};

Pixels load_png(const fs::path& path) {
  Pixels pixels;
  cairo_surface_t* s = cairo_image_surface_create_from_png(path.c_str());
  if (cairo_surface_status(s) == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(s);
    const int w = cairo_image_surface_get_width(s);
    const int h = cairo_image_surface_get_height(s);
    const int stride = cairo_image_surface_get_stride(s);
    const unsigned char* data = cairo_image_surface_get_data(s);
    pixels.size = {static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h)};
    for (int y = 0; y < h; ++y) {
      const auto* row = reinterpret_cast<const std::uint32_t*>(data + y * stride);
      for (int x = 0; x < w; ++x)
        pixels.rgb.push_back(row[x] & 0xffffffu);
    }
  }
  cairo_surface_destroy(s);
  return pixels;
}

constexpr std::uint32_t kMagenta = 0xff00ff;

// The width and height attributes of an SVG's root element, in px.
Size svg_size(const std::string& svg) {
  const auto attribute = [&](const std::string& name) -> std::uint32_t {
    const std::size_t at = svg.find(name + "=\"");
    return at == std::string::npos
               ? 0
               : static_cast<std::uint32_t>(std::stoul(svg.substr(at + name.size() + 2)));
  };
  return {attribute("width"), attribute("height")};
}

// Each test writes into a fresh directory of its own, removed afterwards.
class Plot : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("lucidq_test_plot_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path path(const std::string& name) const { return dir_ / name; }
  // The names of everything in the directory, sorted.
  std::set<std::string> entries() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.insert(e.path().filename().string());
    return names;
  }

  fs::path dir_;
};

using Names = std::set<std::string>;

// Frees Cairo's and fontconfig's process-wide font caches at exit, so that LeakSanitizer
// (LUCIDQ_SANITIZE=ON) reports only real leaks: those caches live until exit by design.
class FreeFontCaches : public ::testing::Environment {
 public:
  void TearDown() override {
    cairo_debug_reset_static_data();
    FcFini();
  }
};
const auto* const kFreeFontCaches = ::testing::AddGlobalTestEnvironment(new FreeFontCaches);

}  // namespace

// --- files and formats ------------------------------------------------------------------

TEST_F(Plot, Seed004PngIsWrittenAndLooksLikeAFigure) {
  const fs::path out = path("seed.png");
  Q::plot_quantization_errors(Q::TensorView(kSeed, {3, 3}), seed_quantized(), out);
  const std::string bytes = read_bytes(out);
  ASSERT_GT(bytes.size(), 8000u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  const Size ihdr = png_ihdr_size(out);
  const Pixels pixels = load_png(out);
  EXPECT_EQ(pixels.size.width, ihdr.width);
  EXPECT_EQ(pixels.size.height, ihdr.height);
  // Four panels in a row: a wide figure of sensible size.
  EXPECT_GT(ihdr.width, 3 * ihdr.height);
  EXPECT_GE(ihdr.width, 800u);
  EXPECT_LE(ihdr.width, 2000u);
  EXPECT_GE(ihdr.height, 250u);
  // Colour maps, text and the white background: many colours, mostly white, no magenta.
  EXPECT_GT(pixels.distinct(), 100u);
  EXPECT_GT(pixels.count(0xffffff), pixels.rgb.size() / 3);
  EXPECT_LT(pixels.count(0xffffff), pixels.rgb.size());
  EXPECT_EQ(pixels.count(kMagenta), 0u);
  EXPECT_EQ(entries(), Names{"seed.png"});
}

TEST_F(Plot, SvgIsWrittenWithTheSameSizeAsThePng) {
  const Q::TensorView x(kSeed, {3, 3});
  Q::plot_quantization_errors(x, seed_quantized(), path("seed.svg"));
  Q::plot_quantization_errors(x, seed_quantized(), path("seed.png"));
  const std::string svg = read_bytes(path("seed.svg"));
  ASSERT_GT(svg.size(), 10000u);
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\"", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("<path"), std::string::npos);  // glyphs and shapes
  const Size png = png_ihdr_size(path("seed.png"));
  const Size s = svg_size(svg);
  EXPECT_EQ(s.width, png.width);
  EXPECT_EQ(s.height, png.height);
}

TEST_F(Plot, ExtensionIsCaseInsensitive) {
  Q::plot_quantization_errors(Q::TensorView(kSeed, {3, 3}), seed_quantized(), path("A.PNG"));
  Q::plot_tensor_report(Q::TensorView(kSeed, {3, 3}), seed_quantized(), path("B.Svg"));
  EXPECT_EQ(read_bytes(path("A.PNG")).substr(1, 3), "PNG");
  EXPECT_EQ(read_bytes(path("B.Svg")).substr(0, 5), "<?xml");
}

TEST_F(Plot, BadExtensionIsAnErrorNamingThePath) {
  const Q::TensorView x(kSeed, {3, 3});
  for (const char* name : {"plot.jpg", "plot", "plot.png.txt"}) {
    const fs::path out = path(name);
    EXPECT_ERROR_CONTAINS(Q::plot_quantization_errors(x, seed_quantized(), out), out.string());
    EXPECT_ERROR_CONTAINS(Q::plot_tensor_report(x, seed_quantized(), out), "expected .png or .svg");
  }
  EXPECT_EQ(entries(), Names{});
}

TEST_F(Plot, ExistingFileIsReplacedOnlyWithOverwrite) {
  const fs::path out = path("keep.png");
  { std::ofstream(out) << "precious"; }
  const Q::TensorView x(kSeed, {3, 3});
  EXPECT_ERROR_CONTAINS(Q::plot_quantization_errors(x, seed_quantized(), out), "already exists");
  EXPECT_ERROR_CONTAINS(Q::plot_tensor_report(x, seed_quantized(), out), "already exists");
  EXPECT_EQ(read_bytes(out), "precious");
  EXPECT_EQ(entries(), Names{"keep.png"});

  Q::PlotOptions options;
  options.overwrite = true;
  Q::plot_quantization_errors(x, seed_quantized(), out, options);
  EXPECT_EQ(read_bytes(out).substr(1, 3), "PNG");
  Q::plot_tensor_report(x, seed_quantized(), out, options);
  EXPECT_EQ(read_bytes(out).substr(1, 3), "PNG");
  EXPECT_EQ(entries(), Names{"keep.png"});
}

TEST_F(Plot, NoTemporaryFileIsLeftAfterSuccessOrFailure) {
  const Q::TensorView x(kSeed, {3, 3});
  Q::plot_quantization_errors(x, seed_quantized(), path("a.png"));
  Q::plot_tensor_report(x, seed_quantized(), path("b.svg"));
  Q::PlotOptions bad;
  bad.rows = Q::Slice{2, 9};
  EXPECT_THROW(Q::plot_quantization_errors(x, seed_quantized(), path("c.png"), bad), Q::Error);
  EXPECT_THROW(Q::plot_quantization_errors(x, seed_quantized(), path("a.png")), Q::Error);
  EXPECT_THROW(Q::plot_quantization_errors(x, seed_quantized(), path("d.gif")), Q::Error);
  const std::vector<float> none;
  EXPECT_THROW(Q::plot_tensor_report(Q::TensorView(none, {0, 3}),
                                     Q::quantize(Q::TensorView(none, {0, 3}),
                                                 Q::QParams::per_tensor(1.0f, 0, Q::qint8)),
                                     path("e.png")),
               Q::Error);
  EXPECT_EQ(entries(), (Names{"a.png", "b.svg"}));
}

TEST_F(Plot, FailedDrawingLeavesNoFileAndKeepsTheOldOne) {
  const auto write = [](const fs::path& out, bool overwrite, double w, double h, auto draw) {
    R::FigureFile(out, overwrite).write(w, h, draw);
  };
  const auto throws = [](cairo_t*) { throw Q::Error("boom"); };
  EXPECT_ERROR_CONTAINS(write(path("new.png"), false, 50, 40, throws), "boom");
  { std::ofstream(path("old.svg")) << "old"; }
  EXPECT_ERROR_CONTAINS(write(path("old.svg"), true, 50, 40, throws), "boom");
  // A drawing error inside Cairo (restore without save) is reported with Cairo's words.
  const auto bad_cairo = [](cairo_t* cr) { cairo_restore(cr); };
  EXPECT_ERROR_CONTAINS(write(path("new.png"), false, 50, 40, bad_cairo),
                        "cannot draw the figure (cairo: ");
  EXPECT_ERROR_CONTAINS(write(path("big.png"), false, 40000, 40, bad_cairo),
                        "40000 x 40 pixels (expected at most 32767 a side)");
  // Opened but never written (the figure's computation failed): nothing remains.
  { const R::FigureFile unused(path("unused.png"), false); }
  EXPECT_EQ(read_bytes(path("old.svg")), "old");
  EXPECT_EQ(entries(), Names{"old.svg"});
  write(path("ok.png"), false, 50, 40, [](cairo_t*) {});
  EXPECT_EQ(png_ihdr_size(path("ok.png")).width, 50u);
  EXPECT_EQ(png_ihdr_size(path("ok.png")).height, 40u);
  EXPECT_EQ(load_png(path("ok.png")).count(0xffffff), 50u * 40u);  // a white background
}

TEST_F(Plot, MissingDirectoryIsAnErrorNamingThePath) {
  const fs::path out = path("no/such/dir/x.png");
  EXPECT_ERROR_CONTAINS(
      Q::plot_quantization_errors(Q::TensorView(kSeed, {3, 3}), seed_quantized(), out),
      out.string());
}

// --- shapes --------------------------------------------------------------------------------

TEST_F(Plot, MatrixViewOfEachRank) {
  EXPECT_EQ(R::matrix_dims({}).rows, 1);
  EXPECT_EQ(R::matrix_dims({}).cols, 1);
  EXPECT_EQ(R::matrix_dims({200}).rows, 1);
  EXPECT_EQ(R::matrix_dims({200}).cols, 200);
  EXPECT_EQ(R::matrix_dims({3, 4}).rows, 3);
  EXPECT_EQ(R::matrix_dims({2, 3, 4, 5}).rows, 24);
  EXPECT_EQ(R::matrix_dims({2, 3, 4, 5}).cols, 5);
}

TEST_F(Plot, OneDimensionalTensorIsAFlatStrip) {
  std::vector<float> v(200);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i)));
  const Q::TensorView strip(v, {200});
  const Q::TensorView square(v, {10, 20});
  Q::plot_quantization_errors(strip, Q::quantize(strip, Q::per_tensor_affine, Q::qint4),
                              path("1d.png"));
  Q::plot_quantization_errors(square, Q::quantize(square, Q::per_tensor_affine, Q::qint4),
                              path("2d.png"));
  const Size a = png_ihdr_size(path("1d.png"));
  const Size b = png_ihdr_size(path("2d.png"));
  EXPECT_LT(a.height + 40, b.height);
  EXPECT_GT(load_png(path("1d.png")).distinct(), 50u);
  // A scalar is one cell.
  const float one = 0.25f;
  const Q::TensorView scalar(&one, Q::ScalarType::float32, {});
  Q::plot_quantization_errors(scalar, Q::quantize(scalar, Q::per_tensor_affine, Q::quint8),
                              path("0d.png"));
  EXPECT_GT(png_ihdr_size(path("0d.png")).width, 0u);
}

TEST_F(Plot, FourDimensionalTensorIsViewedAsAMatrix) {
  const std::vector<float> v = weights(2 * 3 * 4, 5);
  const Q::TensorView x(v, {2, 3, 4, 5});
  const auto q = Q::quantize(x, Q::per_channel_symmetric, Q::qint8, 1);
  Q::plot_quantization_errors(x, q, path("4d.png"));
  Q::plot_tensor_report(x, q, path("4d_report.png"));
  EXPECT_GT(load_png(path("4d.png")).distinct(), 100u);
  EXPECT_GT(load_png(path("4d_report.png")).distinct(), 20u);
}

TEST_F(Plot, EmptyTensorIsAClearError) {
  const std::vector<float> none;
  const Q::TensorView x(none, {0, 3});
  const auto q = Q::quantize(x, Q::QParams::per_tensor(1.0f, 0, Q::qint8));
  EXPECT_ERROR_CONTAINS(Q::plot_quantization_errors(x, q, path("e.png")),
                        "original has shape [0, 3], no elements");
  EXPECT_ERROR_CONTAINS(Q::plot_tensor_report(x, q, path("e.png")), "no elements");
  EXPECT_EQ(entries(), Names{});
}

TEST_F(Plot, LargeMatricesAreReducedNotEnlarged) {
  const std::vector<float> small = weights(300, 300);
  const std::vector<float> large = weights(2000, 1500);
  const Q::TensorView s(small, {300, 300});
  const Q::TensorView l(large, {2000, 1500});
  Q::plot_quantization_errors(s, Q::quantize(s, Q::per_channel_symmetric, Q::qint8, 0),
                              path("s.png"));
  Q::plot_quantization_errors(l, Q::quantize(l, Q::per_channel_symmetric, Q::qint8, 0),
                              path("l.png"));
  const Size a = png_ihdr_size(path("s.png"));
  const Size b = png_ihdr_size(path("l.png"));
  EXPECT_LE(b.width, a.width + 40);
  EXPECT_LE(b.height, a.height + 40);
  EXPECT_LE(b.width, 2000u);
}

// --- non-finite values ---------------------------------------------------------------------

TEST_F(Plot, NonFiniteValuesAreDrawnMagentaAndNeverCrash) {
  std::vector<float> v = weights(6, 7);
  const Q::TensorView clean(v, {6, 7});
  Q::plot_quantization_errors(clean, Q::quantize(clean, Q::per_tensor_affine, Q::qint8),
                              path("clean.png"));
  v[3] = NAN;
  v[10] = INFINITY;
  v[20] = -INFINITY;
  const Q::TensorView x(v, {6, 7});
  const auto q = Q::quantize(x, Q::per_tensor_affine, Q::qint8);
  Q::plot_quantization_errors(x, q, path("nan.png"));
  Q::plot_quantization_errors(x, q, path("nan.svg"));
  Q::plot_tensor_report(x, q, path("nan_report.png"));
  EXPECT_EQ(load_png(path("clean.png")).count(kMagenta), 0u);
  // 3 cells in the original panel and 3 in the error panel, each many pixels, plus the legend.
  EXPECT_GT(load_png(path("nan.png")).count(kMagenta), 6u * 100u);

  std::vector<float> all_nan(12, NAN);
  const Q::TensorView n(all_nan, {3, 4});
  const auto qn = Q::quantize(n, Q::per_tensor_affine, Q::quint8);
  Q::plot_quantization_errors(n, qn, path("all_nan.png"));
  Q::plot_tensor_report(n, qn, path("all_nan_report.png"));
  EXPECT_GT(png_ihdr_size(path("all_nan_report.png")).width, 0u);
}

TEST_F(Plot, NonFiniteCellsAreCountedAndKeepTheirValue) {
  const std::vector<double> v{1, NAN, 2, 3, INFINITY, 5};
  const R::Window w{0, 2, 0, 3};
  const R::CellGrid g = R::reduce_to_cells(
      w, R::Reduce::mean, 256,
      [&](std::int64_t r, std::int64_t c) { return v[static_cast<std::size_t>(r * 3 + c)]; });
  EXPECT_EQ(g.nonfinite, 2);
  EXPECT_TRUE(std::isnan(g.at(0, 1)));
  EXPECT_TRUE(std::isinf(g.at(1, 1)));
  EXPECT_EQ(R::cell_label(g.at(0, 1), {}), "NaN");
  EXPECT_EQ(R::cell_label(-INFINITY, {}), "\xe2\x88\x92inf");
}

// --- slices --------------------------------------------------------------------------------

TEST_F(Plot, ParseSliceForms) {
  EXPECT_EQ(Q::parse_slice("2:5", "--rows").begin, 2);
  EXPECT_EQ(Q::parse_slice("2:5", "--rows").end, 5);
  EXPECT_EQ(Q::parse_slice("3:", "--rows").begin, 3);
  EXPECT_FALSE(Q::parse_slice("3:", "--rows").end.has_value());
  EXPECT_EQ(Q::parse_slice(":4", "--cols").begin, 0);
  EXPECT_EQ(Q::parse_slice(":4", "--cols").end, 4);
  EXPECT_FALSE(Q::parse_slice(":", "--cols").end.has_value());
  EXPECT_ERROR_CONTAINS(Q::parse_slice("5:3", "--rows"), "--rows = 5:3 (expected a:b with a < b)");
  EXPECT_ERROR_CONTAINS(Q::parse_slice("4:4", "--rows"), "--rows = 4:4");
  EXPECT_ERROR_CONTAINS(Q::parse_slice("3", "--cols"), "--cols = 3 (expected a:b");
  EXPECT_ERROR_CONTAINS(Q::parse_slice("-1:2", "--cols"), "--cols = -1:2");
  EXPECT_ERROR_CONTAINS(Q::parse_slice("a:b", "--cols"), "--cols = a:b");
  EXPECT_ERROR_CONTAINS(Q::parse_slice("1:2x", "--cols"), "--cols = 1:2x");
}

TEST_F(Plot, SliceSelectsAWindowWithItsIndices) {
  const R::Window w = R::resolve_window({40, 30}, Q::Slice{10, 20}, Q::Slice{5, std::nullopt});
  EXPECT_EQ(w.row0, 10);
  EXPECT_EQ(w.rows, 10);
  EXPECT_EQ(w.col0, 5);
  EXPECT_EQ(w.cols, 25);
  EXPECT_FALSE(w.covers({40, 30}));
  EXPECT_TRUE(R::resolve_window({40, 30}, std::nullopt, std::nullopt).covers({40, 30}));

  const std::vector<float> v = weights(40, 30);
  const Q::TensorView x(v, {40, 30});
  const auto q = Q::quantize(x, Q::per_channel_affine, Q::quint8, 0);
  Q::PlotOptions options;
  options.rows = Q::parse_slice("10:14", "--rows");
  options.cols = Q::parse_slice("0:4", "--cols");
  Q::plot_quantization_errors(x, q, path("slice.png"), options);
  Q::plot_quantization_errors(x, q, path("whole.png"));
  // A 4 x 4 slice is annotated, so its cells (and the figure) are larger than the 40 x 30 view's.
  EXPECT_NE(png_ihdr_size(path("slice.png")).width, png_ihdr_size(path("whole.png")).width);
  EXPECT_GT(load_png(path("slice.png")).distinct(), 100u);
}

TEST_F(Plot, BadSlicesNameTheOptionAndValue) {
  const Q::TensorView x(kSeed, {3, 3});
  Q::PlotOptions options;
  options.rows = Q::Slice{2, 5};
  EXPECT_ERROR_CONTAINS(Q::plot_quantization_errors(x, seed_quantized(), path("x.png"), options),
                        "rows = 2:5 (expected a:b with 0 <= a < b <= 3");
  options.rows = Q::Slice{3, std::nullopt};
  EXPECT_ERROR_CONTAINS(Q::plot_quantization_errors(x, seed_quantized(), path("x.png"), options),
                        "rows = 3: (expected");
  options.rows.reset();
  options.cols = Q::Slice{2, 1};
  EXPECT_ERROR_CONTAINS(Q::plot_quantization_errors(x, seed_quantized(), path("x.png"), options),
                        "cols = 2:1");
  options.cols = Q::Slice{-1, 2};
  EXPECT_ERROR_CONTAINS(Q::plot_quantization_errors(x, seed_quantized(), path("x.png"), options),
                        "cols = -1:2");
  // A 1-D tensor has one row.
  options.cols.reset();
  options.rows = Q::Slice{0, 2};
  const Q::TensorView strip(kSeed, {9});
  EXPECT_ERROR_CONTAINS(
      Q::plot_quantization_errors(strip, Q::quantize(strip, Q::per_tensor_affine, Q::qint8),
                                  path("x.png"), options),
      "rows = 0:2 (expected a:b with 0 <= a < b <= 1");
  EXPECT_EQ(entries(), Names{});
}

// --- the array overloads -------------------------------------------------------------------

TEST_F(Plot, ArrayOverloadsMatchTheQuantizedTensorFigure) {
  const Q::TensorView x(kSeed, {3, 3});
  const auto q = seed_quantized();
  const std::vector<std::int32_t> codes = q.int_repr();
  const Q::Tensor deq = Q::dequantize(q);
  Q::plot_quantization_errors(x, codes, deq.view(), path("span.png"));
  std::vector<std::int8_t> narrow(codes.begin(), codes.end());
  Q::plot_quantization_errors(x, Q::TensorView(narrow.data(), Q::ScalarType::int8, {3, 3}),
                              deq.view(), path("int8.png"));
  Q::plot_quantization_errors(x, q, path("tensor.png"));
  // Same panels; only the header text differs.
  EXPECT_EQ(png_ihdr_size(path("span.png")).height, png_ihdr_size(path("tensor.png")).height);
  EXPECT_EQ(png_ihdr_size(path("int8.png")).height, png_ihdr_size(path("tensor.png")).height);
  Q::PlotOptions options;
  options.code_dtype = Q::qint8;
  options.title = "Seed 004";
  Q::plot_quantization_errors(x, codes, deq.view(), path("dtype.png"), options);
  EXPECT_GT(load_png(path("dtype.png")).distinct(), 100u);
}

TEST_F(Plot, ArrayOverloadsCheckShapesAndTypes) {
  const Q::TensorView x(kSeed, {3, 3});
  const Q::Tensor deq = Q::dequantize(seed_quantized());
  const std::vector<std::int32_t> codes = seed_quantized().int_repr();
  EXPECT_ERROR_CONTAINS(
      Q::plot_quantization_errors(x, Q::TensorView(codes.data(), Q::ScalarType::int32, {9}),
                                  deq.view(), path("x.png")),
      "codes shape [9] differs from original shape [3, 3]");
  EXPECT_ERROR_CONTAINS(
      Q::plot_quantization_errors(x, Q::TensorView(kSeed, {3, 3}), deq.view(), path("x.png")),
      "codes have element type float32 (expected int8, uint8, int16, uint16 or int32)");
  EXPECT_ERROR_CONTAINS(
      Q::plot_quantization_errors(x, std::span(codes).first(8), deq.view(), path("x.png")),
      "codes hold 8 values but original has shape [3, 3]");
  EXPECT_ERROR_CONTAINS(
      Q::plot_quantization_errors(x, codes, Q::TensorView(kSeed, {9}), path("x.png")),
      "dequantized shape [9] differs");
  EXPECT_ERROR_CONTAINS(
      Q::plot_quantization_errors(
          x, Q::quantize(Q::TensorView(kSeed, {9}), Q::per_tensor_affine, Q::qint8), path("x.png")),
      "quantized shape [9] differs from original shape [3, 3]");
  EXPECT_EQ(entries(), Names{});
}

// --- the tensor report ---------------------------------------------------------------------

TEST_F(Plot, ReportHasAFixedWidthAndBarsForPerChannelTensors) {
  const std::vector<float> v = weights(64, 128);
  const Q::TensorView w(v, {64, 128});
  Q::plot_tensor_report(w, Q::quantize(w, Q::per_tensor_symmetric, Q::qint8), path("tensor.png"));
  Q::plot_tensor_report(w, Q::quantize(w, Q::per_channel_symmetric, Q::qint8, 0),
                        path("channel.png"));
  Q::PlotOptions options;
  options.log_counts = true;
  options.channel_metric = Q::ChannelMetric::sqnr_db;
  options.histogram_bins = 40;
  Q::plot_tensor_report(w, Q::quantize_per_group(w, Q::per_channel_symmetric, Q::qint4, 1, 32),
                        path("group.svg"), options);
  const Size t = png_ihdr_size(path("tensor.png"));
  const Size c = png_ihdr_size(path("channel.png"));
  EXPECT_EQ(t.width, 1002u);  // docs/plots.md: the report is 1002 pixels wide
  EXPECT_EQ(c.width, t.width);
  EXPECT_GT(c.height, t.height + 300);  // two bar charts below the histogram
  EXPECT_GT(load_png(path("channel.png")).distinct(), 20u);
  EXPECT_EQ(svg_size(read_bytes(path("group.svg"))).width, 1002u);
}

TEST_F(Plot, HistogramCountsSplitAtTheClippingRange) {
  // Seed 004: the clipping range is [3.5 * (-128 + 70), 3.5 * (127 + 70)] = [-203, 689.5];
  // only 728.6 lies outside it.
  const std::vector<float> v(kSeed);
  const R::HistogramCounts h = R::count_histogram(v, 10, -203.0, 689.5);
  std::int64_t inside = 0;
  std::int64_t outside = 0;
  for (std::size_t i = 0; i < 10; ++i) {
    inside += h.inside[i];
    outside += h.outside[i];
  }
  EXPECT_EQ(inside, 8);
  EXPECT_EQ(outside, 1);
  EXPECT_EQ(h.outside[9], 1);  // the maximum falls in the last, closed bin
  EXPECT_FLOAT_EQ(static_cast<float>(h.lo), -184.0f);
  EXPECT_FLOAT_EQ(static_cast<float>(h.hi), 728.6f);
  EXPECT_EQ(R::auto_bins(9), 10);
  EXPECT_EQ(R::auto_bins(8192), 100);
  // A constant tensor still gets a non-empty range.
  const R::HistogramCounts c = R::count_histogram(std::vector<float>(5, 2.0f), 10, 0, 4);
  EXPECT_LT(c.lo, 2.0);
  EXPECT_GT(c.hi, 2.0);
}

TEST_F(Plot, BarsMergeIntoMinMaxBins) {
  const std::vector<double> values{1, 5, 2, NAN, 4, 3, 7};
  const auto single = R::bin_bars(values, 100);
  ASSERT_EQ(single.size(), 7u);
  EXPECT_FALSE(single[3].valid);
  const auto merged = R::bin_bars(values, 3);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].count, 3u);
  EXPECT_EQ(merged[0].min, 1);
  EXPECT_EQ(merged[0].max, 5);
  EXPECT_EQ(merged[1].min, 3);  // NaN left out
  EXPECT_EQ(merged[1].max, 4);
  EXPECT_EQ(merged[2].count, 1u);
  EXPECT_EQ(merged[2].max, 7);
}

// --- internals: cells, labels, numbers, colours --------------------------------------------

TEST_F(Plot, BlocksAreAveragedOrTakeTheirLargestError) {
  const R::Window w{0, 600, 0, 10};
  const auto value = [](std::int64_t r, std::int64_t c) {
    return static_cast<double>(r % 3 == 0 ? -c : r);
  };
  const R::CellGrid mean = R::reduce_to_cells(w, R::Reduce::mean, 256, value);
  EXPECT_EQ(mean.block_rows, 3);
  EXPECT_EQ(mean.block_cols, 1);
  EXPECT_EQ(mean.rows, 200);
  EXPECT_EQ(mean.cols, 10);
  EXPECT_TRUE(mean.reduced());
  EXPECT_DOUBLE_EQ(mean.at(1, 4), (-4.0 + 4 + 5) / 3);  // rows 3, 4, 5
  const R::CellGrid worst = R::reduce_to_cells(w, R::Reduce::abs_max, 256, value);
  EXPECT_DOUBLE_EQ(worst.at(1, 9), 9.0);  // |-9| beats 4 and 5
  EXPECT_DOUBLE_EQ(worst.at(1, 0), 5.0);
  const R::CellGrid small = R::reduce_to_cells(R::Window{2, 3, 1, 2}, R::Reduce::mean, 256, value);
  EXPECT_FALSE(small.reduced());
  EXPECT_DOUBLE_EQ(small.at(0, 0), 2.0);   // row 2, col 1
  EXPECT_DOUBLE_EQ(small.at(1, 1), -2.0);  // row 3, col 2
}

TEST_F(Plot, LabelsShareTheirDecimalsWithinAPanel) {
  R::HeatmapSpec spec;
  spec.grid.cells = {191.6, -13.5, 728.6, 92.14};
  const R::LabelFormat f = R::label_format(spec, 4);
  EXPECT_EQ(f.decimals, 1);
  EXPECT_EQ(R::cell_label(92.14, f), "92.1");
  EXPECT_EQ(R::cell_label(-13.5, f),
            "\xe2\x88\x92"
            "13.5");
  EXPECT_EQ(R::cell_label(0.0, f), "0.0");
  spec.grid.cells = {0.9, 39.1, 1.14};
  EXPECT_EQ(R::cell_label(0.9, R::label_format(spec, 4)), "0.90");
  spec.grid.cells = {1e-5, 3e-5};
  EXPECT_EQ(R::cell_label(3e-5, R::label_format(spec, 3)),
            "3e\xe2\x88\x92"
            "5");
  spec.integer_labels = true;
  EXPECT_EQ(R::cell_label(-70, R::label_format(spec, 4)),
            "\xe2\x88\x92"
            "70");
}

TEST_F(Plot, NumbersAndTicks) {
  EXPECT_EQ(R::format_number(728.6), "728.6");
  EXPECT_EQ(R::format_number(0.020723763), "0.02072");
  EXPECT_EQ(R::format_number(170.8753), "170.9");
  EXPECT_EQ(R::format_number(12345), "12345");
  EXPECT_EQ(R::format_number(123456), "1.235e5");
  EXPECT_EQ(R::format_number(-0.5),
            "\xe2\x88\x92"
            "0.5");
  EXPECT_EQ(R::format_number(0), "0");
  EXPECT_EQ(R::format_number(NAN), "NaN");
  EXPECT_EQ(R::format_fixed(-0.001, 2), "0.00");
  EXPECT_EQ(R::format_fixed(-1.5, 2),
            "\xe2\x88\x92"
            "1.50");
  EXPECT_EQ(R::nice_ticks(-184, 728.6, 5), (std::vector<double>{0, 200, 400, 600}));
  EXPECT_EQ(R::nice_ticks(-128, 127, 6), (std::vector<double>{-100, -50, 0, 50, 100}));
  EXPECT_EQ(R::nice_ticks(-128, 127, 5), (std::vector<double>{-100, 0, 100}));
  EXPECT_EQ(R::nice_ticks(0, 0.3, 3), (std::vector<double>{0, 0.1, 0.2, 0.3}));
  EXPECT_TRUE(R::nice_ticks(0, INFINITY, 5).empty());
  EXPECT_EQ(R::nice_index_ticks(0, 127, 3), (std::vector<std::int64_t>{0, 50, 100}));
  EXPECT_EQ(R::nice_index_ticks(10, 13, 8), (std::vector<std::int64_t>{10, 11, 12, 13}));
}

TEST_F(Plot, ColourScales) {
  const auto close = [](R::Rgb a, R::Rgb b) {
    return std::abs(a.r - b.r) < 0.01 && std::abs(a.g - b.g) < 0.01 && std::abs(a.b - b.b) < 0.01;
  };
  // Viridis ends: dark purple (0x440154) and yellow (0xfde725).
  EXPECT_TRUE(close(R::sample_colormap(R::ColormapKind::sequential, 0),
                    {0x44 / 255.0, 0x01 / 255.0, 0x54 / 255.0}));
  EXPECT_TRUE(close(R::sample_colormap(R::ColormapKind::sequential, 2),
                    {0xfd / 255.0, 0xe7 / 255.0, 0x25 / 255.0}));
  // Diverging: 0 is (near) white whatever the range, and equal distances get equal strength.
  const R::ColorScale d = R::ColorScale::diverging(-184, 728.6, 0);
  EXPECT_TRUE(close(d.at(0), {0xf7 / 255.0, 0xf7 / 255.0, 0xf7 / 255.0}));
  const R::Rgb minus = d.at(-184);
  const R::Rgb plus = d.at(184);
  EXPECT_GT(minus.b, minus.r);  // blue below 0
  EXPECT_GT(plus.r, plus.b);    // red above
  EXPECT_NEAR(minus.r + minus.g + minus.b, plus.r + plus.g + plus.b, 0.35);
  EXPECT_TRUE(close(d.at(NAN), R::palette::non_finite));
  EXPECT_TRUE(close(R::ColorScale::sequential(0, 1).at(INFINITY), R::palette::non_finite));
  // An empty range is widened rather than dividing by zero.
  const R::ColorScale flat = R::ColorScale::sequential(3, 3);
  EXPECT_GT(flat.hi, flat.lo);
  EXPECT_TRUE(close(R::text_colour_on({1, 1, 1}), R::palette::text));
  EXPECT_TRUE(close(R::text_colour_on({0.27, 0.0, 0.33}), {1, 1, 1}));
}
