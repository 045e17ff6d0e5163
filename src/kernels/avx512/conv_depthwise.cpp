// The depthwise convolution kernel, AVX-512 build of the shared row loop (this file gets
// -mavx512*).
#include "kernels/conv_depthwise_body.hpp"

namespace lucid::quantization::kernels {

void conv_depthwise_u8s16_i32__avx512(const igemm::DepthwiseRow& row) {
  depthwise_row_body(row);
}

}  // namespace lucid::quantization::kernels
