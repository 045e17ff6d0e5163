// Internal: ggml's block layouts (byte for byte), the kernel signatures that read and write them
// and the scalar rounding helpers every tier shares.
//
// The structs mirror ggml-common.h: little-endian fp16 scales stored as raw bits, codes packed as
// docs/formats.md ("ggml block types") describes. Every tier must write exactly the bytes the
// reference tier (src/kernels/reference/ggml_*.cpp) writes.
#pragma once

#include <cstdint>
#include <cstring>

#include "lucid/quantization/scalar_type.hpp"

namespace lucid::quantization::kernels {

constexpr int ggml_block_32 = 32;      // values per legacy / IQ4_NL block
constexpr int ggml_super_block = 256;  // QK_K: values per K-quant super-block

struct BlockQ8_0 {
  std::uint16_t d;  // fp16 scale
  std::int8_t qs[32];
};
struct BlockQ4_0 {
  std::uint16_t d;
  std::uint8_t qs[16];  // byte j: element j (low nibble), element j + 16 (high nibble)
};
struct BlockQ4_1 {
  std::uint16_t d;
  std::uint16_t m;  // fp16 minimum
  std::uint8_t qs[16];
};
struct BlockQ5_0 {
  std::uint16_t d;
  std::uint8_t qh[4];  // bit j of the little-endian u32: bit 4 of element j
  std::uint8_t qs[16];
};
struct BlockQ5_1 {
  std::uint16_t d;
  std::uint16_t m;
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};
struct BlockIq4Nl {
  std::uint16_t d;
  std::uint8_t qs[16];  // 4-bit indices into the IQ4_NL codebook
};
struct BlockQ2_K {
  std::uint8_t scales[16];  // low nibble: scale, high nibble: min, per 16-value sub-block
  std::uint8_t qs[64];
  std::uint16_t d;
  std::uint16_t dmin;
};
struct BlockQ3_K {
  std::uint8_t hmask[32];
  std::uint8_t qs[64];
  std::uint8_t scales[12];  // 16 six-bit scales
  std::uint16_t d;
};
struct BlockQ4_K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[12];  // 8 six-bit (scale, min) pairs
  std::uint8_t qs[128];
};
struct BlockQ5_K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[12];
  std::uint8_t qh[32];
  std::uint8_t qs[128];
};
struct BlockQ6_K {
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  std::uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockIq4Nl) == 18);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(alignof(BlockQ8_0) == 2 && alignof(BlockQ6_K) == 2);

/// The IQ4_NL codebook (ggml's kvalues_iq4nl).
constexpr std::int8_t iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

/// The block types that have kernels, the index of the kernel arrays.
enum class GgmlKernel : std::uint8_t {
  q8_0,
  q4_0,
  q4_1,
  q5_0,
  q5_1,
  q2_k,
  q3_k,
  q4_k,
  q5_k,
  q6_k,
  iq4_nl,
  f16,
  bf16,
};
constexpr int ggml_kernel_count = 13;

// Quantizes one row of `n` floats (a multiple of the block size, finite) into n / block blocks.
// `imatrix` (nullable) holds n importance weights; ggml's imatrix algorithm runs when it is given.
using GgmlQuantizeRowFn = void (*)(const float* x, void* blocks, std::int64_t n,
                                   const float* imatrix);
// Decodes n values (a multiple of the block size) from n / block blocks.
using GgmlDequantizeFn = void (*)(const void* blocks, float* y, std::int64_t n);

/// ggml's nearest_int: adds 1.5 * 2^23 and reads the low mantissa bits, so ties round to even.
/// Defined on every input (a bit manipulation); meaningful for |f| <= 4194303.
inline int ggml_nearest_int(float f) {
  const float shifted = f + 12582912.0f;
  std::int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

/// The int32 an x86 cvttss2si gives: truncation toward zero, 0x80000000 for NaN and for values
/// outside int32. ggml's C casts from float to (u)int8 compile to this plus "keep the low byte";
/// writing it out keeps the out-of-range cases (an overflowing 1/d) defined and identical.
inline std::int32_t x86_truncate(float f) {
  if (!(f > -2147483648.0f && f < 2147483648.0f)) return INT32_MIN;
  return static_cast<std::int32_t>(f);
}
/// (int8_t)f as ggml's x86 build computes it.
inline std::int8_t truncate_to_int8(float f) {
  return static_cast<std::int8_t>(static_cast<std::uint8_t>(x86_truncate(f) & 0xff));
}

/// float32 -> fp16 bits as ggml's GGML_FP32_TO_FP16: round to nearest even with subnormals,
/// overflow to +-Inf, NaN -> 0x7e00 with the sign kept. (Out of line, in the reference tier, so
/// the ISA tiers can call it without an instance compiled with their flags.)
std::uint16_t ggml_fp16(float f);
/// fp16 bits -> float32 (exact).
float ggml_fp32(std::uint16_t h);

}  // namespace lucid::quantization::kernels
