// Internal: the depthwise row loop, compiled once per tier with that tier's flags (plain C++ the
// compiler vectorizes over channels; integer sums, so every tier gives the same bits).
//
// Internal linkage (unnamed namespace) on purpose: each including file compiles its own copy
// with its own ISA flags, and no copy may be shared with another file at link time.
#pragma once

#include <algorithm>

#include "kernels/conv_depthwise.hpp"

namespace lucid::quantization::kernels {
namespace {

// The sums of a pixel updated in memory tap by tap. (Tried: 16-channel sums kept in registers
// over all taps; 0.19 to 0.58 ms against this loop's 0.28 on 56×56×64 depending on the build,
// so not kept.)
void depthwise_row_body(const igemm::DepthwiseRow& row) {
  const std::int64_t out_channels = row.in_channels * row.multiplier;
  const std::int64_t multiplier = row.multiplier;
  const std::int32_t zero = row.zero;  // locals: stores to acc cannot change them
  std::fill(row.acc, row.acc + row.out_w * out_channels, 0);
  const std::uint8_t flip = row.flip ? 0x80 : 0x00;
  for (std::int64_t i = 0; i < row.kernel_h; ++i) {
    const std::int64_t y = row.y0 + i * row.dilation_h;
    if (y < 0 || y >= row.height) continue;
    for (std::int64_t x = 0; x < row.out_w; ++x) {
      std::int32_t* __restrict acc = row.acc + x * out_channels;
      for (std::int64_t j = 0; j < row.kernel_w; ++j) {
        const std::int64_t xx = x * row.stride_w - row.left + j * row.dilation_w;
        if (xx < 0 || xx >= row.width) continue;
        const std::uint8_t* __restrict pixel = row.image + (y * row.width + xx) * row.in_channels;
        const std::int16_t* __restrict w = row.weights + (i * row.kernel_w + j) * out_channels;
        if (multiplier == 1) {
          for (std::int64_t c = 0; c < out_channels; ++c)
            acc[c] += (static_cast<std::int32_t>(pixel[c] ^ flip) - zero) * w[c];
        } else {
          for (std::int64_t o = 0; o < out_channels; ++o)
            acc[o] += (static_cast<std::int32_t>(pixel[o / multiplier] ^ flip) - zero) * w[o];
        }
      }
    }
  }
}

}  // namespace
}  // namespace lucid::quantization::kernels
