// ggml's block quantizers and decoders (Q8_0 ... Q6_K, IQ4_NL, F16, BF16), byte-identical to ggml.
#pragma once

#include <cstdint>
#include <vector>

#include "lucid/quantization/ggml_type.hpp"

namespace lucid::quantization {

/// True for the types ggml_quantize_rows writes and ggml_dequantize_rows reads: F32 (a copy),
/// F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_NL.
bool ggml_can_quantize(GgmlType type);

/// ggml's ggml_quantize_requires_imatrix: true for IQ2_XXS, IQ2_XS and IQ1_S (none of which
/// lucidq can write). llama-quantize additionally insists on one for a few more; see
/// docs/formats.md.
bool ggml_requires_imatrix(GgmlType type);

/// Quantizes `rows` rows of `n_per_row` floats (row-major, the row innermost) into ggml blocks:
/// dst receives rows * ggml_row_size(type, n_per_row) bytes, exactly the bytes
/// ggml_quantize_chunk(type, src, dst, 0, rows, n_per_row, imatrix) writes.
///
/// `imatrix` (nullable) holds n_per_row importance weights, one per column, shared by every row;
/// given, the types that have one run ggml's imatrix algorithm (Q8_0, F16, BF16, F32 ignore it).
/// Rows are split over num_threads() threads; the bytes never depend on the thread count.
///
/// Throws Error (naming the type and the value) when the type cannot be written, n_per_row is
/// not a multiple of its block size, rows or n_per_row is negative, a pointer is null, an input
/// or imatrix value is NaN or infinite (ggml's quantizers are undefined there), or a stored
/// fp16 scale or value overflows to infinity (the rows ggml_validate_row_data rejects, e.g.
/// |x| > 65504 in F16). After an error dst's contents are unspecified.
///
///   std::vector<std::uint8_t> q(ggml_row_size(GgmlType::Q4_K, 4096) * rows);
///   ggml_quantize_rows(GgmlType::Q4_K, weights, q.data(), rows, 4096, nullptr);
void ggml_quantize_rows(GgmlType type, const float* src, void* dst, std::int64_t rows,
                        std::int64_t n_per_row, const float* imatrix);

/// Decodes rows * n_per_row values from ggml blocks, exactly as ggml's to_float does.
/// Throws Error for a type that cannot be read, a bad row length or a null pointer.
void ggml_dequantize_rows(GgmlType type, const void* src, float* dst, std::int64_t rows,
                          std::int64_t n_per_row);

/// The floats a ggml type stores for `src` (rows x n_per_row, row-major): ggml_quantize_rows
/// followed by ggml_dequantize_rows, for measuring a format's error. Throws as they do.
std::vector<float> ggml_round_trip_rows(GgmlType type, const float* src, std::int64_t rows,
                                        std::int64_t n_per_row, const float* imatrix = nullptr);

}  // namespace lucid::quantization
