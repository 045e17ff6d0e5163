// The packed int8 GEMM: int8 weights packed once, C = (A - z_A) · Wᵀ with fused output stages.
//
// Equations (docs/numerics.md, "Integer GEMM"), for A[M, K] (uint8 or int8
// codes, one scale s_A and zero point z_A, or one pair per row in the dynamic
// path) and symmetric int8 weights W[N, K] (zero point 0, scale s_W[n] per
// output channel or one per tensor):
//
//   acc[m, n] = Σ_k (A[m, k] − z_A) · W[n, k]                      exact int32
//   (a) int32:        C = acc
//   (b) float32:      C = float(acc) · (s_A · s_W[n]) + bias[n]    (each op rounded to float32)
//   (c) requantized:  C = clamp(nearbyint(double(acc + bias_int32[n]) · m[n] + o[n]) + z_out)
//                     m[n] = double(s_A) · double(s_W[n]) / double(s_out),
//                     o[n] = double(bias[n]) / double(s_out)       (float bias; 0 otherwise)
//                     ties to even, saturating to the output grid (or the ReLU clamp)
//
// acc is exact because K ≤ max_gemm_depth keeps |acc| < 2^31 for every input.
// Outputs (a) and (c) are bit-identical across kernel tiers and thread counts;
// (b) is too, as every tier performs the same float32 operations in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/scalar_type.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// The largest K the int8 GEMM accepts: 255 · 128 · K < 2^31, so no int32
/// accumulator can overflow for any codes and zero points.
inline constexpr std::int64_t max_gemm_depth = 65793;

/// Symmetric int8 weights W[N, K] in the layout the GEMM kernels read,
/// packed once and reused for every product. Carries the per-output-channel
/// scales and the column sums Σ_k W[n, k] that fold the activation zero point
/// out of the inner loop. The layout is described in docs/formats.md ("Packed
/// int8 GEMM weights"); treat it as opaque. Immutable once built, so one
/// object may serve many threads at once. Copies share the packed bytes.
class PackedWeightsInt8 {
 public:
  PackedWeightsInt8() = default;

  /// Packs W: row n (output channel n) holds K int8 codes at w + n · row_stride.
  /// `scales` holds 1 (per-tensor) or N (per-output-channel) finite scales > 0.
  /// Codes may use the full range [-128, 127]. Throws Error when n or k < 1,
  /// k > max_gemm_depth, row_stride < k, w is null, or a scale is bad (the
  /// message names the index and value).
  static PackedWeightsInt8 pack(const std::int8_t* w, std::int64_t n, std::int64_t k,
                                std::int64_t row_stride, std::span<const float> scales);

  /// Packs a quantized weight of shape [N, K] with qint8 codes (any 8-bit
  /// signed range) and per-tensor or per-channel (ch_axis 0) parameters whose
  /// zero points are all 0. Throws Error naming what does not fit.
  static PackedWeightsInt8 from_quantized(const QuantizedTensor& weight);

  /// Quantizes a float32 weight [N, K] (row n at w + n · row_stride) to
  /// symmetric qint8 — one scale per output channel when `per_channel`, else
  /// one for the tensor — with calculate_qparams on the exact min / max and
  /// `qdtype` (qint8 or a narrower signed 8-bit grid such as qint8.narrow_range()),
  /// then packs it. Throws Error for a non-finite weight (naming row and column).
  static PackedWeightsInt8 quantize(const float* w, std::int64_t n, std::int64_t k,
                                    std::int64_t row_stride, bool per_channel = true,
                                    QDtype qdtype = qint8);

  std::int64_t rows() const;     ///< N, output channels
  std::int64_t columns() const;  ///< K, the reduction depth
  bool per_channel() const;
  /// N scales (a per-tensor scale repeated N times).
  std::span<const float> scales() const;
  /// Σ_k W[n, k] for each of the N output channels.
  std::span<const std::int32_t> column_sums() const;
  /// Bytes of packed codes (excluding scales and sums).
  std::size_t packed_bytes() const;
  /// The codes back as row-major W[N, K] (for tests and round trips).
  std::vector<std::int8_t> unpack() const;
  /// The weight as a QuantizedTensor [N, K] (per-channel axis 0 or per-tensor) on the grid the
  /// codes were made on: qint8 for pack(), the given qdtype for quantize() / from_quantized()
  /// (e.g. qint8[-127,127]).
  QuantizedTensor to_quantized() const;

