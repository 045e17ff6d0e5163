// AVX2 int8-activation weight-only kernel for int4 and int8 codes: exact group dot products.
//
// Without VNNI the u8 × s8 product is `vpmaddubsw` (pairs added into a saturating int16) or
// `vpmaddwd` (int16 pairs into int32, exact). The two code widths take the one that is exact:
//
// int4: `vpmaddubsw` on the codes taken as unsigned nibbles. Each pair is at most
// 2 · 255 · 15 = 7650, the low-nibble and high-nibble pairs added together at most 15300, so one
// `vpaddw` and one `vpmaddwd` by 1 widen them to int32 exactly. The signed grid's nibbles n are
// used as u = n ^ 8 = q + 8 (as in the AVX-512 VNNI kernel, weight_only_u8_regs.cpp).
//
// int8: `vpmaddubsw` could saturate (2 · 255 · 127 > 32767), so both operands are widened to
// int16 and multiplied with `vpmaddwd`, as the int8 GEMM's AVX2 kernel does (gemm.cpp). A 64-byte
// block holds rows k0 .. k0 + 3 of 16 channels; `vpunpck[lh]bw` of rows (0, 2) and (1, 3) and
// `vpmovsxbw` / `vpmovzxbw` give, per half panel of 8 channels, one dword per channel holding the
// codes of k0 and k0 + 2 as int16 (and one for k0 + 1, k0 + 3). The matching activation words come
// without a shuffle from one broadcast dword of 4 codes: `and 0x00ff00ff` keeps x0, x2 and a
// 16-bit shift right x1, x3. Each `vpmaddwd` pair is |xq · w| + |xq' · w'| ≤ 2 · 255 · 255, far
// from int32's limit, and the int32 group sums add with wrap-around: the true Σ xq · w8 fits for
// groups ≤ 65536 (65536 · 255 · 128 < 2^31; the driver checks), so the wrapped sum equals it.
// The affine lanes u = w8 + 128 are widened unsigned.
//
// Either way a format whose codes are used offset (u = w8 + code_offset) gets code_offset · Σ xq
// taken off each group's sum, which leaves exactly Σ xq · w8. A panel is two ymm halves of 8
// channels; blocks of up to 4 rows share each decode. The group flush and the end of the product
// use the same float operations in the same order as weight_only_u8_16c__reference, so the results
// are its bits.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/avx2/weight_only_scales.hpp"
#include "kernels/stream_prefetch.hpp"
#include "kernels/weight_only.hpp"

namespace lucid::quantization::weight_only {
namespace {

constexpr int max_rows = 4;

// What the products below add to w8 (the code on the int8 range) per code: int4 signed grid
// u = q + 8, affine int8 lane u = w8 + 128; the others use w8 itself.
template <int Bits, bool Symmetric>
constexpr std::int32_t code_offset() {
  if constexpr (Bits == 4) return Symmetric ? 8 : 0;
  return Symmetric ? 0 : 128;
}

inline __m256i broadcast4(const std::uint8_t* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// An int4 block (8 k × 16 channels, a dword of 8 nibbles per channel) as unsigned operands:
// low0 / high0 the low / high nibbles of channels 0-7, low1 / high1 those of channels 8-15.
template <bool Symmetric>
struct Int4Block {
  __m256i low0, high0, low1, high1;
  explicit Int4Block(const std::uint8_t* block) {
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i flip = _mm256_set1_epi8(Symmetric ? static_cast<char>(0x88) : 0);
    const __m256i q0 =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)), flip);
    const __m256i q1 =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32)), flip);
    low0 = _mm256_and_si256(q0, nibble);
    high0 = _mm256_and_si256(_mm256_srli_epi16(q0, 4), nibble);
    low1 = _mm256_and_si256(q1, nibble);
    high1 = _mm256_and_si256(_mm256_srli_epi16(q1, 4), nibble);
  }
  // d0 / d1 (channels 0-7 / 8-15) += Σ xq · u for the 8 activation codes at x (staged in the
  // block's nibble order): xq unsigned, or with block-wise activations signed (then u is the
  // unsigned operand of vpmaddubsw: pairs ≤ 2 · 15 · 127).
  template <bool Blocks>
  void multiply(const std::uint8_t* x, __m256i& d0, __m256i& d1) const {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i x_low = broadcast4(x), x_high = broadcast4(x + 4);
    const auto product = [](__m256i xv, __m256i u) {
      return Blocks ? _mm256_maddubs_epi16(u, xv) : _mm256_maddubs_epi16(xv, u);
    };
    d0 = _mm256_add_epi32(
        d0,
        _mm256_madd_epi16(_mm256_add_epi16(product(x_low, low0), product(x_high, high0)), ones));
    d1 = _mm256_add_epi32(
        d1,
        _mm256_madd_epi16(_mm256_add_epi16(product(x_low, low1), product(x_high, high1)), ones));
  }
};

