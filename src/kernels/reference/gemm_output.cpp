// The GEMM's requantized output stage for one row of columns, reference variant.
#include "kernels/affine_spec.hpp"
#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {

void requantize_row_i32_u8__reference(const std::int32_t* acc, std::int64_t cols,
                                      const igemm::RequantizeRowArgs& p, std::uint8_t* out) {
  for (std::int64_t j = 0; j < cols; ++j) {
    // double(acc + bias_int32) is exactly double(acc) + double(bias_int32): both
    // are below 2^31 in magnitude, so their sum needs at most 33 bits.
    const double sum = static_cast<double>(acc[j]) + p.bias[j];
    const double product = sum * p.multiplier[j];
    double x = product + p.offset[j];
    // Clamping first to a bound outside the grid changes nothing after rounding
    // and keeps |x| small enough for round_half_even (x is finite: every input is).
    x = x < p.below ? p.below : x;
    x = x > p.above ? p.above : x;
    double q = round_half_even(x);
    q = q < p.low ? p.low : q;
    q = q > p.high ? p.high : q;
    // The code's low byte is the int8 or uint8 storage alike.
    out[j] = static_cast<std::uint8_t>(static_cast<std::int32_t>(q + p.zero_point));
  }
}

}  // namespace lucid::quantization::kernels