  /// Internal: the packed representation the kernels read.
  struct Layout;
  const Layout& layout() const;

 private:
  std::shared_ptr<const Layout> layout_;
};

/// Quantized activations A[M, K]: row m holds K codes at data + m · row_stride
/// (in elements). `type` is ScalarType::uint8 or ScalarType::int8; any zero
/// point inside that type's range. `scale` is used by the float and
/// requantized output stages only.
struct ActivationMatrix {
  const void* data = nullptr;
  ScalarType type = ScalarType::uint8;
  std::int64_t rows = 0;
  std::int64_t row_stride = 0;
  float scale = 1.0f;
  std::int32_t zero_point = 0;
};

/// Output stage (a): int32 accumulators. Row m at data + m · row_stride.
struct Int32Output {
  std::int32_t* data = nullptr;
  std::int64_t row_stride = 0;
};

/// Output stage (b): float32 = s_A · s_W[n] · acc + bias[n] (bias may be null: N floats).
struct FloatOutput {
  float* data = nullptr;
  std::int64_t row_stride = 0;
  const float* bias = nullptr;
};

/// Output stage (c): requantized 8-bit codes (int8 storage for signed grids,
/// uint8 for unsigned) with output scale and zero point. At most one of `bias`
/// (N floats, in output units) and `bias_int32` (N int32 values in
/// accumulator units s_A · s_W[n], as ONNX QLinearMatMul / PyTorch use) may be
/// set. `relu` raises the lower clamp to the zero point; `qdtype` may be a
/// custom range to clamp further.
struct RequantizedOutput {
  void* data = nullptr;
  std::int64_t row_stride = 0;
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  QDtype qdtype = quint8;
  const float* bias = nullptr;
  const std::int32_t* bias_int32 = nullptr;
  bool relu = false;
};

/// C[M, N] = (A − z_A) · Wᵀ through the given output stage (equations at the
/// top of this file). A's K is w.columns(); C has w.rows() columns. Uses the
/// active kernel tier and num_threads() threads for large products; results
/// never depend on either. M = 0 (an empty batch) is valid and writes
/// nothing. Throws Error (and writes nothing) for negative M, null pointers
/// (allowed when M = 0), a type other than uint8/int8, row strides smaller than the row,
/// zero points outside the type, scales not finite and > 0, both biases set,
/// or an output qdtype that is not 8-bit. Safe to call from several threads
/// at once with distinct outputs.
void gemm(const ActivationMatrix& a, const PackedWeightsInt8& w, const Int32Output& c);
void gemm(const ActivationMatrix& a, const PackedWeightsInt8& w, const FloatOutput& c);
void gemm(const ActivationMatrix& a, const PackedWeightsInt8& w, const RequantizedOutput& c);

/// How the dynamic path quantizes float activations on the fly.
struct DynamicQuantization {
  /// One (scale, zero point) per row (per token) when true, else one for the whole A.
  bool per_row = true;
  /// quint8 (affine, any zero point) or qint8; calculate_qparams over the
  /// row's (or tensor's) min / max, widened to include 0, per_tensor_affine.
  QDtype qdtype = quint8;
};

/// Dynamic quantization, as torch.ops.quantized.linear_dynamic: A (float32,
/// row m at a + m · a_row_stride, K = w.columns()) is quantized with
/// calculate_qparams per row or per tensor, multiplied by W in int8, and C =
/// float(acc) · (s_A[m] · s_W[n]) + bias[n] (bias may be null). Non-finite
/// activations are an Error naming the row and column. Same threading and
/// tier guarantees as gemm().
void gemm_dynamic(const float* a, std::int64_t m, std::int64_t a_row_stride,
                  const PackedWeightsInt8& w, const float* bias, float* c,
                  std::int64_t c_row_stride, const DynamicQuantization& options = {});

/// Tensor-level convenience: x is float32 [..., K]; returns float32 [..., N].
/// `bias`, when given, is float32 [N].
Tensor linear_dynamic(const TensorView& x, const PackedWeightsInt8& w,
                      const TensorView* bias = nullptr, const DynamicQuantization& options = {});

}  // namespace lucid::quantization
