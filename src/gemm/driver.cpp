// The GEMM driver: tiles of C over threads, the kernel per tile, then the output stage.
#include "gemm/driver.hpp"

#include <algorithm>
#include <array>

#include "kernels/parallel.hpp"
#include "lucid/quantization/runtime.hpp"

namespace lucid::quantization::igemm {
namespace {

// Tile shapes. Small M: all rows, the kernel's small_m_panels (at most max_small_m_panels),
// panels streamed once. Large M: 64-row × 3-panel tiles.
constexpr std::int64_t small_m = 16;
constexpr std::int64_t max_small_m_panels = 12;
constexpr std::int64_t large_m_rows = 64;
constexpr std::int64_t large_m_panels = 3;
constexpr std::int64_t tile_capacity = 3072;  // int32 accumulators per tile
static_assert(small_m * max_small_m_panels * panel_width <= tile_capacity);
static_assert(large_m_rows * large_m_panels * panel_width <= tile_capacity);

// Multiply-accumulates below which another thread costs more than it saves.
constexpr std::int64_t min_macs_per_thread = std::int64_t{1} << 21;

}  // namespace

void run_gemm(const ActivationRows& a, const PackedWeightsInt8::Layout& w,
              const TiledGemmKernel& kernel, const TileStage& stage) {
  if (a.rows == 0) return;
  const bool small = a.rows <= small_m;
  const std::int64_t tile_rows = small ? a.rows : large_m_rows;
  const std::int64_t tile_panels =
      small ? std::clamp<std::int64_t>(kernel.small_m_panels, 1, max_small_m_panels)
            : large_m_panels;
  const std::int64_t row_tiles = (a.rows + tile_rows - 1) / tile_rows;
  const std::int64_t col_tiles = (w.panels + tile_panels - 1) / tile_panels;
  const std::int64_t tiles = row_tiles * col_tiles;
  const std::int64_t macs = a.rows * w.panels * panel_width * w.k;
  const auto pieces = static_cast<int>(std::clamp<std::int64_t>(
      std::min<std::int64_t>(macs / min_macs_per_thread, tiles), 1, num_threads()));
  const std::int64_t bytes_per_panel = panel_bytes(w.k);
  kernels::parallel_pieces(tiles, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    alignas(64) std::array<std::int32_t, tile_capacity> acc;
    std::array<std::int32_t, large_m_rows> same_zero_point;
    same_zero_point.fill(a.zero_points[0]);
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t row_begin = t % row_tiles * tile_rows;
      const std::int64_t panel_begin = t / row_tiles * tile_panels;
      const std::int64_t panel_count = std::min(tile_panels, w.panels - panel_begin);
      GemmBlock block;
      block.a = a.data + row_begin * a.stride;
      block.a_stride = a.stride;
      block.rows = std::min(tile_rows, a.rows - row_begin);
      block.k = w.k;
      block.flip = a.flip;
      block.zero_points = a.per_row ? a.zero_points + row_begin : same_zero_point.data();
      block.panels = w.panel(0) + panel_begin * bytes_per_panel;
      block.panel_count = panel_count;
      block.column_sums = w.column_sums.data() + panel_begin * panel_width;
      block.acc = acc.data();
      block.acc_stride = panel_count * panel_width;
      kernel.run(block);
      const std::int64_t col_begin = panel_begin * panel_width;
      const std::int64_t col_end = std::min(w.n, col_begin + block.acc_stride);
      stage.apply(row_begin, block.rows, col_begin, col_end, acc.data(), block.acc_stride);
    }
  });
}

}  // namespace lucid::quantization::igemm
