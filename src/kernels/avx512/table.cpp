// The AVX-512 tier's KernelTable: reference entries replaced by AVX-512 kernels.
#include "kernels/avx512/kernels.hpp"

namespace lucid::quantization::kernels {

const KernelTable& avx512_table() {
  static const KernelTable table = [] {
    KernelTable t = reference_table();
    t.isa = Isa::avx512;
    avx512::fill_quantize_kernels(t);
    avx512::fill_pack_kernels(t);
    avx512::fill_range_kernels(t);
    avx512::fill_requantize_kernels(t);
    // The fused per-group kernels of the AVX2 tier (every AVX-512 CPU runs them): one call per
    // run of groups beats the per-group calls of the AVX-512 range and quantize kernels.
    for (int f = 0; f < float_type_count; ++f) {
      t.minmax_groups[f] = avx2_table().minmax_groups[f];
      t.quantize_groups[f] = avx2_table().quantize_groups[f];
    }
    return t;
  }();
  return table;
}

}  // namespace lucid::quantization::kernels
