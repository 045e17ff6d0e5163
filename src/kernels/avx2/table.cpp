// The AVX2 tier's KernelTable: reference entries replaced by AVX2 kernels.
#include "kernels/avx2/kernels.hpp"

namespace lucid::quantization::kernels {

const KernelTable& avx2_table() {
  static const KernelTable table = [] {
    KernelTable t = reference_table();
    t.isa = Isa::avx2;
    avx2::fill_quantize_kernels(t);
    avx2::fill_pack_kernels(t);
    avx2::fill_range_kernels(t);
    avx2::fill_requantize_kernels(t);
    avx2::fill_ggml_kernels(t);
    return t;
  }();
  return table;
}

}  // namespace lucid::quantization::kernels
