// The reference tier's ggml block kernels in its KernelTable.
#include "kernels/reference/ggml_kernels.hpp"
#include "kernels/reference/kernels.hpp"

namespace lucid::quantization::kernels::reference {

void fill_ggml_kernels(KernelTable& table) {
  const auto set = [&](GgmlKernel kernel, GgmlQuantizeRowFn quantize, GgmlDequantizeFn decode) {
    table.ggml_quantize[static_cast<int>(kernel)] = quantize;
    table.ggml_dequantize[static_cast<int>(kernel)] = decode;
  };
  set(GgmlKernel::q8_0, quantize_row_q8_0, dequantize_q8_0);
  set(GgmlKernel::q4_0, quantize_row_q4_0, dequantize_q4_0);
  set(GgmlKernel::q4_1, quantize_row_q4_1, dequantize_q4_1);
  set(GgmlKernel::q5_0, quantize_row_q5_0, dequantize_q5_0);
  set(GgmlKernel::q5_1, quantize_row_q5_1, dequantize_q5_1);
  set(GgmlKernel::q2_k, quantize_row_q2_k, dequantize_q2_k);
  set(GgmlKernel::q3_k, quantize_row_q3_k, dequantize_q3_k);
  set(GgmlKernel::q4_k, quantize_row_q4_k, dequantize_q4_k);
  set(GgmlKernel::q5_k, quantize_row_q5_k, dequantize_q5_k);
  set(GgmlKernel::q6_k, quantize_row_q6_k, dequantize_q6_k);
  set(GgmlKernel::iq4_nl, quantize_row_iq4_nl, dequantize_iq4_nl);
  set(GgmlKernel::f16, quantize_row_f16, dequantize_f16);
  set(GgmlKernel::bf16, quantize_row_bf16, dequantize_bf16);
}

}  // namespace lucid::quantization::kernels::reference
