// conv2d_geometry() and conv2d_path(): argument checks, resolved padding, output size, path.
#include <string>

#include "conv/conv_layout.hpp"
#include "lucid/quantization/conv.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/stage_checks.hpp"

namespace lucid::quantization {
namespace {

constexpr const char* what = "conv2d";

[[noreturn]] void fail(const std::string& message) {
  throw Error(std::string(what) + ": " + message);
}

void check_at_least_one(const char* name, std::int64_t value) {
  if (value < 1) fail(std::string(name) + " = " + std::to_string(value) + " (expected >= 1)");
}

// Explicit padding on one side: 0..dilation · (kernel − 1), so each window overlaps the input.
void check_pad(const char* name, std::int64_t pad, std::int64_t dilation, std::int64_t kernel,
               const char* axis) {
  const std::int64_t limit = dilation * (kernel - 1);
  if (pad < 0 || pad > limit) {
    fail(std::string("options.padding.") + name + " = " + std::to_string(pad) + " (expected 0.." +
         std::to_string(limit) + " = dilation_" + axis + " · (kernel_" + axis + " − 1))");
  }
}

std::int64_t out_size(const char* name, std::int64_t size, std::int64_t pad_low,
                      std::int64_t pad_high, std::int64_t dilation, std::int64_t kernel,
                      std::int64_t stride) {
  const std::int64_t extent = dilation * (kernel - 1) + 1;
  if (size + pad_low + pad_high < extent) {
    fail(std::string("a.") + name + " = " + std::to_string(size) + " with padding " +
         std::to_string(pad_low) + " + " + std::to_string(pad_high) +
         " is smaller than the dilated kernel (" + std::to_string(extent) + ")");
  }
  return (size + pad_low + pad_high - extent) / stride + 1;
}

}  // namespace

ConvGeometry conv2d_geometry(const ConvInput& a, const PackedConvWeights& w,
                             const Conv2dOptions& options) {
  const auto& l = w.layout();  // throws for empty weights
  if (a.type != ScalarType::uint8 && a.type != ScalarType::int8) {
    fail("a.type = " + to_string(a.type) + " (expected uint8 or int8)");
  }
  check_activation_zero_point(what, "a.zero_point", a.type, a.zero_point, "a");
  if (a.batch < 0) fail("a.batch = " + std::to_string(a.batch) + " (expected >= 0)");
  check_at_least_one("a.height", a.height);
  check_at_least_one("a.width", a.width);
  if (a.channels != w.in_channels()) {
    fail("a.channels = " + std::to_string(a.channels) +
         " (expected w.in_channels() = " + std::to_string(w.in_channels()) + " = groups " +
         std::to_string(l.groups) + " · " + std::to_string(l.in_per_group) + ")");
  }
  if (a.data == nullptr && a.batch > 0) fail("a.data is null");
  check_at_least_one("options.stride_h", options.stride_h);
  check_at_least_one("options.stride_w", options.stride_w);
  check_at_least_one("options.dilation_h", options.dilation_h);
  check_at_least_one("options.dilation_w", options.dilation_w);
  ConvGeometry g;
  const ConvPadding& p = options.padding;
  switch (p.mode) {
    case ConvPadding::Mode::valid:
      break;
    case ConvPadding::Mode::same: {
      if (options.stride_h != 1 || options.stride_w != 1) {
        fail("options.padding = \"same\" with stride " + std::to_string(options.stride_h) + " × " +
             std::to_string(options.stride_w) + " (expected stride 1, as torch)");
      }
      const std::int64_t total_h = options.dilation_h * (l.kernel_h - 1);
      const std::int64_t total_w = options.dilation_w * (l.kernel_w - 1);
      g.pad_top = total_h / 2;
      g.pad_bottom = total_h - g.pad_top;
      g.pad_left = total_w / 2;
      g.pad_right = total_w - g.pad_left;
      break;
    }
    case ConvPadding::Mode::explicit_amounts:
      check_pad("top", p.top, options.dilation_h, l.kernel_h, "h");
      check_pad("bottom", p.bottom, options.dilation_h, l.kernel_h, "h");
      check_pad("left", p.left, options.dilation_w, l.kernel_w, "w");
      check_pad("right", p.right, options.dilation_w, l.kernel_w, "w");
      g.pad_top = p.top;
      g.pad_bottom = p.bottom;
      g.pad_left = p.left;
      g.pad_right = p.right;
      break;
  }
  g.out_h = out_size("height", a.height, g.pad_top, g.pad_bottom, options.dilation_h, l.kernel_h,
                     options.stride_h);
  g.out_w = out_size("width", a.width, g.pad_left, g.pad_right, options.dilation_w, l.kernel_w,
                     options.stride_w);
  return g;
}

std::string conv2d_path(const ConvInput& a, const PackedConvWeights& w,
                        const Conv2dOptions& options) {
  const ConvGeometry g = conv2d_geometry(a, w, options);
  if (w.depthwise()) return "depthwise";
  const bool pointwise = w.kernel_h() == 1 && w.kernel_w() == 1 && options.stride_h == 1 &&
                         options.stride_w == 1 &&
                         g.pad_top + g.pad_bottom + g.pad_left + g.pad_right == 0;
  return pointwise ? "pointwise" : "im2col";
}

}  // namespace lucid::quantization
