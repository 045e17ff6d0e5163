// Internal: the reference tier's ggml block kernels (the specification of every ggml type),
// one quantize-row and one decode function per type (signatures in kernels/ggml_blocks.hpp).
#pragma once

#include <cstdint>

#include "kernels/ggml_blocks.hpp"

namespace lucid::quantization::kernels::reference {

// Legacy 32-blocks, F16 and BF16 (ggml_legacy.cpp).
void quantize_row_q8_0(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_q4_0(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_q4_1(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_q5_0(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_q5_1(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_f16(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_bf16(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void dequantize_q8_0(const void* blocks, float* y, std::int64_t n);
void dequantize_q4_0(const void* blocks, float* y, std::int64_t n);
void dequantize_q4_1(const void* blocks, float* y, std::int64_t n);
void dequantize_q5_0(const void* blocks, float* y, std::int64_t n);
void dequantize_q5_1(const void* blocks, float* y, std::int64_t n);
void dequantize_f16(const void* blocks, float* y, std::int64_t n);
void dequantize_bf16(const void* blocks, float* y, std::int64_t n);

// K-quants (ggml_kquants.cpp).
void quantize_row_q2_k(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_q3_k(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_q4_k(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_q5_k(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void quantize_row_q6_k(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void dequantize_q2_k(const void* blocks, float* y, std::int64_t n);
void dequantize_q3_k(const void* blocks, float* y, std::int64_t n);
void dequantize_q4_k(const void* blocks, float* y, std::int64_t n);
void dequantize_q5_k(const void* blocks, float* y, std::int64_t n);
void dequantize_q6_k(const void* blocks, float* y, std::int64_t n);

// IQ4_NL (ggml_iq4_nl.cpp).
void quantize_row_iq4_nl(const float* x, void* blocks, std::int64_t n, const float* imatrix);
void dequantize_iq4_nl(const void* blocks, float* y, std::int64_t n);

}  // namespace lucid::quantization::kernels::reference
