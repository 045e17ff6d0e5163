// The conv2d() driver: NCHW handled by transposes, then on NHWC the pointwise GEMM, the
// im2col GEMM per group (rows gathered in chunks) or the depthwise kernel, into gemm()'s stages.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "conv/conv_layout.hpp"
#include "gemm/driver.hpp"
#include "gemm/output_checks.hpp"
#include "gemm/output_stage.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/conv.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/stage_checks.hpp"

namespace lucid::quantization {
namespace {

constexpr const char* what = "conv2d";

// Bytes of gathered windows per im2col chunk (a multiple of 64 rows, at least 64).
constexpr std::int64_t im2col_chunk_bytes = std::int64_t{4} << 20;
// Multiply-accumulates per thread below which the depthwise rows stay on fewer threads.
constexpr std::int64_t depthwise_macs_per_thread = std::int64_t{1} << 20;

// One validated call on NHWC codes.
struct Problem {
  const PackedConvWeights::Layout* w = nullptr;
  Conv2dOptions options;
  ConvGeometry g;
  const std::uint8_t* input = nullptr;  // [B, H, W, C_in]
  std::int64_t batch = 0, height = 0, width = 0, in_channels = 0;
  bool flip = false;
  std::int32_t zero = 0;      // effective zero point (+128 for int8)
  std::uint8_t pad_byte = 0;  // the raw code of the zero point
  std::int64_t pixels() const { return batch * g.out_h * g.out_w; }
};

bool is_pointwise(const Problem& p) {
  return p.w->kernel_h == 1 && p.w->kernel_w == 1 && p.options.stride_h == 1 &&
         p.options.stride_w == 1 &&
         p.g.pad_top + p.g.pad_bottom + p.g.pad_left + p.g.pad_right == 0;
}

// One window row (tap row i) of one group when taps j are adjacent pixels (groups = 1 and
// dilation_w = 1): the in-bounds taps are one run of the input row, copied at once.
void gather_contiguous_taps(const Problem& p, const std::uint8_t* input_row, std::int64_t x0,
                            std::uint8_t* dst) {
  const std::int64_t kw = p.w->kernel_w, c = p.in_channels;
  const std::int64_t j_begin = std::clamp<std::int64_t>(-x0, 0, kw);
  const std::int64_t j_end = std::clamp<std::int64_t>(p.width - x0, j_begin, kw);
  std::memset(dst, p.pad_byte, static_cast<std::size_t>(j_begin * c));
  if (j_end > j_begin) {  // always, as padding keeps every window over the input
    std::memcpy(dst + j_begin * c, input_row + (x0 + j_begin) * c,
                static_cast<std::size_t>((j_end - j_begin) * c));
  }
  std::memset(dst + j_end * c, p.pad_byte, static_cast<std::size_t>((kw - j_end) * c));
}

// Gathers output pixels [first, first + count) as rows [g][i][j][c] of groups · depth codes.
void gather_windows(const Problem& p, std::int64_t first, std::int64_t count, std::uint8_t* rows) {
  const auto& w = *p.w;
  const std::int64_t cg = w.in_per_group;
  const std::int64_t row_bytes = w.groups * w.depth();
  const std::int64_t plane = p.g.out_h * p.g.out_w;
  const bool contiguous_taps = w.groups == 1 && p.options.dilation_w == 1;
  const int pieces = kernels::threads_for(count * row_bytes);
  kernels::parallel_pieces(count, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t pixel = first + r;
      const std::int64_t b = pixel / plane;
      const std::int64_t y = pixel % plane / p.g.out_w;
      const std::int64_t x0 = pixel % p.g.out_w * p.options.stride_w - p.g.pad_left;
      std::uint8_t* dst = rows + r * row_bytes;
      for (std::int64_t grp = 0; grp < w.groups; ++grp) {
        for (std::int64_t i = 0; i < w.kernel_h; ++i) {
          const std::int64_t iy = y * p.options.stride_h - p.g.pad_top + i * p.options.dilation_h;
          const bool row_inside = iy >= 0 && iy < p.height;
          // Only formed for rows inside the input (no out-of-range pointer arithmetic).
          const std::uint8_t* input_row =
              row_inside ? p.input + (b * p.height + iy) * p.width * p.in_channels : nullptr;
          if (contiguous_taps && row_inside) {
            gather_contiguous_taps(p, input_row, x0, dst);
            dst += w.kernel_w * cg;
            continue;
          }
          for (std::int64_t j = 0; j < w.kernel_w; ++j, dst += cg) {
            const std::int64_t ix = x0 + j * p.options.dilation_w;
            if (!row_inside || ix < 0 || ix >= p.width) {
              std::memset(dst, p.pad_byte, static_cast<std::size_t>(cg));
            } else {
              std::memcpy(dst, input_row + ix * p.in_channels + grp * cg,
                          static_cast<std::size_t>(cg));
            }
          }
        }
      }
    }
  });
}

