// The GEMM kernel variants and the choice among them from the active tier and the CPU's features.
#include "kernels/gemm_int8.hpp"

#include <array>

#include "lucid/quantization/runtime.hpp"

namespace lucid::quantization::igemm {
namespace {

enum Variant { reference, avx2, avx_vnni, avx512_bw, avx512_vnni, variant_count };

const GemmKernel* variant_table() {
  static const std::array<GemmKernel, variant_count> table = [] {
    const CpuFeatures f = cpu_features();
    const bool has_avx2 = f.avx2 && f.fma && f.f16c;
    const bool has_avx512 = has_avx2 && f.avx512f && f.avx512bw && f.avx512vl;
#if defined(LUCIDQ_X86_KERNELS)
    return std::to_array<GemmKernel>({
        {"reference", kernels::gemm_u8s8_i32_16c4__reference, true},
        {"avx2", kernels::gemm_u8s8_i32_16c4__avx2, has_avx2},
        {"avx_vnni", kernels::gemm_u8s8_i32_16c4__avx_vnni, has_avx2 && f.avx_vnni},
        {"avx512_bw", kernels::gemm_u8s8_i32_16c4__avx512_bw, has_avx512},
        {"avx512_vnni", kernels::gemm_u8s8_i32_16c4__avx512_vnni, has_avx512 && f.avx512vnni},
    });
#else
    return std::to_array<GemmKernel>({
        {"reference", kernels::gemm_u8s8_i32_16c4__reference, true},
        {"avx2", kernels::gemm_u8s8_i32_16c4__reference, false},
        {"avx_vnni", kernels::gemm_u8s8_i32_16c4__reference, false},
        {"avx512_bw", kernels::gemm_u8s8_i32_16c4__reference, false},
        {"avx512_vnni", kernels::gemm_u8s8_i32_16c4__reference, false},
    });
#endif
  }();
  return table.data();
}

}  // namespace

const GemmKernel& gemm_kernel() {
  const GemmKernel* table = variant_table();
  switch (active_isa()) {
    case Isa::reference:
      return table[reference];
    case Isa::avx2:
      return table[avx_vnni].supported ? table[avx_vnni] : table[avx2];
    case Isa::avx512:
      return table[avx512_vnni].supported ? table[avx512_vnni] : table[avx512_bw];
  }
  return table[reference];
}

std::vector<GemmKernel> gemm_kernel_variants() {
  const GemmKernel* table = variant_table();
  return {table, table + variant_count};
}

}  // namespace lucid::quantization::igemm
