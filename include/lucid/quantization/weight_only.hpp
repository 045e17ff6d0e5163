// Weight-only low-bit GEMM: float activations times group-wise int4 / int8 weights decoded
// in-kernel.
//
// Equations (docs/numerics.md, "Weight-only GEMM"), for x[M, K] (float32 or
// bfloat16) and a weight W[N, K] quantized in groups of G consecutive
// elements along K (G = K for per-channel), group j of row n holding codes q,
// one scale s[n, j] > 0 and one integer zero point z[n, j]:
//
//   ŵ[n, k] = s[n, j(k)] · (q[n, k] − z[n, j(k)])            (z = 0 when symmetric)
//   y[m, n] = bias[n] + Σ_k x[m, k] · ŵ[n, k]
//
// The float ŵ is never formed: the kernels accumulate Σ_k x · q per group in
// float32 and apply the group's scale (and the zero point through Σ_k x) once
// per group. Results are float32 and agree with the exact value within the
// rounding bound of docs/numerics.md; they never depend on the thread count.
// Where a fast kernel exists (AVX512-VNNI or AVX2: every x86 tier) the default
// (automatic) instead quantizes x to int8 in blocks, one scale per weight group, and multiplies
// exactly in int32 (WeightOnlyActivations::int8_blocks; "Block-wise activation scales"; for
// per-channel weights per-row uint8, int8_dynamic), for any M; on those paths a row's result
// never depends on the other rows of the call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lucid/quantization/ggml_type.hpp"
#include "lucid/quantization/quantized_tensor.hpp"
#include "lucid/quantization/scalar_type.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// How the group scales are stored (the codes' arithmetic is float32 either way).
/// f32: 32 bits; bf16 / f16: 16 bits (bfloat16 keeps float32's range, float16 three more bits of
/// precision within ±65504).
/// super6: two levels, for int4 affine groups of 32 only (K a multiple of 256): per group a 6-bit
/// sub-scale sc and a 6-bit sub-minimum m, per super-block of 8 groups (256 weights) two float16
/// factors d and dmin: ŵ = fl(d · sc) · q − fl(dmin · m), q in 0..15 (a free minimum, not an
/// integer zero point; ggml Q4_K's information). 4.5 bits per weight (docs/formats.md).
enum class ScaleType : std::uint8_t { f32, bf16, f16, super6 };

/// "f32" / "bf16" / "f16" / "super6".
std::string to_string(ScaleType type);

/// How quantize() chooses each group's scale, zero point and codes (docs/formats.md,
/// "Weight-only group formats", "Grids").
/// - search: the error-minimizing grid over every level. Symmetric: the signed extreme on the
///   grid minimum (ggml's d = extreme / −8, so the scale may be negative), its neighbouring
///   divisors and their least-squares scales; affine: the min/max range shrunk at either end,
///   refitted by least squares. Of those candidates, the least Σ (w − ŵ)² with the stored
///   scale. The default: the lowest output error measured (docs/performance.md).
/// - min_max: the core's per-group min/max qparams (calculate_qparams, eps = default_eps; the
///   codes of quantize_per_group; symmetric s = max|w| / 7.5 leaves −8 almost unused).
enum class WeightOnlyGrid : std::uint8_t { search, min_max };

/// "search" / "min_max".
std::string to_string(WeightOnlyGrid grid);

/// A group-wise weight format.
/// - bits: 4 or 8.
/// - group_size: 32, 64, 128 or 256 elements along K, or 0 for per-channel
///   (one group spanning all of K). When K is not a multiple of group_size the
///   last group of every row is shorter (ragged), as QParams::per_group does.
/// - symmetric: codes on the signed grid (qint4 [-8, 7] / qint8 [-128, 127])
///   with zero point 0; otherwise affine on the unsigned grid (quint4 [0, 15]
///   / quint8 [0, 255]) with one zero point per group.
/// - scale_type: f32, bf16 or f16 (16-bit scales rounded *before* the codes
///   are chosen, so the codes fit the stored scale), or super6 (bits 4, group_size 32,
///   symmetric false only; its own search, docs/formats.md "Super-block format").
/// - grid: how the codes are chosen (WeightOnlyGrid).
/// Bits streamed per weight: bits + (32 for f32, 16 for bf16 / f16 scales, + 8 for an affine
/// zero point) / group_size, exactly (int4 g32 f16 symmetric: 4.5; g128 bf16: 4.125); super6:
/// 4 + 12 / 32 + 32 / 256 = 4.5.
struct WeightOnlyFormat {
  int bits = 4;
  std::int64_t group_size = 128;
  bool symmetric = true;
  ScaleType scale_type = ScaleType::f32;
  WeightOnlyGrid grid = WeightOnlyGrid::search;

