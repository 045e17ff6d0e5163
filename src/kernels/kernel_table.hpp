// Internal: the signatures of every kernel and the KernelTable one variant fills.
//
// An elementwise kernel processes a contiguous run of `n` elements with no allocation, no
// threading and no validation: the caller (src/core) has already checked the
// parameters and split the work. The other families' contracts are in their headers
// (gemm_int8.hpp, conv_depthwise.hpp, weight_only.hpp, error_sums.hpp, histogram.hpp). Every tier
// must produce bit-identical output to the reference tier (src/kernels/reference), which is the
// specification.
#pragma once

#include <cstdint>

#include "kernels/conv_depthwise.hpp"
#include "kernels/error_sums.hpp"
#include "kernels/gemm_int8.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/histogram.hpp"
#include "kernels/weight_only.hpp"
#include "lucid/quantization/runtime.hpp"

namespace lucid::quantization::kernels {

/// Floating-point input element types, the first index of the kernel arrays.
enum class FloatType : std::uint8_t { f32, f16, bf16 };
constexpr int float_type_count = 3;

/// Bytes per element of an input of type T.
template <FloatType T>
constexpr std::int64_t input_element_bytes = T == FloatType::f32 ? 4 : 2;

/// Element k of an input of type T.
template <FloatType T>
const void* input_at(const void* x, std::int64_t k) {
  return static_cast<const char*>(x) + k * input_element_bytes<T>;
}

/// Width of the codes a quantize kernel writes, truncating the code to its
/// low bits (two's complement): b8 serves int8, uint8 and (via an int8
/// scratch + pack) the packed 4- and 2-bit storages.
enum class CodeWidth : std::uint8_t { b8, b16, b32 };
constexpr int code_width_count = 3;

/// Stored code types a dequantize kernel reads.
enum class CodeType : std::uint8_t { i8, u8, i16, u16, i32 };
constexpr int code_type_count = 5;

/// Float outputs of at least this many bytes (and calls with 8-bit outputs that move this many)
/// take the *_streaming kernels: no last-level cache of the CPUs measured keeps them for the
/// caller, and non-temporal stores skip the read for ownership (docs/kernels.md, "Elementwise
/// kernels"; the measurements: docs/performance.md, "Elementwise").
constexpr std::int64_t streaming_output_bytes = std::int64_t{32} << 20;

/// Whether an output of n floats is large enough for the *_streaming kernels.
constexpr bool streams_float_output(std::int64_t n) {
  return n * std::int64_t{sizeof(float)} >= streaming_output_bytes;
}

/// Whether a call that reads n elements of `input_bytes` each and writes n 8-bit codes takes the
/// *_streaming kernels: its reads and writes add up to at least streaming_output_bytes (the codes
/// are a fifth to a third of its traffic, and from 8 MiB of codes on they measured faster
/// streamed; docs/performance.md, "Elementwise").
constexpr bool streams_byte_output(std::int64_t n, std::int64_t input_bytes) {
  return n * (input_bytes + 1) >= streaming_output_bytes;
}

/// One (scale, zero point) pair, with the reciprocal quantize multiplies by.
struct Affine {
  float inv_scale;  // 1.0f / scale
  float scale;
  std::int32_t zero_point;
};

/// The integer grid [quant_min, quant_max]; it contains every zero point.
struct Grid {
  std::int32_t quant_min;
  std::int32_t quant_max;
};

/// How calculate_qparams turns a range into parameters (qparams_spec.hpp): the grid, the scheme's
/// symmetry (and the zero point it pins) and the smallest scale.
struct RangeRule {
  bool symmetric;
  std::int32_t quant_min;
  std::int32_t quant_max;
  std::int32_t symmetric_zero_point;
  float eps;
};

// q[k] = clamp(nearbyint(x[k] * inv_scale) + zero_point, grid); NaN -> zero_point.
using QuantizeFn = void (*)(const void* x, std::int64_t n, Affine p, Grid grid, void* codes);
// The same with per-element parameters: element k uses inv_scale[k], zero_point[k].
using QuantizeVecFn = void (*)(const void* x, std::int64_t n, const float* inv_scale,
                               const std::int32_t* zero_point, Grid grid, void* codes);
// out[k] = float(double(scale) * (q[k] - zero_point)).
using DequantizeFn = void (*)(const void* codes, std::int64_t n, float scale,
                              std::int32_t zero_point, float* out);
using DequantizeVecFn = void (*)(const void* codes, std::int64_t n, const float* scale,
                                 const std::int32_t* zero_point, float* out);
// out[k] = dequantize(quantize(x[k])); mask[k] = unclamped code inside the grid
// (false for NaN). `mask` may be null.
using FakeQuantizeFn = void (*)(const void* x, std::int64_t n, Affine p, Grid grid, float* out,
                                std::uint8_t* mask);
using FakeQuantizeVecFn = void (*)(const void* x, std::int64_t n, const float* inv_scale,
                                   const float* scale, const std::int32_t* zero_point, Grid grid,
                                   float* out, std::uint8_t* mask);
// int8 codes -> packed bytes, element 0 in the low bits; writes ceil(n * bits / 8)
// bytes, the last byte's unused bits zero.
using PackFn = void (*)(const std::int8_t* codes, std::int64_t n, std::uint8_t* packed);
// Packed bytes -> int8 codes (sign-extended for the signed variants).
using UnpackFn = void (*)(const std::uint8_t* packed, std::int64_t n, std::int8_t* codes);
// Folds the finite elements into *min / *max; returns how many were not finite.
using MinMaxFn = std::int64_t (*)(const void* x, std::int64_t n, float* min, float* max);
// mins[k] = min(mins[k], x[k]), maxs[k] likewise, for finite x[k]; returns the non-finite count.
using MinMaxVecFn = std::int64_t (*)(const void* x, std::int64_t n, float* mins, float* maxs);
// *abs_max = max(*abs_max, |x[k]|) over finite x[k]; returns the non-finite count.
using AbsMaxFn = std::int64_t (*)(const void* x, std::int64_t n, float* abs_max);
using AbsMaxVecFn = std::int64_t (*)(const void* x, std::int64_t n, float* abs_maxs);
// Per group g < groups of `group_size` consecutive elements (group g at element g · group_size):
// mins[g] / maxs[g] = the min / max of its finite elements (+Inf / -Inf when it has none).
// Returns whether every element was finite.
using MinMaxGroupsFn = bool (*)(const void* x, std::int64_t groups, std::int64_t group_size,
                                float* mins, float* maxs);
// Per group g < groups of `group_size` consecutive elements: abs_maxs[g] = the largest |x| of its
// finite elements (0 when it has none). Returns whether every element was finite.
using AbsMaxGroupsFn = bool (*)(const void* x, std::int64_t groups, std::int64_t group_size,
                                float* abs_maxs);
// What the caller of a per-group codes kernel knows of the groups' values: `any` (NaN, Inf, steps
// x · inv_scale of any size), or `own_range`: every element is finite, every inv_scale is finite,
// and the parameters are those of GroupQParamsFn for the groups' own ranges, so every step lies
// within the grid's span of 0 (at most 255 in size). A kernel may then skip its checks for the
// rest; the codes are the same either way.
enum class GroupValues : bool { any, own_range };
// The 8-bit codes (as QuantizeFn at width b8) of each group g with its own parameters
// (inv_scale[g], scale[g], zero_point[g]).
using QuantizeGroupsFn = void (*)(const void* x, std::int64_t groups, std::int64_t group_size,
                                  const float* inv_scale, const float* scale,
                                  const std::int32_t* zero_point, Grid grid, GroupValues values,
                                  std::int8_t* codes);
// The codes of QuantizeGroupsFn on a grid of at most 4 bits, packed two per byte as a 4-bit
// PackFn packs them; group_size even (every group starts on a byte boundary).
using QuantizeGroupsPackedFn = void (*)(const void* x, std::int64_t groups, std::int64_t group_size,
                                        const float* inv_scale, const float* scale,
                                        const std::int32_t* zero_point, Grid grid,
                                        GroupValues values, std::uint8_t* packed);
// For g < groups: (inverse[g], scales[g], zero_points[g]) = group_affine(mins[g], maxs[g], rule)
// (qparams_spec.hpp), the ranges as MinMaxGroupsFn reports them.
using GroupQParamsFn = void (*)(const float* mins, const float* maxs, std::int64_t groups,
                                const RangeRule& rule, float* inverse, float* scales,
                                std::int32_t* zero_points);
// q[k] = clamp(nearbyint(double(acc[k]) * double(multiplier)) + zero_point, grid),
// stored as 8-bit two's complement.
using RequantizeFn = void (*)(const std::int32_t* acc, std::int64_t n, float multiplier,
                              std::int32_t zero_point, Grid grid, std::uint8_t* out);
using RequantizeVecFn = void (*)(const std::int32_t* acc, std::int64_t n, const float* multiplier,
                                 const std::int32_t* zero_point, Grid grid, std::uint8_t* out);

/// Every kernel of one variant (runtime.hpp, KernelVariant). A variant may point an entry at
/// another variant's kernel where it has nothing faster.
struct KernelTable {
  Isa isa;
  QuantizeFn quantize[float_type_count][code_width_count];
  // The same bits as quantize[t][b8], the codes stored non-temporally where the tier can (as
  // dequantize_streaming; streams_byte_output).
  QuantizeFn quantize_streaming[float_type_count];
  QuantizeVecFn quantize_vec[float_type_count][code_width_count];
  DequantizeFn dequantize[code_type_count];
  // The same bits as dequantize, stored non-temporally where the tier can: for outputs of at
  // least streaming_output_bytes, which no cache keeps for the caller.
  DequantizeFn dequantize_streaming[code_type_count];
  DequantizeVecFn dequantize_vec[code_type_count];
  // [input][0]: grids of at most 16 bits; [input][1]: 32-bit grids.
  FakeQuantizeFn fake_quantize[float_type_count][2];
  // The same bits as fake_quantize, out stored non-temporally where the tier can (as
  // dequantize_streaming).
  FakeQuantizeFn fake_quantize_streaming[float_type_count][2];
  FakeQuantizeVecFn fake_quantize_vec[float_type_count][2];
  PackFn pack4;
  PackFn pack2;
  UnpackFn unpack4_signed;
  UnpackFn unpack4_unsigned;
  UnpackFn unpack2_signed;
  UnpackFn unpack2_unsigned;
  MinMaxFn minmax[float_type_count];
  MinMaxVecFn minmax_vec[float_type_count];
  AbsMaxFn abs_max[float_type_count];
  AbsMaxVecFn abs_max_vec[float_type_count];
  MinMaxGroupsFn minmax_groups[float_type_count];      // fused per-group quantize: ranges
  AbsMaxGroupsFn abs_max_groups[float_type_count];     // (symmetric schemes: abs-maxes)
  GroupQParamsFn group_qparams;                        // their parameters
  QuantizeGroupsFn quantize_groups[float_type_count];  // and codes, many groups per call
  QuantizeGroupsPackedFn quantize_groups_int4[float_type_count];  // or 4-bit codes, packed
  RequantizeFn requantize;
  RequantizeFn requantize_streaming;  // the same bits, stored as quantize_streaming
  RequantizeVecFn requantize_vec;
  // The table's variant (its tier is `isa`) and its name (to_string(variant)).
  KernelVariant variant;
  const char* name;
  // The kernel families beyond the elementwise ones; each contract is in the header named.
  igemm::TiledGemmKernel gemm;                       // gemm_int8.hpp: int32 accumulators
  igemm::RequantizeRowFn gemm_requantize_row;        // gemm_int8.hpp: the requantized output stage
  igemm::DepthwiseRowFn conv_depthwise;              // conv_depthwise.hpp: one output row
  weight_only::PanelsKernel weight_only_f32;         // weight_only.hpp: float activations
  weight_only::Int8Kernel weight_only_u8_few_rows;   // int8 activations: int4 codes, int8 few rows
  weight_only::Int8Kernel weight_only_u8_many_rows;  // int8 activations: int8 codes, many rows
  AccumulateErrorsFn accumulate_errors;              // error_sums.hpp
  HistcIndicesFn histc_indices;                      // histogram.hpp
  GridIndicesFn grid_indices;
  L2NormsFn l2_norms;
  GgmlQuantizeRowFn ggml_quantize[ggml_kernel_count];  // ggml_blocks.hpp, indexed by GgmlKernel
  GgmlDequantizeFn ggml_dequantize[ggml_kernel_count];
};

/// QuantizeGroupsPackedFn from a QuantizeFn at width b8 and a 4-bit PackFn, through an L1
/// scratch: the reference tier's entry, and the other tiers' path for the group sizes their fused
/// loop does not take. `element_bytes`: the size of one input element.
void quantize_groups_through_scratch(QuantizeFn quantize, PackFn pack4, std::int64_t element_bytes,
                                     const void* x, std::int64_t groups, std::int64_t group_size,
                                     const float* inv_scale, const float* scale,
                                     const std::int32_t* zero_point, Grid grid,
                                     std::uint8_t* packed);

/// The tables each variant defines (src/kernels/<tier>/table.cpp): reference, avx2_base,
/// avx_vnni, avx512_bw, avx512_vnni. The x86 ones may only be used when the CPU supports them.
const KernelTable& reference_table();
const KernelTable& avx2_table();
const KernelTable& avx_vnni_table();
const KernelTable& avx512_table();
const KernelTable& avx512_vnni_table();

}  // namespace lucid::quantization::kernels
