// Quickstart: quantize a small weight per-channel symmetric to qint8, print the
// codes, dequantize, and measure the error.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <lucid/quantization.hpp>

namespace Q = lucid::quantization;

int main() {
  try {
    // A 2 x 4 weight: two output channels 25x apart in magnitude.
    const Q::Tensor w = Q::Tensor::from_floats({0.50f, -0.25f, 1.00f, -0.75f,  //
                                                0.02f, -0.01f, 0.04f, -0.03f},
                                               {2, 4});

    // One scale per row (axis 0), zero point 0, on the narrow grid [-127, 127]:
    // s = max|w_row| / 127, the convention of symmetric int8 GEMM weights.
    const Q::QDtype int8_narrow = Q::qint8.narrow_range();
    const Q::QuantizedTensor q =
        Q::quantize(w, Q::per_channel_symmetric, int8_narrow, /*ch_axis=*/0);
    std::printf("qparams: %s\n", Q::describe(q.qparams()).c_str());

    const std::vector<std::int32_t> codes = q.int_repr();
    for (std::int64_t row = 0; row < 2; ++row) {
      std::printf("channel %lld: scale %.6g, codes", static_cast<long long>(row),
                  q.qparams().scale[static_cast<std::size_t>(row)]);
      for (std::int64_t col = 0; col < 4; ++col) {
        std::printf(" %4d", codes[static_cast<std::size_t>(row * 4 + col)]);
      }
      std::printf("\n");
    }

    const Q::Tensor w_hat = Q::dequantize(q);
    std::printf("dequantized:");
    for (const float v : w_hat.floats()) {
      std::printf(" %.4f", v);
    }
    std::printf("\nMSE: %.4e\n", Q::quantization_error(w, w_hat));
  } catch (const Q::Error& e) {
    std::fprintf(stderr, "quickstart: %s\n", e.what());
    return 1;
  }
  return 0;
}