// Codes of 8 channels at two k as int16 pairs: signed for the symmetric grid, the affine lanes
// unsigned.
template <bool Symmetric>
inline __m256i widen(__m128i pairs) {
  return Symmetric ? _mm256_cvtepi8_epi16(pairs) : _mm256_cvtepu8_epi16(pairs);
}

// An int8 block (4 k × 16 channels, 16 bytes per k) as vpmaddwd operands: w02_h holds, for
// channels 8h .. 8h + 7, one dword per channel with its lanes u at k0 and k0 + 2 as int16; w13_h
// those at k0 + 1 and k0 + 3.
template <bool Symmetric>
struct Int8Block {
  __m256i w02_0, w13_0, w02_1, w13_1;
  explicit Int8Block(const std::uint8_t* block) {
    const auto row = [block](int t) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * t));
    };
    const __m128i k0 = row(0), k1 = row(1), k2 = row(2), k3 = row(3);
    w02_0 = widen<Symmetric>(_mm_unpacklo_epi8(k0, k2));
    w02_1 = widen<Symmetric>(_mm_unpackhi_epi8(k0, k2));
    w13_0 = widen<Symmetric>(_mm_unpacklo_epi8(k1, k3));
    w13_1 = widen<Symmetric>(_mm_unpackhi_epi8(k1, k3));
  }
  // d0 / d1 (channels 0-7 / 8-15) += Σ xq · u for the 4 activation codes at x (k order),
  // unsigned, or signed with block-wise activations.
  template <bool Blocks>
  void multiply(const std::uint8_t* x, __m256i& d0, __m256i& d1) const {
    const __m256i codes = broadcast4(x);
    // (x0, x2) and (x1, x3) as int16 words, zero- or sign-extended.
    const __m256i x02 = Blocks ? _mm256_srai_epi16(_mm256_slli_epi16(codes, 8), 8)
                               : _mm256_and_si256(codes, _mm256_set1_epi32(0x00ff00ff));
    const __m256i x13 = Blocks ? _mm256_srai_epi16(codes, 8) : _mm256_srli_epi16(codes, 8);
    d0 = _mm256_add_epi32(d0, _mm256_madd_epi16(x02, w02_0));
    d0 = _mm256_add_epi32(d0, _mm256_madd_epi16(x13, w13_0));
    d1 = _mm256_add_epi32(d1, _mm256_madd_epi16(x02, w02_1));
    d1 = _mm256_add_epi32(d1, _mm256_madd_epi16(x13, w13_1));
  }
};

// out[r] = Σ xq · u over `blocks` code blocks of a group for R rows (x[r]: row r's codes at the
// group's start), channels in order. A function of its own with one named accumulator per row
// and half panel, the shape in which GCC keeps all 8 in registers (an array of them in the loop
// inlined next to the flush: 5 spilled, int8 per-channel M = 64 about 5 % slower).
template <int Bits, bool Symmetric, bool Blocks, int R>
__attribute__((noinline)) void group_dot(const std::uint8_t* codes, std::int64_t blocks,
                                         const std::uint8_t* const (&x)[R],
                                         std::int32_t (&out)[R][16]) {
  using Block = std::conditional_t<Bits == 4, Int4Block<Symmetric>, Int8Block<Symmetric>>;
  constexpr int step = Bits == 4 ? 8 : 4;  // k per 64-byte block
  const __m256i zero = _mm256_setzero_si256();
  __m256i d00 = zero, d01 = zero, d10 = zero, d11 = zero, d20 = zero, d21 = zero, d30 = zero,
          d31 = zero;
  const std::uint8_t* x0 = x[0];
  const std::uint8_t* x1 = x[std::min(1, R - 1)];
  const std::uint8_t* x2 = x[std::min(2, R - 1)];
  const std::uint8_t* x3 = x[std::min(3, R - 1)];
  for (std::int64_t b = 0; b < blocks; ++b) {
    kernels::stream_prefetch(codes + 64 * b);  // a panel's records are one stream
    const Block w(codes + 64 * b);
    w.template multiply<Blocks>(x0 + step * b, d00, d01);
    if constexpr (R > 1) w.template multiply<Blocks>(x1 + step * b, d10, d11);
    if constexpr (R > 2) w.template multiply<Blocks>(x2 + step * b, d20, d21);
    if constexpr (R > 3) w.template multiply<Blocks>(x3 + step * b, d30, d31);
  }
  const __m256i sums[4][2] = {{d00, d01}, {d10, d11}, {d20, d21}, {d30, d31}};
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h)
      _mm256_store_si256(reinterpret_cast<__m256i*>(out[r] + 8 * h), sums[r][h]);
}

