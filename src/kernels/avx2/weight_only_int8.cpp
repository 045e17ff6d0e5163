// AVX2 int8-activation weight-only kernel for int4 codes: vpmaddubsw products that cannot saturate.
//
// `vpmaddubsw` adds two u8 × s8 products into a saturating int16, which is unsafe for int8
// weights (2 · 255 · 127 > 32767) but exact for int4 codes taken as unsigned nibbles: each pair
// is at most 2 · 255 · 15 = 7650, the low-nibble and high-nibble pairs added together at most
// 15300, so one `vpaddw` and one `vpmaddwd` by 1 widen them to int32 exactly. The signed grid's
// nibbles n are used as u = n ^ 8 = q + 8 and 8 · Σ xq comes off each group's sum, which
// leaves exactly Σ xq · q (as in the AVX-512 VNNI kernel, weight_only_gemv.cpp). A panel is two
// ymm halves of 8 channels; blocks of up to 4 rows share each decode. The group flush and the
// end of the product use the same float operations in the same order as
// int8_panels_reference, so the results are its bits.
#include <immintrin.h>

#include <cstring>

#include "weight_only/kernels.hpp"

namespace lucid::quantization::weight_only {
namespace {

constexpr int max_rows = 4;

inline __m256i broadcast4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The 8 scales of half h of a record's meta block.
inline __m256 half_scales(const PackedView& v, const std::uint8_t* meta, int h) {
  if (v.bf16_scales) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(meta + 16 * h));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  return _mm256_loadu_ps(reinterpret_cast<const float*>(meta) + 8 * h);
}

template <bool Symmetric, int R>
void rows_of_panel(const Int8Args& a, std::int64_t panel, std::int64_t row0) {
  const PackedView& v = a.w;
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i flip = _mm256_set1_epi8(Symmetric ? static_cast<char>(0x88) : 0);
  const __m256i ones = _mm256_set1_epi16(1);
  const std::uint8_t* xq[R];
  for (int r = 0; r < R; ++r)
    xq[r] = a.xq + (row0 + r) * a.xq_stride;
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (std::int64_t j = 0; j < v.groups; ++j) {
    const std::int64_t len = v.padded_length(j);
    const std::int64_t k0 = j * v.group_length;
    const std::uint8_t* rec = v.record(panel, j);
    __m256i dot[R][2];
    for (int r = 0; r < R; ++r)
      dot[r][0] = dot[r][1] = _mm256_setzero_si256();
    for (std::int64_t b = 0; b < len / 8; ++b) {
      for (int h = 0; h < 2; ++h) {
        const __m256i q = _mm256_xor_si256(
            _mm256_load_si256(reinterpret_cast<const __m256i*>(rec + 64 * b + 32 * h)), flip);
        const __m256i low = _mm256_and_si256(q, nibble);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(q, 4), nibble);
        for (int r = 0; r < R; ++r) {
          const std::uint8_t* x = xq[r] + k0 + 8 * b;
          const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(broadcast4(x), low),
                                                 _mm256_maddubs_epi16(broadcast4(x + 4), high));
          dot[r][h] = _mm256_add_epi32(dot[r][h], _mm256_madd_epi16(pairs, ones));
        }
      }
    }
    const std::uint8_t* meta = rec + v.code_bytes(len);
    for (int h = 0; h < 2; ++h) {
      const __m256 s = half_scales(v, meta, h);
      __m256 szw = _mm256_setzero_ps();
      if constexpr (!Symmetric) {
        std::int64_t z8;
        std::memcpy(&z8, meta + v.scale_bytes() + 8 * h, 8);
        szw = _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(z8))));
      }
      for (int r = 0; r < R; ++r) {
        __m256i d = dot[r][h];
        if constexpr (Symmetric)
          d = _mm256_sub_epi32(d,
                               _mm256_set1_epi32(8 * a.xq_group_sums[(row0 + r) * v.groups + j]));
        acc[r][h] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(d), acc[r][h]);
        if constexpr (!Symmetric) {
          acc[r][h] = _mm256_fnmadd_ps(
              szw, _mm256_set1_ps(a.x_group_sums[(row0 + r) * v.groups + j]), acc[r][h]);
        }
      }
    }
  }
  // acc = fnmadd(z_x, C, acc); y = fma(s_x, acc, bias), for the channels below N.
  for (int h = 0; h < 2; ++h) {
    const std::int64_t col = panel * panel_width + 8 * h;
    const __m256 sums = _mm256_loadu_ps(v.int8_weight_sums + col);
    alignas(32) float bias[8] = {};
    const std::int64_t valid = std::min<std::int64_t>(8, v.n - col);
    for (std::int64_t c = 0; c < valid && a.bias != nullptr; ++c)
      bias[c] = a.bias[col + c];
    for (int r = 0; r < R; ++r) {
      __m256 f = _mm256_fnmadd_ps(_mm256_set1_ps(a.x_zero[row0 + r]), sums, acc[r][h]);
      f = _mm256_fmadd_ps(_mm256_set1_ps(a.x_scale[row0 + r]), f, _mm256_load_ps(bias));
      alignas(32) float out[8];
      _mm256_store_ps(out, f);
      std::memcpy(a.y + (row0 + r) * a.y_stride + col, out,
                  static_cast<std::size_t>(std::max<std::int64_t>(valid, 0)) * sizeof(float));
    }
  }
}

template <bool Symmetric>
void run(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  for (std::int64_t panel = panel_begin; panel < panel_end; ++panel) {
    for (std::int64_t row0 = 0; row0 < a.m; row0 += max_rows) {
      switch (std::min<std::int64_t>(max_rows, a.m - row0)) {
        case 1:
          rows_of_panel<Symmetric, 1>(a, panel, row0);
          break;
        case 2:
          rows_of_panel<Symmetric, 2>(a, panel, row0);
          break;
        case 3:
          rows_of_panel<Symmetric, 3>(a, panel, row0);
          break;
        default:
          rows_of_panel<Symmetric, 4>(a, panel, row0);
          break;
      }
    }
  }
}

}  // namespace

void int8_int4_panels_avx2(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  if (a.w.symmetric) {
    run<true>(a, panel_begin, panel_end);
  } else {
    run<false>(a, panel_begin, panel_end);
  }
}

}  // namespace lucid::quantization::weight_only
