// Reference: ggml's legacy 32-value blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1), with and without an
// importance matrix, plus F16 and BF16 rows: the specification the other tiers must match.
#include <cmath>
#include <cstring>

#include "kernels/ggml_kquant_finish.hpp"
#include "kernels/reference/ggml_kernels.hpp"
#include "kernels/reference/ggml_search.hpp"

namespace lucid::quantization::kernels {
namespace reference {
namespace {

constexpr int qk = ggml_block_32;

// The signed value of largest magnitude in a block (the first on ties; +0 for an all-zero block).
float block_signed_max(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < qk; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void block_min_max(const float* x, float* min, float* max) {
  *min = 3.40282347e38f;
  *max = -3.40282347e38f;
  for (int j = 0; j < qk; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

// sigma^2 of ggml's legacy imatrix path: the mean square over the whole row.
float row_sigma2(const float* x, std::int64_t n) {
  float sum_x2 = 0;
  for (std::int64_t j = 0; j < n; ++j)
    sum_x2 += x[j] * x[j];
  return sum_x2 / static_cast<float>(n);
}

void imatrix_weights(const float* xb, const float* qw, float sigma2, float* weight) {
  for (int j = 0; j < qk; ++j)
    weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
}

// Packs 32 codes (0..31) into nibbles and the u32 of fifth bits.
void pack_5bit(const std::uint8_t* codes, std::uint8_t* qs, std::uint8_t* qh_bytes) {
  std::uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const std::uint8_t lo = codes[j];
    const std::uint8_t hi = codes[j + 16];
    qs[j] = static_cast<std::uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
    qh |= ((lo & 0x10u) >> 4) << j;
    qh |= ((hi & 0x10u) >> 4) << (j + 16);
  }
  for (int b = 0; b < 4; ++b)
    qh_bytes[b] = static_cast<std::uint8_t>(qh >> (8 * b));
}

std::uint32_t load_qh(const std::uint8_t* qh_bytes) {
  return static_cast<std::uint32_t>(qh_bytes[0]) | static_cast<std::uint32_t>(qh_bytes[1]) << 8 |
         static_cast<std::uint32_t>(qh_bytes[2]) << 16 |
         static_cast<std::uint32_t>(qh_bytes[3]) << 24;
}

}  // namespace

}  // namespace reference

std::uint16_t ggml_fp16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<std::uint16_t>(((bits >> 16) & 0x8000u) | 0x7e00u);
  return float_to_float16(f);
}

float ggml_fp32(std::uint16_t h) {
  return float16_to_float(h);
}

void finish_q4_0(float d, const std::uint8_t* codes, BlockQ4_0& y) {
  y.d = ggml_fp16(d);
  for (int j = 0; j < 16; ++j)
    y.qs[j] = static_cast<std::uint8_t>(codes[j] | (codes[j + 16] << 4));
}

void finish_q5_0(float d, const std::uint8_t* codes, BlockQ5_0& y) {
  y.d = ggml_fp16(d);
  reference::pack_5bit(codes, y.qs, y.qh);
}

void finish_q4_1(float d, float the_min, const std::uint8_t* codes, BlockQ4_1& y) {
  y.d = ggml_fp16(d);
  y.m = ggml_fp16(-the_min);
  for (int j = 0; j < 16; ++j)
    y.qs[j] = static_cast<std::uint8_t>(codes[j] | (codes[j + 16] << 4));
}

void finish_q5_1(float d, float the_min, const std::uint8_t* codes, BlockQ5_1& y) {
  y.d = ggml_fp16(d);
  y.m = ggml_fp16(-the_min);
  reference::pack_5bit(codes, y.qs, y.qh);
}

namespace reference {

void quantize_row_q8_0(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<BlockQ8_0*>(blocks);
  for (std::int64_t i = 0; i < n / qk; ++i, x += qk) {
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j)
      amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = ggml_fp16(d);
    for (int j = 0; j < qk; ++j)
      y[i].qs[j] = truncate_to_int8(std::round(x[j] * id));
  }
}

void quantize_row_q4_0(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ4_0*>(blocks);
  if (imatrix == nullptr) {
    for (std::int64_t i = 0; i < n / qk; ++i, x += qk) {
      const float d = block_signed_max(x) / -8;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      y[i].d = ggml_fp16(d);
      for (int j = 0; j < qk / 2; ++j) {
        const int lo = std::min(15, static_cast<int>(truncate_to_int8(x[j] * id + 8.5f)));
        const int hi = std::min(15, static_cast<int>(truncate_to_int8(x[j + 16] * id + 8.5f)));
        y[i].qs[j] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(lo) |
                                               (static_cast<std::uint8_t>(hi) << 4));
      }
    }
    return;
  }
  const float sigma2 = row_sigma2(x, n);
  float weight[qk];
  std::int8_t L[qk];
  for (std::int64_t i = 0; i < n / qk; ++i) {
    const float* xb = x + qk * i;
    imatrix_weights(xb, imatrix + qk * i, sigma2, weight);
    const float d = make_qx_quants(qk, 8, xb, L, 1, weight);
    std::uint8_t codes[qk];
    for (int j = 0; j < qk; ++j)
      codes[j] = static_cast<std::uint8_t>(L[j]);
    finish_q4_0(d, codes, y[i]);
  }
}

void quantize_row_q4_1(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ4_1*>(blocks);
  if (imatrix == nullptr) {
    for (std::int64_t i = 0; i < n / qk; ++i, x += qk) {
      float min;
      float max;
      block_min_max(x, &min, &max);
      const float d = (max - min) / 15;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      y[i].d = ggml_fp16(d);
      y[i].m = ggml_fp16(min);
      for (int j = 0; j < qk / 2; ++j) {
        const int lo = std::min(15, static_cast<int>(truncate_to_int8((x[j] - min) * id + 0.5f)));
        const int hi =
            std::min(15, static_cast<int>(truncate_to_int8((x[j + 16] - min) * id + 0.5f)));
        y[i].qs[j] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(lo) |
                                               (static_cast<std::uint8_t>(hi) << 4));
      }
    }
    return;
  }
  const float sigma2 = row_sigma2(x, n);
  float weight[qk];
  std::uint8_t L[qk];
  std::uint8_t Laux[qk];
  for (std::int64_t i = 0; i < n / qk; ++i) {
    const float* xb = x + qk * i;
    imatrix_weights(xb, imatrix + qk * i, sigma2, weight);
    float min;
    const float d = make_qkx3_quants(qk, 15, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
    finish_q4_1(d, min, L, y[i]);
  }
}

void quantize_row_q5_0(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ5_0*>(blocks);
  std::uint8_t codes[qk];
  if (imatrix == nullptr) {
    for (std::int64_t i = 0; i < n / qk; ++i, x += qk) {
      const float d = block_signed_max(x) / -16;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      y[i].d = ggml_fp16(d);
      for (int j = 0; j < qk; ++j) {
        const int code = std::min(31, static_cast<int>(truncate_to_int8(x[j] * id + 16.5f)));
        codes[j] = static_cast<std::uint8_t>(code);
      }
      pack_5bit(codes, y[i].qs, y[i].qh);
    }
    return;
  }
  const float sigma2 = row_sigma2(x, n);
  float weight[qk];
  std::int8_t L[qk];
  for (std::int64_t i = 0; i < n / qk; ++i) {
    const float* xb = x + qk * i;
    imatrix_weights(xb, imatrix + qk * i, sigma2, weight);
    const float d = make_qx_quants(qk, 16, xb, L, 1, weight);
    for (int j = 0; j < qk; ++j)
      codes[j] = static_cast<std::uint8_t>(L[j]);
    finish_q5_0(d, codes, y[i]);
  }
}

void quantize_row_q5_1(const float* x, void* blocks, std::int64_t n, const float* imatrix) {
  auto* y = static_cast<BlockQ5_1*>(blocks);
  std::uint8_t codes[qk];
  if (imatrix == nullptr) {
    for (std::int64_t i = 0; i < n / qk; ++i, x += qk) {
      float min;
      float max;
      block_min_max(x, &min, &max);
      const float d = (max - min) / 31;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      y[i].d = ggml_fp16(d);
      y[i].m = ggml_fp16(min);
      for (int j = 0; j < qk; ++j)  // no clamp: (uint8_t)(v + 0.5f), as ggml writes it
        codes[j] = static_cast<std::uint8_t>(x86_truncate((x[j] - min) * id + 0.5f) & 0xff);
      pack_5bit(codes, y[i].qs, y[i].qh);
    }
    return;
  }
  const float sigma2 = row_sigma2(x, n);
  float weight[qk];
  std::uint8_t Laux[qk];
  for (std::int64_t i = 0; i < n / qk; ++i) {
    const float* xb = x + qk * i;
    imatrix_weights(xb, imatrix + qk * i, sigma2, weight);
    float min;
    const float d =
        make_qkx3_quants(qk, 31, xb, weight, codes, &min, Laux, -0.9f, 0.05f, 36, false);
    finish_q5_1(d, min, codes, y[i]);
  }
}

void quantize_row_f16(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<std::uint16_t*>(blocks);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = ggml_fp16(x[i]);
}

void quantize_row_bf16(const float* x, void* blocks, std::int64_t n, const float*) {
  auto* y = static_cast<std::uint16_t*>(blocks);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = float_to_bfloat16(x[i]);
}

void dequantize_q8_0(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ8_0*>(blocks);
  for (std::int64_t i = 0; i < n / qk; ++i, y += qk) {
    const float d = ggml_fp32(x[i].d);
    for (int j = 0; j < qk; ++j)
      y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

void dequantize_q4_0(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ4_0*>(blocks);
  for (std::int64_t i = 0; i < n / qk; ++i, y += qk) {
    const float d = ggml_fp32(x[i].d);
    for (int j = 0; j < qk / 2; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0x0f) - 8) * d;
      y[j + 16] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ4_1*>(blocks);
  for (std::int64_t i = 0; i < n / qk; ++i, y += qk) {
    const float d = ggml_fp32(x[i].d);
    const float m = ggml_fp32(x[i].m);
    for (int j = 0; j < qk / 2; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0x0f) * d + m;
      y[j + 16] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ5_0*>(blocks);
  for (std::int64_t i = 0; i < n / qk; ++i, y += qk) {
    const float d = ggml_fp32(x[i].d);
    const std::uint32_t qh = load_qh(x[i].qh);
    for (int j = 0; j < qk / 2; ++j) {
      const int lo = static_cast<int>((x[i].qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10));
      const int hi = static_cast<int>((x[i].qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
      y[j] = static_cast<float>(lo - 16) * d;
      y[j + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

void dequantize_q5_1(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const BlockQ5_1*>(blocks);
  for (std::int64_t i = 0; i < n / qk; ++i, y += qk) {
    const float d = ggml_fp32(x[i].d);
    const float m = ggml_fp32(x[i].m);
    const std::uint32_t qh = load_qh(x[i].qh);
    for (int j = 0; j < qk / 2; ++j) {
      const int lo = static_cast<int>((x[i].qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10));
      const int hi = static_cast<int>((x[i].qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
      y[j] = static_cast<float>(lo) * d + m;
      y[j + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

void dequantize_f16(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const std::uint16_t*>(blocks);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = ggml_fp32(x[i]);
}

void dequantize_bf16(const void* blocks, float* y, std::int64_t n) {
  const auto* x = static_cast<const std::uint16_t*>(blocks);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = bfloat16_to_float(x[i]);
}

}  // namespace reference
}  // namespace lucid::quantization::kernels