// Block-wise activations (Int8Args::x_block_scales): D = dot − offset · Σ xq (int4 signed grid:
// offset 8; affine: the stored zero point z'; int8 signed: 0, its codes are used signed), then
// acc = fma(fl(s · s_x), float(D), acc) per group and y = acc + bias.
template <int Bits, bool Symmetric, int R>
void rows_of_panel_blocks(const Int8Args& a, std::int64_t panel, std::int64_t row0) {
  const PackedView& v = a.w;
  constexpr int codes_per_block = Bits == 4 ? 8 : 4;
  alignas(32) float acc[R][2][8] = {};
  for (std::int64_t j = 0; j < v.groups; ++j) {
    const std::int64_t len = v.padded_length(j);
    const std::uint8_t* rec = v.record(panel, j);
    const std::uint8_t* x[R];
    for (int r = 0; r < R; ++r)
      x[r] = a.xq + (row0 + r) * a.xq_stride + j * v.group_length;
    alignas(32) std::int32_t dot[R][16];
    group_dot<Bits, Symmetric, true, R>(rec, len / codes_per_block, x, dot);
    const std::uint8_t* meta = rec + v.code_bytes(len);
    const std::uint8_t* panel_data = v.data + panel * v.panel_bytes;
    for (int h = 0; h < 2; ++h) {
      if constexpr (Bits == 4 && !Symmetric) {
        if (v.superblock()) {  // acc = fma(fl(s · s_x), P, acc); acc = fnmadd(fl(o · s_x), Sx, acc)
          const GroupAffine8 g = load_half_affine(v, panel_data, j, meta, h);
          for (int r = 0; r < R; ++r) {
            const std::int64_t at = (row0 + r) * v.groups + j;
            const __m256 sx = _mm256_set1_ps(a.x_block_scales[at]);
            const __m256i d = _mm256_load_si256(reinterpret_cast<const __m256i*>(dot[r] + 8 * h));
            __m256 f = _mm256_fmadd_ps(_mm256_mul_ps(g.scale, sx), _mm256_cvtepi32_ps(d),
                                       _mm256_load_ps(acc[r][h]));
            f = _mm256_fnmadd_ps(_mm256_mul_ps(g.offset, sx),
                                 _mm256_set1_ps(static_cast<float>(a.xq_group_sums[at])), f);
            _mm256_store_ps(acc[r][h], f);
          }
          continue;
        }
      }
      const __m256 s = load_half_scales(v, meta, h);
      __m256i zero_points = _mm256_setzero_si256();
      if constexpr (!Symmetric) {
        std::int64_t z8;
        std::memcpy(&z8, meta + v.scale_bytes() + 8 * h, 8);
        zero_points = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(z8));
      }
      for (int r = 0; r < R; ++r) {
        const std::int64_t at = (row0 + r) * v.groups + j;
        const __m256i sum = _mm256_set1_epi32(a.xq_group_sums[at]);
        __m256i d = _mm256_load_si256(reinterpret_cast<const __m256i*>(dot[r] + 8 * h));
        if constexpr (!Symmetric) {
          d = _mm256_sub_epi32(d, _mm256_mullo_epi32(zero_points, sum));
        } else if constexpr (Bits == 4) {
          d = _mm256_sub_epi32(d, _mm256_slli_epi32(sum, 3));  // 8 · Σ xq
        }
        const __m256 sx = _mm256_mul_ps(s, _mm256_set1_ps(a.x_block_scales[at]));
        _mm256_store_ps(acc[r][h],
                        _mm256_fmadd_ps(sx, _mm256_cvtepi32_ps(d), _mm256_load_ps(acc[r][h])));
      }
    }
  }
  for (int h = 0; h < 2; ++h) {
    const std::int64_t col = panel * panel_width + 8 * h;
    const std::int64_t valid = std::min<std::int64_t>(8, v.n - col);
    alignas(32) float bias[8] = {};
    for (std::int64_t c = 0; c < valid && a.bias != nullptr; ++c)
      bias[c] = a.bias[col + c];
    for (int r = 0; r < R; ++r) {
      alignas(32) float out[8];
      _mm256_store_ps(out, _mm256_add_ps(_mm256_load_ps(acc[r][h]), _mm256_load_ps(bias)));
      std::memcpy(a.y + (row0 + r) * a.y_stride + col, out,
                  static_cast<std::size_t>(std::max<std::int64_t>(valid, 0)) * sizeof(float));
    }
  }
}

