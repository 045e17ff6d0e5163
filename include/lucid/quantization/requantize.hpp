// Requantization: int32 accumulators (e.g. of an int8 GEMM) to 8-bit codes.
#pragma once

#include <cstdint>
#include <span>

#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// Maps int32 accumulators to codes of an 8-bit grid (qint8 / quint8, custom
/// ranges allowed), computed in double with ties to even:
///   q = clamp(nearbyint(double(acc) * double(multiplier)) + zero_point, quant_min, quant_max)
/// (docs/numerics.md, "Requantization"). For a GEMM output the multiplier is
/// typically s_a * s_w / s_out. Returns an int8 (signed grid) or uint8 tensor
/// of acc's shape. Throws Error when acc is not int32, qdtype is not 8-bit, the
/// multiplier is not finite and > 0, or the zero point lies outside the grid.
Tensor requantize(const TensorView& acc, float multiplier, std::int32_t zero_point,
                  const QDtype& qdtype);

/// Per-channel form: the element with index c along `axis` uses multipliers[c]
/// and zero_points[c]; both spans hold acc.shape[axis] entries.
Tensor requantize(const TensorView& acc, std::span<const float> multipliers,
                  std::span<const std::int32_t> zero_points, int axis, const QDtype& qdtype);

/// The row kernels behind requantize(), for fused output stages: `count`
/// accumulators into `count` bytes at `out` (int8 or uint8 storage), on the
/// calling thread, with no allocation. The caller guarantees finite multipliers
/// > 0 and zero points inside the grid. Throws Error when qdtype is not 8-bit.
void requantize_row(const std::int32_t* acc, std::int64_t count, float multiplier,
                    std::int32_t zero_point, const QDtype& qdtype, void* out);
/// The same with per-element parameters: element k uses multipliers[k], zero_points[k]
/// (per output channel when a row runs along the channels).
void requantize_row(const std::int32_t* acc, std::int64_t count, const float* multipliers,
                    const std::int32_t* zero_points, const QDtype& qdtype, void* out);

}  // namespace lucid::quantization
