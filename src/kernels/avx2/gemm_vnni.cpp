// AVX-VNNI GEMM kernel (256-bit vpdpbusd): 4 rows × 1 panel (16 channels) per micro-tile.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::kernels {
namespace {

constexpr int max_rows = 4;

// Four codes at `p`, flipped for int8, in every 32-bit lane.
inline __m256i broadcast_codes(const std::uint8_t* p, std::uint32_t flip) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(static_cast<int>(v ^ flip));
}

template <int R>
void micro_tile(const igemm::GemmBlock& b, std::int64_t row, const std::int8_t* panel,
                const std::int32_t* column_sums, std::int32_t* acc) {
  const std::uint32_t flip = b.flip ? 0x80808080u : 0u;
  __m256i c[R][2];
  for (int r = 0; r < R; ++r)
    c[r][0] = c[r][1] = _mm256_setzero_si256();
  const std::uint8_t* a[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
    a[r] = b.a + (row + r) * b.a_stride;
  const auto step = [&](const std::int8_t* group, std::int64_t offset) {
    const auto* wg = reinterpret_cast<const __m256i*>(group);
    const __m256i w0 = _mm256_load_si256(wg);
    const __m256i w1 = _mm256_load_si256(wg + 1);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256i av = broadcast_codes(a[r] + offset, flip);
      c[r][0] = _mm256_dpbusd_avx_epi32(c[r][0], av, w0);
      c[r][1] = _mm256_dpbusd_avx_epi32(c[r][1], av, w1);
    }
  };
  const std::int64_t full = b.k / 4;
  for (std::int64_t g = 0; g < full; ++g)
    step(panel + g * 64, 4 * g);
  if (b.k % 4 != 0) {
    // The k % 4 tail from zero-padded copies (never read past a row); padding meets zero weights.
    alignas(16) std::uint8_t tails[4 * max_rows] = {};
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      std::memcpy(tails + 4 * r, a[r] + 4 * full, static_cast<std::size_t>(b.k % 4));
      a[r] = tails + 4 * r;
    }
    step(panel + full * 64, 0);
  }
  for (int h = 0; h < 2; ++h) {
    const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(column_sums + 8 * h));
    for (int r = 0; r < R; ++r) {
      const __m256i z = _mm256_set1_epi32(b.zero_points[row + r]);
      const __m256i v = _mm256_sub_epi32(c[r][h], _mm256_mullo_epi32(z, sums));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * b.acc_stride + 8 * h), v);
    }
  }
}

}  // namespace

void gemm_u8s8_i32_16c4__avx_vnni(const igemm::GemmBlock& b) {
  using Fn = void (*)(const igemm::GemmBlock&, std::int64_t, const std::int8_t*,
                      const std::int32_t*, std::int32_t*);
  static constexpr Fn by_rows[max_rows] = {micro_tile<1>, micro_tile<2>, micro_tile<3>,
                                           micro_tile<4>};
  const std::int64_t panel_stride = igemm::panel_bytes(b.k);
  for (std::int64_t p = 0; p < b.panel_count; ++p) {
    const std::int8_t* panel = b.panels + p * panel_stride;
    for (std::int64_t row = 0; row < b.rows; row += max_rows) {
      const std::int64_t rows = std::min<std::int64_t>(max_rows, b.rows - row);
      by_rows[rows - 1](b, row, panel, b.column_sums + 16 * p, b.acc + row * b.acc_stride + 16 * p);
    }
  }
}

}  // namespace lucid::quantization::kernels