  /// Throws Error naming the field, its value and the accepted values.
  void validate() const;
  /// "int4 g128 symmetric f32-scales" (", min-max grid" appended for that grid), for messages
  /// and reports.
  std::string describe() const;
  /// Bits each weight streams: bits + scale (and zero point) bits / group (per-channel: / K).
  double bits_per_weight(std::int64_t k) const;
  bool operator==(const WeightOnlyFormat&) const = default;
};

/// A weight W[N, K] in a WeightOnlyFormat, packed once into the layout the
/// kernels stream (docs/formats.md, "Weight-only group formats": panels of 16
/// output channels, each group's codes followed by its scales and zero
/// points). Treat the layout as opaque. Immutable once built: one object may
/// serve many threads at once; copies share the packed bytes.
class PackedWeightsLowBit {
 public:
  PackedWeightsLowBit() = default;

  /// Quantizes a float32 weight W[N, K] (row n at w + n · row_stride) on the
  /// format's grid (WeightOnlyGrid; 16-bit scales rounded before the codes are
  /// computed) and packs it. Throws Error when n or k < 1, row_stride < k, w is
  /// null, the format is invalid, a weight is not finite (naming row and
  /// column), or a group scale overflows its storage type; for super6 scales also when k is
  /// not a multiple of 256.
  static PackedWeightsLowBit quantize(const float* w, std::int64_t n, std::int64_t k,
                                      std::int64_t row_stride, const WeightOnlyFormat& format);

  /// Packs an existing quantized weight of shape [N, K]: qdtype qint4 / quint4
  /// / qint8 / quint8 (custom ranges inside them allowed), qparams per-group
  /// along axis 1 with group_size 32 / 64 / 128 / 256, or per-channel along
  /// axis 0. symmetric is true when every zero point is 0 on a signed grid.
  /// Scales are kept as float32; format().grid reports the default (search),
  /// the codes being given. Throws Error naming what does not fit.
  static PackedWeightsLowBit from_quantized(const QuantizedTensor& weight);

  /// Imports a ggml weight without loss: n rows of k values in GgmlType::Q4_K blocks
  /// (ggml_row_size(Q4_K, k) bytes per row, rows contiguous, as a GGUF tensor stores them) into
  /// the super6 format, whose decode() equals ggml's dequantization bit for bit. Throws Error
  /// for another type, n < 1, k not a positive multiple of 256, null data, or a block whose
  /// float16 d or dmin is not finite (naming row and block).
  static PackedWeightsLowBit from_ggml(GgmlType type, const void* data, std::int64_t n,
                                       std::int64_t k);

  /// The weight as a QuantizedTensor [N, K] (per_group along axis 1, or
  /// per_channel along axis 0 for group_size 0): codes and parameters exactly
  /// as packed (16-bit scales widened exactly to float32). A symmetric group
  /// with a negative scale s (WeightOnlyGrid::search) has no symmetric
  /// QParams form: it is written as scale −s, codes −q − 1 and zero point −1
  /// (the same ŵ), and the qscheme is then PER_CHANNEL_AFFINE; from_quantized
  /// maps it back (a signed full-range grid whose zero points are all 0 or −1
  /// packs as symmetric, a −1 group with the negated scale).
  /// Throws Error for super6 scales: a free minimum has no integer zero point (codes(),
  /// scales(), offsets() and decode() give the weight).
  QuantizedTensor to_quantized() const;

  std::int64_t rows() const;     ///< N, output channels
  std::int64_t columns() const;  ///< K, the reduction depth
  const WeightOnlyFormat& format() const;
  /// Groups per row: ceil(K / group_size), 1 for per-channel.
  std::int64_t groups_per_row() const;
  /// Bytes the kernels stream for one product: codes, scales, zero points and padding.
  std::size_t packed_bytes() const;
  /// The integer codes back, row-major [N, K], on the format's grid.
  std::vector<std::int32_t> codes() const;
  /// Scales row-major [N, groups_per_row()] (as float32; negative for a symmetric group whose
  /// signed extreme is positive, on WeightOnlyGrid::search).
  std::vector<float> scales() const;
  /// Zero points row-major [N, groups_per_row()] (all 0 when symmetric). Throws Error for super6
  /// scales (no integer zero point: see offsets()).
  std::vector<std::int32_t> zero_points() const;
  /// Offsets o row-major [N, groups_per_row()] with ŵ = s · q − o: fl(s · z) for integer zero
  /// points (0 when symmetric), fl(dmin · m) for super6 scales.
  std::vector<float> offsets() const;
  /// ŵ = s · (q − z) as float32 row-major [N, K] (super6: fl(s · q) − o), for tests; the kernels
  /// never form it.
  std::vector<float> decode() const;

  /// Internal: the packed representation the kernels read.
  struct Layout;
  const Layout& layout() const;

 private:
  std::shared_ptr<const Layout> layout_;
};

