// The reference tier's KernelTable: the scalar specification every other tier is tested against.
#include "kernels/reference/kernels.hpp"

namespace lucid::quantization::kernels {

const KernelTable& reference_table() {
  static const KernelTable table = [] {
    KernelTable t{};
    t.isa = Isa::reference;
    reference::fill_quantize_kernels(t);
    reference::fill_pack_kernels(t);
    reference::fill_range_kernels(t);
    reference::fill_requantize_kernels(t);
    reference::fill_ggml_kernels(t);
    t.variant = KernelVariant::reference;
    t.name = "reference";
    t.gemm = {gemm_u8s8_i32_16c4__reference, 8};
    t.gemm_requantize_row = requantize_row_i32_u8__reference;
    t.conv_depthwise = conv_depthwise_u8s16_i32__reference;
    t.weight_only_f32 = weight_only::weight_only_f32_16c__reference;
    t.weight_only_u8_few_rows = {weight_only::weight_only_u8_16c__reference, 1};
    t.weight_only_u8_many_rows = {weight_only::weight_only_u8_16c__reference, 1};
    t.accumulate_errors = accumulate_errors__reference;
    t.histc_indices = histc_indices__reference;
    t.grid_indices = grid_indices__reference;
    t.l2_norms = l2_norms__reference;
    return t;
  }();
  return table;
}

}  // namespace lucid::quantization::kernels
