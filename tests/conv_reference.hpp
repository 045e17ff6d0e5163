// The conv2d spec as plain loops (exact int64 sums, then gemm.hpp's output equations), for tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "lucid/quantization/conv.hpp"

namespace lucid::quantization::testing {

/// A convolution problem in plain arrays: codes in `layout`, weights OIHW.
struct ConvCase {
  ScalarType type = ScalarType::uint8;
  ConvLayout layout = ConvLayout::nhwc;
  std::int64_t batch = 1, channels = 1, height = 1, width = 1;
  std::int32_t zero_point = 0;
  float scale = 0.05f;
  std::vector<std::uint8_t> codes;  // raw bytes (int8 codes as their two's complement)
  std::int64_t out_channels = 1, kernel_h = 1, kernel_w = 1, groups = 1;
  std::vector<std::int8_t> weights;  // OIHW
  std::vector<float> scales;         // 1 or out_channels
  Conv2dOptions options;
};

inline std::int32_t code_at(const ConvCase& p, std::int64_t b, std::int64_t c, std::int64_t y,
                            std::int64_t x) {
  const std::int64_t i = p.layout == ConvLayout::nhwc
                             ? ((b * p.height + y) * p.width + x) * p.channels + c
                             : ((b * p.channels + c) * p.height + y) * p.width + x;
  const std::uint8_t byte = p.codes[static_cast<std::size_t>(i)];
  return p.type == ScalarType::int8 ? static_cast<std::int8_t>(byte) : byte;
}

/// Exact accumulators in the input's layout ([B, OH, OW, C_out] or [B, C_out, OH, OW]).
inline std::vector<std::int64_t> reference_acc(const ConvCase& p, const ConvGeometry& g) {
  const std::int64_t cg = p.channels / p.groups, og = p.out_channels / p.groups;
  std::vector<std::int64_t> out(
      static_cast<std::size_t>(p.batch * p.out_channels * g.out_h * g.out_w));
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t o = 0; o < p.out_channels; ++o)
      for (std::int64_t y = 0; y < g.out_h; ++y)
        for (std::int64_t x = 0; x < g.out_w; ++x) {
          std::int64_t acc = 0;
          for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t i = 0; i < p.kernel_h; ++i)
              for (std::int64_t j = 0; j < p.kernel_w; ++j) {
                const std::int64_t iy =
                    y * p.options.stride_h - g.pad_top + i * p.options.dilation_h;
                const std::int64_t ix =
                    x * p.options.stride_w - g.pad_left + j * p.options.dilation_w;
                if (iy < 0 || iy >= p.height || ix < 0 || ix >= p.width) continue;
                const std::int64_t a = code_at(p, b, o / og * cg + c, iy, ix) - p.zero_point;
                acc += a * p.weights[static_cast<std::size_t>(
                               ((o * cg + c) * p.kernel_h + i) * p.kernel_w + j)];
              }
          const std::int64_t at = p.layout == ConvLayout::nhwc
                                      ? ((b * g.out_h + y) * g.out_w + x) * p.out_channels + o
                                      : ((b * p.out_channels + o) * g.out_h + y) * g.out_w + x;
          out[static_cast<std::size_t>(at)] = acc;
        }
  return out;
}

/// The output channel of element `at` of an output in the case's layout.
inline std::int64_t channel_of(const ConvCase& p, const ConvGeometry& g, std::int64_t at) {
  return p.layout == ConvLayout::nhwc ? at % p.out_channels
                                      : at / (g.out_h * g.out_w) % p.out_channels;
}

inline float weight_scale(const ConvCase& p, std::int64_t o) {
  return p.scales[p.scales.size() == 1 ? 0 : static_cast<std::size_t>(o)];
}

/// gemm.hpp (b) on reference_acc(): float(acc) · (s_A · s_W[o]) + bias[o], each operation in
/// float32.
inline std::vector<float> reference_float(const ConvCase& p, const ConvGeometry& g,
                                          const std::vector<std::int64_t>& acc,
                                          const std::vector<float>& bias) {
  std::vector<float> out(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const std::int64_t o = channel_of(p, g, static_cast<std::int64_t>(i));
    const float scaled = static_cast<float>(acc[i]) * (p.scale * weight_scale(p, o));
    out[i] = bias.empty() ? scaled : scaled + bias[static_cast<std::size_t>(o)];
  }
  return out;
}

/// gemm.hpp (c) on reference_acc(): clamp(nearbyint(acc · m[o] + bias[o] / s_out) + z_out), in
/// double.
inline std::vector<std::int32_t> reference_requantized(const ConvCase& p, const ConvGeometry& g,
                                                       const std::vector<std::int64_t>& acc,
                                                       const RequantizedOutput& c,
                                                       const std::vector<float>& bias) {
  std::vector<std::int32_t> out(acc.size());
  const double low =
      c.relu ? std::max<double>(c.zero_point, c.qdtype.quant_min()) : c.qdtype.quant_min();
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const std::int64_t o = channel_of(p, g, static_cast<std::int64_t>(i));
    const double m = double(p.scale) * double(weight_scale(p, o)) / double(c.scale);
    const double offset =
        bias.empty() ? 0.0 : double(bias[static_cast<std::size_t>(o)]) / double(c.scale);
    const double q = std::nearbyint(double(acc[i]) * m + offset) + c.zero_point;
    out[i] = static_cast<std::int32_t>(std::clamp(q, low, double(c.qdtype.quant_max())));
  }
  return out;
}

}  // namespace lucid::quantization::testing
