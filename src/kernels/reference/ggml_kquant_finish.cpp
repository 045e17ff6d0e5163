// The reference tier's K-quant finishing step (kernels/ggml_kquant_finish_blocks.hpp).
#include "kernels/ggml_kquant_finish.hpp"

#include "kernels/ggml_kquant_finish_blocks.hpp"

namespace lucid::quantization::kernels {

void finish_q2_k(const float* x, const float* scales, const float* mins, const float* sw,
                 std::uint8_t* L, BlockQ2_K& y) {
  finish_q2_k_block(x, scales, mins, sw, L, y);
}

void finish_q3_k(const float* x, const float* scales, const float* sw, std::int8_t* L,
                 BlockQ3_K& y) {
  finish_q3_k_block(x, scales, sw, L, y);
}

void finish_q4_k(const float* x, const float* scales, const float* mins, const float* sw,
                 std::uint8_t* L, BlockQ4_K& y) {
  finish_q4_k_block(x, scales, mins, sw, L, y);
}

void finish_q5_k(const float* x, const float* scales, const float* mins, const float* sw,
                 std::uint8_t* L, BlockQ5_K& y) {
  finish_q5_k_block(x, scales, mins, sw, L, y);
}

void finish_q6_k(const float* x, const float* scales, std::int8_t* L, BlockQ6_K& y) {
  finish_q6_k_block(x, scales, L, y);
}

}  // namespace lucid::quantization::kernels