/// Which arithmetic weight_only_gemm uses for the activations
/// (docs/numerics.md, "Weight-only GEMM", "The int8-activation path").
/// - float32: x in float32 (bf16 widened exactly), float FMAs; the result
///   carries only the weight's quantization error.
/// - int8_dynamic: each row of x quantized dynamically to uint8 (per-row
///   affine, calculate_qparams on the row's min/max, as gemm_dynamic does),
///   the weight codes decoded to int8 and multiplied exactly in int32
///   (AVX-512 VNNI; AVX2 vpmaddubsw / vpmaddwd), group scales applied in float32. The result
///   also carries the activation-quantization error (≈ s_x² / 12 per element). The same bits on
///   every tier: tiers without a fast kernel for the codes run the reference one (slow). Throws
///   Error for non-finite x; needs every group ≤ 65536 long.
/// - int8_blocks: x quantized symmetrically to int8 in blocks, one per weight
///   group along K (s_x = max|x| / 127 over the block, as ggml's q8_0 for
///   groups of 32), each group's product Σ xq · (q − z) exact in int32, then
///   combined in float32 in group order (docs/numerics.md, "Block-wise
///   activation scales"). The same bits on every tier. At groups of 32 its
///   activation error is q8_0's, a third to a half of int8_dynamic's
///   (docs/performance.md). super6 weights combine P = Σ xq · q and Σ xq per group in two float
///   steps (docs/numerics.md). Throws Error for non-finite x; needs every group ≤ 65536 long.
/// - automatic: when the active tier has a fast int8 kernel (AVX-512 on a CPU
///   with AVX512-VNNI, AVX2; not the reference tier), every group is ≤ 65536
///   long and x is finite: int8_blocks for weights with several groups per row,
///   int8_dynamic for one group per row (per-channel: there the per-row affine
///   scale is the finer one); float32 otherwise. The choice does not depend on
///   M, and on the int8 paths each output row depends only on its own row of x (the same bits
///   alone or in a batch; the float32 path's rounding depends on M).
enum class WeightOnlyActivations : std::uint8_t { float32, int8_dynamic, automatic, int8_blocks };

/// "float32" / "int8_dynamic" / "automatic" / "int8_blocks".
std::string to_string(WeightOnlyActivations activations);

struct WeightOnlyOptions {
  WeightOnlyActivations activations = WeightOnlyActivations::automatic;
};

/// The path weight_only_gemm takes for m rows of finite x (float32, int8_dynamic or
/// int8_blocks; never automatic), for tests and reports.
WeightOnlyActivations resolve_activations(const WeightOnlyOptions& options, std::int64_t m,
                                          const PackedWeightsLowBit& w);

/// y[M, N] = x[M, K] · ŵᵀ + bias (equations at the top of this file).
/// x: row m at x + m · x_row_stride elements, of `x_type` float32 or bfloat16;
/// K = w.columns(), N = w.rows(). bias: N floats or null. y: float32, row m at
/// y + m · y_row_stride. M = 0 is a no-op. float32 path: M ≤ 8 streams the
/// weights once (GEMV path); larger M reuses each decoded panel across rows.
/// int8_dynamic path (AVX-512 VNNI): int4 codes at every M and int8 codes up to
/// M = 64 are decoded in registers (M ≤ 4 streams the weights once, further row
/// blocks read them from L2); int8 codes at larger M are decoded per 48-channel
/// tile once per call.
/// Uses the active kernel tier and num_threads() threads (split over output
/// channels, never over K). Throws Error (and writes nothing) for null
/// pointers, m < 0, strides smaller than a row, an empty w, or an x_type
/// other than float32 / bfloat16. Non-finite x propagates as IEEE arithmetic
/// does. Safe to call from several threads at once with distinct outputs.
/// `options` picks the activation arithmetic (WeightOnlyActivations; the
/// default, automatic, is int8_blocks, or int8_dynamic per-channel, where a fast kernel exists).
void weight_only_gemm(const void* x, ScalarType x_type, std::int64_t m, std::int64_t x_row_stride,
                      const PackedWeightsLowBit& w, const float* bias, float* y,
                      std::int64_t y_row_stride, const WeightOnlyOptions& options = {});

/// The float32 form of weight_only_gemm.
inline void weight_only_gemm(const float* x, std::int64_t m, std::int64_t x_row_stride,
                             const PackedWeightsLowBit& w, const float* bias, float* y,
                             std::int64_t y_row_stride, const WeightOnlyOptions& options = {}) {
  weight_only_gemm(x, ScalarType::float32, m, x_row_stride, w, bias, y, y_row_stride, options);
}

/// Tensor convenience: x is float32 or bfloat16 [..., K] (rank ≥ 1); returns
/// float32 [..., N]. `bias`, when given, is float32 [N]. Throws Error naming
/// the argument and shape that do not fit.
Tensor weight_only_linear(const TensorView& x, const PackedWeightsLowBit& w,
                          const TensorView* bias = nullptr, const WeightOnlyOptions& options = {});

}  // namespace lucid::quantization
