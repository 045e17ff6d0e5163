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
inline constexpr std::int64_t panel_width = 16;
inline constexpr std::int64_t group_depth = 4;

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

/// One implementation of the kernel and whether this CPU can run it.
struct GemmKernel {
  const char* name;
  GemmKernelFn run;
  bool supported;
};

/// The variant for the active tier (active_isa(), so set_isa() and LUCIDQ_ISA
/// pin it) and the CPU's features: reference; avx2 (or avx_vnni when the CPU
/// has AVX-VNNI); avx512 (avx512_vnni when the CPU has AVX512-VNNI, else avx512_bw).
const GemmKernel& gemm_kernel();

/// Every variant compiled in, supported or not, reference first (for tests).
std::vector<GemmKernel> gemm_kernel_variants();

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

}  // namespace lucid::quantization::kernels
