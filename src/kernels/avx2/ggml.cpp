// AVX2 (+F16C) ggml block kernels: Q8_0 / Q4_0 quantize and decode, F16 / BF16 rows, and the
// K-quant and imatrix searches on 16 lanes (ggml_lanes_rows.hpp). Same bytes as the reference.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/simd.hpp"
#include "kernels/ggml_kquant_decode.hpp"
#include "kernels/ggml_lanes_rows.hpp"
#include "kernels/reference/ggml_kernels.hpp"

namespace lucid::quantization::kernels::avx2 {
namespace {

// fp16 <-> fp32 of one scale with F16C: round to nearest even like ggml_fp16 for every non-NaN
// value (a scale computed from finite input is never NaN). Decoding a NaN scale gives the quiet
// NaN the reference's product gives too.
inline std::uint16_t scale_to_fp16(float d) {
  return static_cast<std::uint16_t>(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
}
inline float scale_to_fp32(std::uint16_t h) {
  return _cvtsh_ss(h);
}

constexpr int search_lanes = 16;  // two ymm per lane array: two independent dependency chains

inline float horizontal_max(__m256 m) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// roundf: truncate, then step away from zero when the dropped part is at least one half.
inline __m256 round_half_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 dropped = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
  const __m256 step = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
  const __m256 away = _mm256_cmp_ps(dropped, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(t, _mm256_and_ps(away, step));
}

void quantize_row_q8_0(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<BlockQ8_0*>(blocks);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
    __m256 v[4];
    for (int j = 0; j < 4; ++j)
      v[j] = _mm256_loadu_ps(x + 8 * j);
    const __m256 m01 = _mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1]));
    const __m256 m23 = _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3]));
    const float amax = horizontal_max(_mm256_max_ps(m01, m23));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = scale_to_fp16(d);
    const __m256 vid = _mm256_set1_ps(id);
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[j], vid)));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y[i].qs + 8 * j), low_bytes(q));
    }
  }
}

void dequantize_q8_0(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ8_0*>(blocks);
  for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m256 d = _mm256_set1_ps(scale_to_fp32(x[i].d));
    for (int j = 0; j < 4; ++j) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[i].qs + 8 * j));
      _mm256_storeu_ps(y + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
    }
  }
}

// Q4_0's code of 8 values: min(15, (int8_t)(x * id + 8.5f)) as a byte in each int32 lane.
inline __m256i q4_0_codes(__m256 v, __m256 id) {
  const __m256i t = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v, id), _mm256_set1_ps(8.5f)));
  const __m256i low = _mm256_srai_epi32(_mm256_slli_epi32(t, 24), 24);
  return _mm256_and_si256(_mm256_min_epi32(low, _mm256_set1_epi32(15)), _mm256_set1_epi32(0xff));
}

void quantize_q4_0_plain(const float* x, BlockQ4_0* y, std::int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
    __m256 v[4];
    __m256 a[4];
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(x + 8 * j);
      a[j] = _mm256_andnot_ps(sign, v[j]);
    }
    const float amax =
        horizontal_max(_mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3])));
    float max = 0.0f;  // the first value of largest magnitude (ggml's strict '<' scan)
    if (amax > 0.0f) {
      const __m256 target = _mm256_set1_ps(amax);
      std::uint32_t hits = 0;
      for (int j = 0; j < 4; ++j) {
        const int mask = _mm256_movemask_ps(_mm256_cmp_ps(a[j], target, _CMP_EQ_OQ));
        hits |= static_cast<std::uint32_t>(mask) << (8 * j);
      }
      max = x[__builtin_ctz(hits)];
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = scale_to_fp16(d);
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i mask = _mm256_set1_epi32(0xff);
    const __m256i lo = _mm256_and_si256(
        _mm256_or_si256(q4_0_codes(v[0], vid), _mm256_slli_epi32(q4_0_codes(v[2], vid), 4)), mask);
    const __m256i hi = _mm256_and_si256(
        _mm256_or_si256(q4_0_codes(v[1], vid), _mm256_slli_epi32(q4_0_codes(v[3], vid), 4)), mask);
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    const __m128i bytes =
        _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs), bytes);
  }
}

void quantize_row_q4_0(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  if (imatrix != nullptr) {
    lanes_row_legacy_imatrix<search_lanes, BlockQ4_0>(x, blocks, n, imatrix);
    return;
  }
  quantize_q4_0_plain(x, static_cast<BlockQ4_0*>(blocks), n);
}

void dequantize_q4_0(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ4_0*>(blocks);
  const __m128i low4 = _mm_set1_epi8(0x0f);
  for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m256 d = _mm256_set1_ps(scale_to_fp32(x[i].d));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
    const __m128i halves[2] = {_mm_and_si128(q, low4), _mm_and_si128(_mm_srli_epi16(q, 4), low4)};
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 2; ++j) {
        const __m128i part = j == 0 ? halves[h] : _mm_srli_si128(halves[h], 8);
        const __m256i codes = _mm256_sub_epi32(_mm256_cvtepu8_epi32(part), _mm256_set1_epi32(8));
        _mm256_storeu_ps(y + 16 * h + 8 * j, _mm256_mul_ps(_mm256_cvtepi32_ps(codes), d));
      }
    }
  }
}

