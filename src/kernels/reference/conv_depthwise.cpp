// The depthwise convolution kernel, baseline x86-64 (or any CPU) build of the shared row loop.
#include "kernels/conv_depthwise_body.hpp"

namespace lucid::quantization::kernels {

void conv_depthwise_u8s16_i32__reference(const igemm::DepthwiseRow& row) {
  depthwise_row_body(row);
}

}  // namespace lucid::quantization::kernels