// make(pixel_begin, channel_begin, scales) returns the stage for outputs from that pixel and
// channel on, `scales` being the weight scales of the channels from channel_begin.
template <class MakeStage>
void run_nhwc(const Problem& p, const kernels::KernelTable& kt, MakeStage&& make) {
  const auto& w = *p.w;
  const std::int64_t pixels = p.pixels();
  if (pixels == 0) return;
  if (w.depthwise()) {
    const auto stage = make(0, 0, w.scales);
    const std::int64_t rows = p.batch * p.g.out_h;
    const std::int64_t macs = pixels * w.out_channels * w.kernel_h * w.kernel_w;
    const int pieces = kernels::threads_for(macs, depthwise_macs_per_thread);
    kernels::parallel_pieces(rows, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
      std::vector<std::int32_t> acc(static_cast<std::size_t>(p.g.out_w * w.out_channels));
      for (std::int64_t r = begin; r < end; ++r) {
        igemm::DepthwiseRow row;
        row.image = p.input + r / p.g.out_h * p.height * p.width * p.in_channels;
        row.height = p.height;
        row.width = p.width;
        row.in_channels = p.in_channels;
        row.multiplier = w.out_channels / p.in_channels;
        row.flip = p.flip;
        row.zero = p.zero;
        row.weights = w.depthwise_taps.data();
        row.kernel_h = w.kernel_h;
        row.kernel_w = w.kernel_w;
        row.stride_w = p.options.stride_w;
        row.dilation_h = p.options.dilation_h;
        row.dilation_w = p.options.dilation_w;
        row.y0 = r % p.g.out_h * p.options.stride_h - p.g.pad_top;
        row.left = p.g.pad_left;
        row.out_w = p.g.out_w;
        row.acc = acc.data();
        kt.conv_depthwise(row);
        stage.apply(r * p.g.out_w, p.g.out_w, 0, w.out_channels, acc.data(), w.out_channels);
      }
    });
    return;
  }
  igemm::ActivationRows rows;
  rows.flip = p.flip;
  rows.zero_points = &p.zero;
  if (is_pointwise(p)) {
    rows.stride = p.in_channels;
    rows.rows = pixels;
    for (std::int64_t grp = 0; grp < w.groups; ++grp) {
      const auto& gw = w.group_weights[static_cast<std::size_t>(grp)];
      rows.data = p.input + grp * w.in_per_group;
      igemm::run_gemm(rows, gw.layout(), kt.gemm,
                      make(0, grp * w.out_per_group(), gw.layout().scales));
    }
    return;
  }
  const std::int64_t row_bytes = w.groups * w.depth();
  const std::int64_t chunk =
      std::min(pixels, std::max<std::int64_t>(64, im2col_chunk_bytes / row_bytes / 64 * 64));
  std::vector<std::uint8_t> windows(static_cast<std::size_t>(chunk * row_bytes));
  rows.stride = row_bytes;
  for (std::int64_t first = 0; first < pixels; first += chunk) {
    rows.rows = std::min(chunk, pixels - first);
    gather_windows(p, first, rows.rows, windows.data());
    for (std::int64_t grp = 0; grp < w.groups; ++grp) {
      const auto& gw = w.group_weights[static_cast<std::size_t>(grp)];
      rows.data = windows.data() + grp * w.depth();
      igemm::run_gemm(rows, gw.layout(), kt.gemm,
                      make(first, grp * w.out_per_group(), gw.layout().scales));
    }
  }
}

template <class T>
void nchw_to_nhwc(const T* src, T* dst, std::int64_t batch, std::int64_t channels,
                  std::int64_t plane) {
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t s = 0; s < plane; ++s)
        dst[(b * plane + s) * channels + c] = src[(b * channels + c) * plane + s];
}

template <class T>
void nhwc_to_nchw(const T* src, T* dst, std::int64_t batch, std::int64_t channels,
                  std::int64_t plane) {
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t s = 0; s < plane; ++s)
      for (std::int64_t c = 0; c < channels; ++c)
        dst[(b * channels + c) * plane + s] = src[(b * plane + s) * channels + c];
}

