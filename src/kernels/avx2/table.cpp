// The AVX2 tier's KernelTables: reference entries replaced by AVX2 kernels; the avx_vnni variant
// adds the AVX-VNNI int8 GEMM.
#include "kernels/avx2/kernels.hpp"
#include "kernels/error_sums.hpp"
#include "kernels/gemm_int8.hpp"
#include "kernels/histogram.hpp"
#include "kernels/weight_only.hpp"

namespace lucid::quantization::kernels {

const KernelTable& avx2_table() {
  static const KernelTable table = [] {
    KernelTable t = reference_table();
    t.isa = Isa::avx2;
    t.variant = KernelVariant::avx2_base;
    t.name = "avx2_base";
    avx2::fill_quantize_kernels(t);
    avx2::fill_pack_kernels(t);
    avx2::fill_range_kernels(t);
    avx2::fill_group_kernels(t);
    avx2::fill_requantize_kernels(t);
    avx2::fill_ggml_kernels(t);
    t.gemm = {gemm_u8s8_i32_16c4__avx2, 9};  // 3 slices of 3 panels (docs/performance.md)
    t.gemm_requantize_row = requantize_row_i32_u8__avx2;
    t.conv_depthwise = conv_depthwise_u8s16_i32__avx2;
    t.weight_only_f32 = weight_only::weight_only_f32_16c__avx2;
    t.weight_only_u8_few_rows = {weight_only::weight_only_u8_16c__avx2, 1};
    t.weight_only_u8_many_rows = {weight_only::weight_only_u8_16c__avx2, 1};
    t.accumulate_errors = accumulate_errors__avx2;
    t.histc_indices = histc_indices__avx2;
    t.grid_indices = grid_indices__avx2;
    t.l2_norms = l2_norms__avx2;
    return t;
  }();
  return table;
}

const KernelTable& avx_vnni_table() {
  static const KernelTable table = [] {
    KernelTable t = avx2_table();
    t.variant = KernelVariant::avx_vnni;
    t.name = "avx_vnni";
    t.gemm = {gemm_u8s8_i32_16c4__avx_vnni, 9};
    return t;
  }();
  return table;
}

}  // namespace lucid::quantization::kernels
