// The AVX-512 tier's KernelTables: reference entries replaced by AVX-512 kernels (avx512_bw);
// the avx512_vnni variant adds the VNNI int8 GEMM and int8-activation weight-only kernels.
#include "kernels/avx512/kernels.hpp"
#include "kernels/error_sums.hpp"
#include "kernels/gemm_int8.hpp"
#include "kernels/histogram.hpp"
#include "kernels/weight_only.hpp"

namespace lucid::quantization::kernels {

const KernelTable& avx512_table() {
  static const KernelTable table = [] {
    KernelTable t = reference_table();
    t.isa = Isa::avx512;
    t.variant = KernelVariant::avx512_bw;
    t.name = "avx512_bw";
    avx512::fill_quantize_kernels(t);
    avx512::fill_pack_kernels(t);
    avx512::fill_range_kernels(t);
    avx512::fill_requantize_kernels(t);
    avx512::fill_ggml_kernels(t);
    // The fused per-group kernels of the AVX2 tier (every AVX-512 CPU runs them): one call per
    // run of groups beats the per-group calls of the AVX-512 range and quantize kernels.
    for (int f = 0; f < float_type_count; ++f) {
      t.minmax_groups[f] = avx2_table().minmax_groups[f];
      t.abs_max_groups[f] = avx2_table().abs_max_groups[f];
      t.quantize_groups[f] = avx2_table().quantize_groups[f];
      t.quantize_groups_int4[f] = avx2_table().quantize_groups_int4[f];
    }
    t.group_qparams = avx2_table().group_qparams;
    // The AVX2 requantize (int16 saturation instead of a double clamp) runs 2.3x the AVX-512
    // kernel's rate in L1 on Zen 4 (docs/performance.md, "Elementwise"); per-element multipliers
    // keep it.
    t.requantize = avx2_table().requantize;
    t.requantize_streaming = avx2_table().requantize_streaming;
    t.gemm = {gemm_u8s8_i32_16c4__avx512_bw, 8};
    t.gemm_requantize_row = requantize_row_i32_u8__avx512;
    t.conv_depthwise = conv_depthwise_u8s16_i32__avx512;
    t.weight_only_f32 = weight_only::weight_only_f32_16c__avx512;
    // No VNNI: the AVX2 int8-activation kernel (int4 and int8 codes).
    t.weight_only_u8_few_rows = {weight_only::weight_only_u8_16c__avx2, 1};
    t.weight_only_u8_many_rows = {weight_only::weight_only_u8_16c__avx2, 1};
    t.accumulate_errors = accumulate_errors__avx512;
    // The histogram loops have an AVX2 build only.
    t.histc_indices = histc_indices__avx2;
    t.grid_indices = grid_indices__avx2;
    t.l2_norms = l2_norms__avx2;
    return t;
  }();
  return table;
}

const KernelTable& avx512_vnni_table() {
  static const KernelTable table = [] {
    KernelTable t = avx512_table();
    t.variant = KernelVariant::avx512_vnni;
    t.name = "avx512_vnni";
    t.gemm = {gemm_u8s8_i32_16c4__avx512_vnni, 8};
    t.weight_only_u8_few_rows = {weight_only::weight_only_u8_regs_64c__avx512_vnni,
                                 weight_only::u8_regs_block_panels};
    t.weight_only_u8_many_rows = {weight_only::weight_only_u8_tiles_48c__avx512_vnni,
                                  weight_only::u8_tiles_block_panels,
                                  weight_only::u8_tiles_block_panels};
    return t;
  }();
  return table;
}

}  // namespace lucid::quantization::kernels
