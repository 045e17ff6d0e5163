// Internal: the reference tier's kernel groups, each filling its entries of a KernelTable.
#pragma once

#include "kernels/kernel_table.hpp"

namespace lucid::quantization::kernels::reference {

void fill_quantize_kernels(KernelTable& table);    // quantize, dequantize, fake_quantize
void fill_pack_kernels(KernelTable& table);        // pack4/2, unpack4/2
void fill_range_kernels(KernelTable& table);       // minmax, abs_max
void fill_requantize_kernels(KernelTable& table);  // requantize
void fill_ggml_kernels(KernelTable& table);        // ggml_quantize, ggml_dequantize

}  // namespace lucid::quantization::kernels::reference
