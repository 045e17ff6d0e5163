// Internal: float32 rows quantized to 8-bit codes with one (scale, zero point) per row, or one
// pair for all rows, exactly as quantize() writes them.
//
// The first step shared by the dynamic int8 GEMM, the weight-only int8-activation path and the
// int8 weight packing.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/kernel_table.hpp"
#include "lucid/quantization/qdtype.hpp"
#include "lucid/quantization/qscheme.hpp"

namespace lucid::quantization::detail {

/// The rows to quantize and where their codes go.
struct RowQuantization {
  const float* x = nullptr;  ///< row r: k floats at x + r · x_stride
  std::int64_t rows = 0;
  std::int64_t k = 0;
  std::int64_t x_stride = 0;
  /// PER_TENSOR_AFFINE or PER_TENSOR_SYMMETRIC, applied to each row (per_row) or to all.
  QScheme scheme = QScheme::PER_TENSOR_AFFINE;
  QDtype qdtype = quint8;  ///< an 8-bit grid
  bool per_row = true;
  std::uint8_t* codes = nullptr;  ///< row r: k codes at codes + r · code_stride (low bytes)
  std::int64_t code_stride = 0;
};

/// How a non-finite element is reported: "<prefix>[r, c] = <value> (<expected>)", e.g.
/// "gemm_dynamic: a[2, 7] = inf (expected finite activations)".
struct NonFiniteMessage {
  std::string_view prefix;
  std::string_view expected;
};

/// Throws Error naming the first non-finite element of row `row` (k floats at x, one of which
/// is not finite).
[[noreturn]] void throw_first_nonfinite(const float* x, std::int64_t k, std::int64_t row,
                                        const NonFiniteMessage& message);

/// Quantizes the rows with `kernels` (the entry point's table), in parallel over rows: the
/// range of each row (finite values), calculate_qparams(min, max, scheme, qdtype) per row or
/// over all rows, then the codes as quantize() writes them. Fills `scales` and `zero_points`
/// with one value per row (a per-tensor pair repeated). When a row holds a non-finite value:
/// returns false, having written nothing, if `fallback`; else throws as throw_first_nonfinite.
bool quantize_rows(const kernels::KernelTable& kernels, const RowQuantization& rows,
                   const NonFiniteMessage& message, bool fallback, std::vector<float>& scales,
                   std::vector<std::int32_t>& zero_points);

}  // namespace lucid::quantization::detail
