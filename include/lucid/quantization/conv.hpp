// The exact int8 2-D convolution: int8 weights packed once, C = (A − z_A) ⊛ W with gemm()'s output
// stages.
//
// Equations (docs/numerics.md, "Integer convolution"), for A[B, C_in, H, W] (uint8 or
// int8 codes, one scale s_A and zero point z_A), symmetric int8 weights W[C_out,
// C_in / groups, KH, KW] (zero point 0, scale s_W[o] per output channel or one per tensor),
// stride (sh, sw), dilation (dh, dw), padding (top, left) and g = o / (C_out / groups):
//
//   acc[b, o, y, x] = Σ_{c, i, j} (A[b, g · C_in/groups + c, y·sh − top + i·dh, x·sw − left + j·dw]
//   − z_A)
//                                 · W[o, c, i, j]                      exact int32
//   where padded positions (outside the input) contribute 0 (they read as z_A).
//   OH = (H + top + bottom − dh·(KH − 1) − 1) / sh + 1, OW likewise.
//
// then the output stage of gemm() (gemm.hpp), per output channel o: (a) int32, (b) float32
// float(acc) · (s_A · s_W[o]) + bias[o], (c) requantized with bias and optional ReLU.
// Every output is bit-identical across kernel tiers and thread counts. Conv1d is H = 1, KH = 1.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lucid/quantization/gemm.hpp"
#include "lucid/quantization/scalar_type.hpp"

namespace lucid::quantization {

/// Where the channel axis is: NHWC ([B, H, W, C], channels innermost) or NCHW ([B, C, H, W]).
enum class ConvLayout { nhwc, nchw };

/// Padding: explicit amounts per side, "same" (stride 1 only, as torch: output size = input
/// size; the total dilation · (k − 1) split with the odd element at the bottom / right), or
/// "valid" (none). Explicit amounts must lie in [0, dilation · (k − 1)], so every window
/// overlaps the input.
struct ConvPadding {
  enum class Mode { explicit_amounts, same, valid };
  Mode mode = Mode::explicit_amounts;
  std::int64_t top = 0, bottom = 0, left = 0, right = 0;

  static ConvPadding symmetric(std::int64_t h, std::int64_t w) {
    return {Mode::explicit_amounts, h, h, w, w};
  }
  static ConvPadding same() { return {Mode::same, 0, 0, 0, 0}; }
  static ConvPadding valid() { return {Mode::valid, 0, 0, 0, 0}; }
};

/// Stride, dilation (both ≥ 1) and padding; groups are a property of the weights.
struct Conv2dOptions {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
  ConvPadding padding;
};

/// Symmetric int8 convolution weights W[C_out, C_in / groups, KH, KW], packed once for the
/// path conv2d() takes (the packed int8 GEMM per group, or the depthwise kernel when each
/// group has one input channel). Immutable, shareable across threads; copies share the bytes.
class PackedConvWeights {
 public:
  PackedConvWeights() = default;

  /// Packs codes in torch's OIHW order (w[((o · C_in/g + c) · KH + i) · KW + j]). `scales`
  /// holds 1 or C_out finite scales > 0. Throws Error for sizes < 1, C_out not a multiple of
  /// groups, a null pointer, a bad scale, or a depth C_in/g · KH · KW > max_gemm_depth.
  static PackedConvWeights pack(const std::int8_t* w, std::int64_t out_channels,
                                std::int64_t in_channels_per_group, std::int64_t kernel_h,
                                std::int64_t kernel_w, std::int64_t groups,
                                std::span<const float> scales);

  /// Quantizes float32 OIHW weights to symmetric int8 (calculate_qparams on each output
  /// channel's exact min / max when per_channel, else the tensor's; `qdtype` a signed
  /// 8-bit grid) and packs them. Throws Error for a non-finite weight.
  static PackedConvWeights quantize(const float* w, std::int64_t out_channels,
                                    std::int64_t in_channels_per_group, std::int64_t kernel_h,
                                    std::int64_t kernel_w, std::int64_t groups,
                                    bool per_channel = true, QDtype qdtype = qint8);

  std::int64_t out_channels() const;
  std::int64_t in_channels() const;  ///< C_in = groups · C_in / groups
  std::int64_t kernel_h() const;
  std::int64_t kernel_w() const;
  std::int64_t groups() const;
  bool per_channel() const;
  bool depthwise() const;  ///< one input channel per group and more than one group
  /// C_out scales (a per-tensor scale repeated).
  std::span<const float> scales() const;
  /// The codes back in OIHW order.
  std::vector<std::int8_t> unpack() const;

  /// Internal: the packed representation conv2d reads.
  struct Layout;
  const Layout& layout() const;

 private:
  std::shared_ptr<const Layout> layout_;
};

/// Quantized input codes, dense in `layout` ([B, H, W, C] or [B, C, H, W]).
struct ConvInput {
  const void* data = nullptr;
  ScalarType type = ScalarType::uint8;  ///< uint8 or int8
  ConvLayout layout = ConvLayout::nhwc;
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  float scale = 1.0f;  ///< used by the float and requantized stages
  std::int32_t zero_point = 0;
};

/// The output's spatial size (and the resolved padding) for an input, weights and options.
struct ConvGeometry {
  std::int64_t out_h = 0, out_w = 0;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};

/// Validates input against weights and options and returns the output geometry. Throws
/// Error naming the argument and value for: a channel count other than w.in_channels(),
/// a stride or dilation < 1, negative padding or padding beyond dilation · (kernel − 1),
/// an input smaller than the (dilated) kernel after padding, or negative sizes.
ConvGeometry conv2d_geometry(const ConvInput& a, const PackedConvWeights& w,
                             const Conv2dOptions& options);

/// The convolution through an output stage of gemm.hpp. The output is dense in the input's
/// layout ([B, OH, OW, C_out] or [B, C_out, OH, OW]); for NHWC, c.row_stride is the
/// distance between output pixels (0 means C_out; otherwise ≥ C_out), for NCHW it must be
/// 0. Bias (when set) has C_out values. Throws Error (writing nothing) for everything
/// conv2d_geometry() refuses and for the same stage arguments gemm() refuses. A batch of 0
/// writes nothing. Uses num_threads() threads; results never depend on it or on the tier.
void conv2d(const ConvInput& a, const PackedConvWeights& w, const Conv2dOptions& options,
            const Int32Output& c);
void conv2d(const ConvInput& a, const PackedConvWeights& w, const Conv2dOptions& options,
            const FloatOutput& c);
void conv2d(const ConvInput& a, const PackedConvWeights& w, const Conv2dOptions& options,
            const RequantizedOutput& c);

/// Which path conv2d() takes for these arguments: "pointwise" (1×1, stride 1, no padding:
/// the GEMM on the input rows), "depthwise", or "im2col" (rows gathered, then the GEMM).
std::string conv2d_path(const ConvInput& a, const PackedConvWeights& w,
                        const Conv2dOptions& options);

}  // namespace lucid::quantization
