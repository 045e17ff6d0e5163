// Internal: the AVX2 tier's kernel groups, each filling its entries of a KernelTable.
#pragma once

#include "kernels/kernel_table.hpp"

namespace lucid::quantization::kernels::avx2 {

void fill_quantize_kernels(KernelTable& table);    // quantize, dequantize, fake_quantize
void fill_pack_kernels(KernelTable& table);        // pack4/2, unpack4/2
void fill_range_kernels(KernelTable& table);       // minmax, abs_max
void fill_group_kernels(KernelTable& table);       // fused per-group quantize: codes, qparams
void fill_requantize_kernels(KernelTable& table);  // requantize
void fill_ggml_kernels(KernelTable& table);        // ggml_quantize, ggml_dequantize

}  // namespace lucid::quantization::kernels::avx2