// Validates everything but the stage's own arguments and runs the convolution: the output
// (type T, dense in a's layout) goes through make_stage(out, scales, kernels) with `out` a copy
// of c pointing at the first output of a tile and its channels.
template <class T, class Out, class MakeStage>
void convolve(const ConvInput& a, const PackedConvWeights& weights, const Conv2dOptions& options,
              const Out& c, MakeStage&& make_stage) {
  Problem p;
  p.w = &weights.layout();
  p.options = options;
  p.g = conv2d_geometry(a, weights, options);
  p.batch = a.batch;
  p.height = a.height;
  p.width = a.width;
  p.in_channels = a.channels;
  p.flip = a.type == ScalarType::int8;
  p.zero = a.zero_point + (p.flip ? 128 : 0);
  p.pad_byte = static_cast<std::uint8_t>(a.zero_point);
  const std::int64_t cout = p.w->out_channels;
  const std::int64_t outputs = p.pixels() * cout;
  if (c.data == nullptr && outputs > 0) throw Error(std::string(what) + ": c.data is null");
  std::int64_t stride = cout;
  if (a.layout == ConvLayout::nhwc) {
    if (c.row_stride != 0 && c.row_stride < cout) {
      throw Error(std::string(what) + ": c.row_stride = " + std::to_string(c.row_stride) +
                  " (expected 0 or >= C_out = " + std::to_string(cout) + ")");
    }
    if (c.row_stride != 0) stride = c.row_stride;
  } else if (c.row_stride != 0) {
    throw Error(std::string(what) + ": c.row_stride = " + std::to_string(c.row_stride) +
                " (expected 0: NCHW outputs are dense)");
  }
  if (outputs == 0) return;
  const std::int64_t plane = a.height * a.width;
  std::vector<std::uint8_t> input_nhwc;
  std::vector<T> output_nhwc;
  T* out = static_cast<T*>(c.data);
  p.input = static_cast<const std::uint8_t*>(a.data);
  if (a.layout == ConvLayout::nchw) {
    input_nhwc.resize(static_cast<std::size_t>(a.batch * plane * a.channels));
    nchw_to_nhwc(p.input, input_nhwc.data(), a.batch, a.channels, plane);
    p.input = input_nhwc.data();
    output_nhwc.resize(static_cast<std::size_t>(outputs));
    out = output_nhwc.data();
  }
  const kernels::KernelTable& kt = kernels::active();  // once per call
  run_nhwc(p, kt, [&](std::int64_t pixel, std::int64_t channel, const std::vector<float>& scales) {
    Out tile = c;
    tile.data = out + pixel * stride + channel;
    tile.row_stride = stride;
    if constexpr (requires { tile.bias; }) {
      if (c.bias != nullptr) tile.bias = c.bias + channel;
    }
    if constexpr (requires { tile.bias_int32; }) {
      if (c.bias_int32 != nullptr) tile.bias_int32 = c.bias_int32 + channel;
    }
    return make_stage(tile, scales, kt);
  });
  if (a.layout == ConvLayout::nchw) {
    nhwc_to_nchw(out, static_cast<T*>(c.data), a.batch, cout, p.g.out_h * p.g.out_w);
  }
}

}  // namespace

void conv2d(const ConvInput& a, const PackedConvWeights& w, const Conv2dOptions& options,
            const Int32Output& c) {
  convolve<std::int32_t>(a, w, options, c,
                         [](const Int32Output& tile, const std::vector<float>&,
                            const kernels::KernelTable&) { return igemm::Int32Stage(tile); });
}

void conv2d(const ConvInput& a, const PackedConvWeights& w, const Conv2dOptions& options,
            const FloatOutput& c) {
  check_scale(what, "a.scale", a.scale);
  convolve<float>(
      a, w, options, c,
      [&](const FloatOutput& tile, const std::vector<float>& scales, const kernels::KernelTable&) {
        return igemm::FloatStage(tile, &a.scale, false, scales.data());
      });
}

void conv2d(const ConvInput& a, const PackedConvWeights& w, const Conv2dOptions& options,
            const RequantizedOutput& c) {
  check_scale(what, "a.scale", a.scale);
  igemm::check_requantized_stage(what, c, w.out_channels());
  convolve<std::uint8_t>(a, w, options, c,
                         [&](const RequantizedOutput& tile, const std::vector<float>& scales,
                             const kernels::KernelTable& kt) {
                           return igemm::RequantizeStage(tile, a.scale, scales,
                                                         kt.gemm_requantize_row);
                         });
}

}  // namespace lucid::quantization
