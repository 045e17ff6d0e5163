// Internal: the int8 GEMM kernel contract: the packed panel layout, the block a kernel computes,
// and every variant's kernel.
//
// A kernel computes int32 accumulators for a block of A rows against a run of
// 16-channel weight panels (each 64-byte group holds W[16p + c][4g + j] at byte 4c + j):
//   acc[r][c] = Σ_k (a[r][k] − z[r]) · W[c][k]     for c over panel_count · 16 channels
// with no allocation, threading or validation. Every variant must equal the
// reference kernel bit for bit (the true sum fits int32 because k ≤ max_gemm_depth).
#pragma once

#include <cstdint>
#include <vector>

namespace lucid::quantization::igemm {

/// Output channels per weight panel, and k values per packed group.
constexpr std::int64_t panel_width = 16;
constexpr std::int64_t group_depth = 4;

/// One kernel call: rows × (panel_count · 16) accumulators.
struct GemmBlock {
  const std::uint8_t* a = nullptr;  // row 0 of the block (uint8 or int8 codes)
  std::int64_t a_stride = 0;        // bytes between rows
  std::int64_t rows = 0;
  std::int64_t k = 0;                         // codes per row (not padded)
  bool flip = false;                          // codes are int8: the kernel uses a ^ 0x80 = a + 128
  const std::int32_t* zero_points = nullptr;  // per row, already + 128 when flip
  const std::int8_t* panels = nullptr;        // first panel; panels are panel_bytes(k) apart
  std::int64_t panel_count = 0;
  const std::int32_t* column_sums = nullptr;  // panel_count · 16 sums of the panels' channels
  std::int32_t* acc = nullptr;                // rows × acc_stride int32
  std::int64_t acc_stride = 0;
};

/// Bytes of one packed panel of depth k: ceil(k / 4) groups of 64 bytes.
inline std::int64_t panel_bytes(std::int64_t k) {
  return (k + group_depth - 1) / group_depth * group_depth * panel_width;
}

using GemmKernelFn = void (*)(const GemmBlock& block);

/// A variant's kernel as the driver runs it: the function and the panels per tile it wants when
/// M <= 16 (all rows in one tile, the panels streamed once): a multiple of the panels its
/// register tiles walk together (3 for the AVX2 kernels, whose slices are 3 panels).
struct TiledGemmKernel {
  GemmKernelFn run = nullptr;
  std::int64_t small_m_panels = 8;
};

/// One implementation of the kernel and whether this CPU can run it.
struct GemmKernel {
  const char* name;
  GemmKernelFn run;
  bool supported;
};

/// The active variant's kernel (active_variant(): set_isa() and LUCIDQ_ISA pin it; by
/// default the best the CPU has). Defined with the dispatch (kernels/dispatch.cpp).
GemmKernel gemm_kernel();

/// Every variant's kernel in KernelVariant order (reference first); an unsupported variant has
/// its name, run = nullptr and supported = false (its table is never built: table_for).
std::vector<GemmKernel> gemm_kernel_variants();

/// The requantized output stage's constants for a run of columns (gemm.hpp, output (c)).
struct RequantizeRowArgs {
  const double* bias = nullptr;        // bias_int32[n] as double (0 without one)
  const double* multiplier = nullptr;  // m[n] = s_A · s_W[n] / s_out
  const double* offset = nullptr;      // o[n] = bias[n] / s_out (0 without one)
  double below = 0, above = 0;         // the grid minus z_out, widened by one on each side
  double low = 0, high = 0;            // the grid minus z_out
  double zero_point = 0;               // z_out
};

/// out[j] = low byte of clamp(round_half_even(clamp((acc[j] + bias[j]) · m[j] + o[j], below,
/// above)), low, high) + z_out, in double, one operation at a time, for j < cols.
using RequantizeRowFn = void (*)(const std::int32_t* acc, std::int64_t cols,
                                 const RequantizeRowArgs& args, std::uint8_t* out);

}  // namespace lucid::quantization::igemm

namespace lucid::quantization::kernels {

// Names: gemm_<A codes><W codes>_<accumulators>_<panel: 16 channels × 4 k>__<variant>.
void gemm_u8s8_i32_16c4__reference(const igemm::GemmBlock& block);
#if defined(LUCIDQ_X86_KERNELS)
void gemm_u8s8_i32_16c4__avx2(const igemm::GemmBlock& block);
void gemm_u8s8_i32_16c4__avx_vnni(const igemm::GemmBlock& block);
void gemm_u8s8_i32_16c4__avx512_bw(const igemm::GemmBlock& block);
void gemm_u8s8_i32_16c4__avx512_vnni(const igemm::GemmBlock& block);
#endif

void requantize_row_i32_u8__reference(const std::int32_t* acc, std::int64_t cols,
                                      const igemm::RequantizeRowArgs& args, std::uint8_t* out);
#if defined(LUCIDQ_X86_KERNELS)
void requantize_row_i32_u8__avx2(const std::int32_t* acc, std::int64_t cols,
                                 const igemm::RequantizeRowArgs& args, std::uint8_t* out);
void requantize_row_i32_u8__avx512(const std::int32_t* acc, std::int64_t cols,
                                   const igemm::RequantizeRowArgs& args, std::uint8_t* out);
#endif

}  // namespace lucid::quantization::kernels
