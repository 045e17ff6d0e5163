// Internal: the depthwise convolution kernel contract: one output row of int32 accumulators.
//
// For output row y of one image (NHWC input, C_in channels, C_out = C_in · multiplier):
//   acc[x][o] = Σ_{i, j inside the input} (a[y0 + i·dh][x·sw − left + j·dw][o / multiplier] − z)
//               · w[i · KW + j][o]
// with y0 = y · sh − top. Taps outside the input contribute 0 (they read as z). No
// allocation, threading or validation; the sums are exact in int32.
#pragma once

#include <cstdint>

namespace lucid::quantization::igemm {

struct DepthwiseRow {
  const std::uint8_t* image = nullptr;  // [H][W][C_in] codes (uint8, or int8 when flip)
  std::int64_t height = 0, width = 0, in_channels = 0, multiplier = 1;
  bool flip = false;                      // int8 codes: the kernel reads a ^ 0x80 = a + 128
  std::int32_t zero = 0;                  // effective zero point (+128 when flip)
  const std::int16_t* weights = nullptr;  // [KH · KW][C_out]
  std::int64_t kernel_h = 0, kernel_w = 0;
  std::int64_t stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::int64_t y0 = 0;    // first input row of the window (may be negative)
  std::int64_t left = 0;  // left padding
  std::int64_t out_w = 0;
  std::int32_t* acc = nullptr;  // out_w × C_out, row x at acc + x · C_out
};

using DepthwiseRowFn = void (*)(const DepthwiseRow& row);

}  // namespace lucid::quantization::igemm

namespace lucid::quantization::kernels {

// Names as gemm_int8.hpp: conv_<op>_<A codes><W codes>_<accumulators>__<variant>.
void conv_depthwise_u8s16_i32__reference(const igemm::DepthwiseRow& row);
#if defined(LUCIDQ_X86_KERNELS)
void conv_depthwise_u8s16_i32__avx2(const igemm::DepthwiseRow& row);
void conv_depthwise_u8s16_i32__avx512(const igemm::DepthwiseRow& row);
#endif

}  // namespace lucid::quantization::kernels