template <int Bits, bool Symmetric, int R>
void rows_of_panel(const Int8Args& a, std::int64_t panel, std::int64_t row0) {
  if (a.x_block_scales != nullptr) {
    rows_of_panel_blocks<Bits, Symmetric, R>(a, panel, row0);
    return;
  }
  const PackedView& v = a.w;
  constexpr int codes_per_block = Bits == 4 ? 8 : 4;  // k per 64-byte block
  const std::uint8_t* xq[R];
  for (int r = 0; r < R; ++r)
    xq[r] = a.xq + (row0 + r) * a.xq_stride;
  // Float accumulators in L1, touched once per group (the call to group_dot clobbers the ymm
  // registers anyway).
  alignas(32) float acc[R][2][8] = {};
  for (std::int64_t j = 0; j < v.groups; ++j) {
    const std::int64_t len = v.padded_length(j);
    const std::int64_t k0 = j * v.group_length;
    const std::uint8_t* rec = v.record(panel, j);
    const std::uint8_t* x[R];
    for (int r = 0; r < R; ++r)
      x[r] = xq[r] + k0;
    alignas(32) std::int32_t dot[R][16];
    group_dot<Bits, Symmetric, false, R>(rec, len / codes_per_block, x, dot);
    // The group's flush: acc = fma(s, float(dot), acc); affine: acc = fnmadd(fl(s · zw), X, acc).
    const std::uint8_t* meta = rec + v.code_bytes(len);
    for (int h = 0; h < 2; ++h) {
      const GroupAffine8 g =
          load_half_affine(v, v.data + panel * v.panel_bytes, j, meta, h, Bits == 8 ? 128 : 0);
      const __m256 s = g.scale;
      const __m256 szw = g.offset;
      for (int r = 0; r < R; ++r) {
        __m256i d = _mm256_load_si256(reinterpret_cast<const __m256i*>(dot[r] + 8 * h));
        if constexpr (code_offset<Bits, Symmetric>() != 0) {
          d = _mm256_sub_epi32(d, _mm256_set1_epi32(code_offset<Bits, Symmetric>() *
                                                    a.xq_group_sums[(row0 + r) * v.groups + j]));
        }
        __m256 f = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(d), _mm256_load_ps(acc[r][h]));
        if constexpr (!Symmetric) {
          f = _mm256_fnmadd_ps(szw, _mm256_set1_ps(a.x_group_sums[(row0 + r) * v.groups + j]), f);
        }
        _mm256_store_ps(acc[r][h], f);
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
      __m256 f =
          _mm256_fnmadd_ps(_mm256_set1_ps(a.x_zero[row0 + r]), sums, _mm256_load_ps(acc[r][h]));
      f = _mm256_fmadd_ps(_mm256_set1_ps(a.x_scale[row0 + r]), f, _mm256_load_ps(bias));
      alignas(32) float out[8];
      _mm256_store_ps(out, f);
      std::memcpy(a.y + (row0 + r) * a.y_stride + col, out,
                  static_cast<std::size_t>(std::max<std::int64_t>(valid, 0)) * sizeof(float));
    }
  }
}

template <int Bits, bool Symmetric>
void run(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  for (std::int64_t panel = panel_begin; panel < panel_end; ++panel) {
    for (std::int64_t row0 = 0; row0 < a.m; row0 += max_rows) {
      switch (std::min<std::int64_t>(max_rows, a.m - row0)) {
        case 1:
          rows_of_panel<Bits, Symmetric, 1>(a, panel, row0);
          break;
        case 2:
          rows_of_panel<Bits, Symmetric, 2>(a, panel, row0);
          break;
        case 3:
          rows_of_panel<Bits, Symmetric, 3>(a, panel, row0);
          break;
        default:
          rows_of_panel<Bits, Symmetric, 4>(a, panel, row0);
          break;
      }
    }
  }
}

}  // namespace

void weight_only_u8_16c__avx2(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end) {
  with_format(a.w, [&](auto bits, auto symmetric) {
    run<decltype(bits)::value, decltype(symmetric)::value>(a, panel_begin, panel_end);
  });
}

}  // namespace lucid::quantization::weight_only
