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
    avx512::fill_ggml_kernels(t);
    return t;
  }();
  return table;
}

}  // namespace lucid::quantization::kernels