void quantize_row_q4_1(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  if (imatrix == nullptr) return reference::quantize_row_q4_1(x, blocks, n, nullptr);
  lanes_row_legacy_imatrix<search_lanes, BlockQ4_1>(x, blocks, n, imatrix);
}

void quantize_row_q5_0(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  if (imatrix == nullptr) return reference::quantize_row_q5_0(x, blocks, n, nullptr);
  lanes_row_legacy_imatrix<search_lanes, BlockQ5_0>(x, blocks, n, imatrix);
}

void quantize_row_q5_1(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  if (imatrix == nullptr) return reference::quantize_row_q5_1(x, blocks, n, nullptr);
  lanes_row_legacy_imatrix<search_lanes, BlockQ5_1>(x, blocks, n, imatrix);
}

// F16 with F16C (round to nearest even, subnormals, overflow to inf: ggml's conversion for
// every non-NaN input, and the driver admits no NaN).
void quantize_row_f16(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<std::uint16_t*>(blocks);
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + k), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + k), h);
  }
  reference::quantize_row_f16(x + k, y + k, n - k, nullptr);
}

// fp16 -> fp32 by integer arithmetic (NaN payloads kept bit for bit, like the reference).
void dequantize_f16(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const std::uint16_t*>(blocks);
  const __m256i exp_mask = _mm256_set1_epi32(0x7c00 << 13);
  const __m256 subnormal_bias = _mm256_castsi256_ps(_mm256_set1_epi32(113 << 23));
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256i h =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + k)));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
    __m256i o = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x7fff)), 13);
    const __m256i exp = _mm256_and_si256(o, exp_mask);
    o = _mm256_add_epi32(o, _mm256_set1_epi32((127 - 15) << 23));
    const __m256i inf_nan = _mm256_cmpeq_epi32(exp, exp_mask);
    o = _mm256_add_epi32(o, _mm256_and_si256(inf_nan, _mm256_set1_epi32((128 - 16) << 23)));
    const __m256i small = _mm256_cmpeq_epi32(exp, _mm256_setzero_si256());
    const __m256 renormalised = _mm256_sub_ps(
        _mm256_castsi256_ps(_mm256_add_epi32(o, _mm256_set1_epi32(1 << 23))), subnormal_bias);
    const __m256i magnitude = _mm256_blendv_epi8(o, _mm256_castps_si256(renormalised), small);
    _mm256_storeu_ps(y + k, _mm256_castsi256_ps(_mm256_or_si256(magnitude, sign)));
  }
  reference::dequantize_f16(x + k, y + k, n - k);
}

void quantize_row_bf16(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<std::uint16_t*>(blocks);
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + k));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    const __m256i out = _mm256_blendv_epi8(rounded, quiet, nan);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out, out), 0xd8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + k), _mm256_castsi256_si128(packed));
  }
  reference::quantize_row_bf16(x + k, y + k, n - k, nullptr);
}

void dequantize_bf16(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const std::uint16_t*>(blocks);
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    _mm256_storeu_ps(y + k, load8<FloatType::bf16>(x, k));
  reference::dequantize_bf16(x + k, y + k, n - k);
}

}  // namespace

void fill_ggml_kernels(KernelTable& table) {
  fill_ggml_lane_quantizers<search_lanes>(table);
  const auto set_quantize = [&](GgmlKernel kernel, GgmlQuantizeRowFn fn) {
    table.ggml_quantize[static_cast<int>(kernel)] = fn;
  };
  const auto set_decode = [&](GgmlKernel kernel, GgmlDequantizeFn fn) {
    table.ggml_dequantize[static_cast<int>(kernel)] = fn;
  };
  set_quantize(GgmlKernel::q8_0, quantize_row_q8_0);
  set_quantize(GgmlKernel::q4_0, quantize_row_q4_0);
  set_quantize(GgmlKernel::q4_1, quantize_row_q4_1);
  set_quantize(GgmlKernel::q5_0, quantize_row_q5_0);
  set_quantize(GgmlKernel::q5_1, quantize_row_q5_1);
  set_quantize(GgmlKernel::f16, quantize_row_f16);
  set_quantize(GgmlKernel::bf16, quantize_row_bf16);
  set_decode(GgmlKernel::q8_0, dequantize_q8_0);
  set_decode(GgmlKernel::q4_0, dequantize_q4_0);
  set_decode(GgmlKernel::f16, dequantize_f16);
  set_decode(GgmlKernel::bf16, dequantize_bf16);
  set_decode(GgmlKernel::q3_k, decode_q3_k_blocks);
  set_decode(GgmlKernel::q6_k, decode_q6_k_blocks);
}

}  // namespace lucid::quantization::kernels::avx2
