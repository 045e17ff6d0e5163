// Internal: the GEMM driver that tiles C, runs the kernel on each tile and hands the tile to an
// output stage.
#pragma once

#include <cstdint>

#include "gemm/packed_layout.hpp"
#include "kernels/gemm_int8.hpp"

namespace lucid::quantization::igemm {

/// Validated activation rows as the kernels read them.
struct ActivationRows {
  const std::uint8_t* data = nullptr;
  std::int64_t stride = 0;  // bytes between rows
  std::int64_t rows = 0;
  bool flip = false;  // int8 codes (the kernel adds 128)
  /// Effective zero points (+128 when flip): one per row when per_row, else zero_points[0].
  const std::int32_t* zero_points = nullptr;
  bool per_row = false;
};

/// Receives finished int32 tiles: acc holds rows × (col_end − col_begin)
/// accumulators (row r at acc + r · acc_stride) for C rows row_begin.. and
/// columns col_begin..col_end − 1. Called concurrently on distinct tiles; must not throw.
class TileStage {
 public:
  virtual void apply(std::int64_t row_begin, std::int64_t rows, std::int64_t col_begin,
                     std::int64_t col_end, const std::int32_t* acc,
                     std::int64_t acc_stride) const = 0;

 protected:
  ~TileStage() = default;
};

/// Computes every tile of C = (A − z) · Wᵀ with `kernel` (the entry point's variant) on
/// num_threads() threads (fewer for small products; K is never split, so results do not depend on
/// the count) and passes each tile to `stage`.
void run_gemm(const ActivationRows& a, const PackedWeightsInt8::Layout& w,
              const TiledGemmKernel& kernel, const TileStage& stage);

}  // namespace lucid::quantization::igemm
