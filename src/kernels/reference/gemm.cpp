// Reference GEMM kernel: the specification, Σ (a − z) · w in int64 straight from the packed layout.
#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {

void gemm_u8s8_i32_16c4__reference(const igemm::GemmBlock& b) {
  const std::int64_t bytes_per_panel = igemm::panel_bytes(b.k);
  for (std::int64_t r = 0; r < b.rows; ++r) {
    const std::uint8_t* row = b.a + r * b.a_stride;
    // The code's value and zero point in their own type (int8 codes were flipped by + 128).
    const std::int64_t zero_point = b.zero_points[r] - (b.flip ? 128 : 0);
    for (std::int64_t c = 0; c < b.panel_count * igemm::panel_width; ++c) {
      const std::int8_t* panel = b.panels + c / igemm::panel_width * bytes_per_panel;
      const std::int64_t lane = c % igemm::panel_width;
      std::int64_t sum = 0;
      for (std::int64_t k = 0; k < b.k; ++k) {
        const std::int64_t a =
            b.flip ? std::int64_t{static_cast<std::int8_t>(row[k])} : std::int64_t{row[k]};
        const std::int64_t w = panel[k / 4 * 64 + lane * 4 + k % 4];
        sum += (a - zero_point) * w;
      }
      b.acc[r * b.acc_stride + c] = static_cast<std::int32_t>(sum);
    }
  }
}

}  // namespace lucid::quantization::kernels
