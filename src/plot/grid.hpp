// Internal: the 2-D view of a tensor, row / column windows of it, and reduction to cells.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lucid/quantization/plot.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::report {

/// A tensor seen as a matrix: [product of the leading dimensions, last dimension];
/// [1, N] for a 1-D tensor and [1, 1] for a scalar.
struct MatrixDims {
  std::int64_t rows = 1;
  std::int64_t cols = 1;
};
MatrixDims matrix_dims(const Shape& shape);

/// Rows [row0, row0 + rows) and columns [col0, col0 + cols) of a matrix.
struct Window {
  std::int64_t row0 = 0;
  std::int64_t rows = 0;
  std::int64_t col0 = 0;
  std::int64_t cols = 0;
  bool covers(MatrixDims dims) const { return rows == dims.rows && cols == dims.cols; }
};

/// The window that `rows` and `cols` (unset: everything) select in `dims`. Throws Error
/// naming "rows" or "cols", the slice and the dimension when not 0 <= begin < end <= dim.
Window resolve_window(MatrixDims dims, const std::optional<Slice>& rows,
                      const std::optional<Slice>& cols);

/// "a:b", "a:" for a slice, the way parse_slice() reads it.
std::string to_string(const Slice& slice);

/// How a block of elements becomes one cell.
enum class Reduce { mean, abs_max };

/// A window reduced to cells: blocks of block_rows x block_cols elements each become one
/// cell (the last row / column of blocks may be smaller).
struct CellGrid {
  Window window;
  std::int64_t block_rows = 1;
  std::int64_t block_cols = 1;
  std::int64_t rows = 0;  ///< cells
  std::int64_t cols = 0;
  /// Row-major cell values. A block holding a non-finite element takes the first such value.
  std::vector<double> cells;
  std::int64_t nonfinite = 0;  ///< non-finite elements inside the window

  bool reduced() const { return block_rows > 1 || block_cols > 1; }
  double at(std::int64_t r, std::int64_t c) const {
    return cells[static_cast<std::size_t>(r * cols + c)];
  }
};

/// Reduces `window` to at most max_side x max_side cells; `value(r, c)` returns the element
/// at matrix row r, column c (absolute indices) as a double.
template <class Value>
CellGrid reduce_to_cells(const Window& window, Reduce reduce, std::int64_t max_side,
                         Value&& value) {
  CellGrid grid;
  grid.window = window;
  grid.block_rows = (window.rows + max_side - 1) / max_side;
  grid.block_cols = (window.cols + max_side - 1) / max_side;
  grid.rows = (window.rows + grid.block_rows - 1) / grid.block_rows;
  grid.cols = (window.cols + grid.block_cols - 1) / grid.block_cols;
  grid.cells.assign(static_cast<std::size_t>(grid.rows * grid.cols), 0.0);
  std::vector<double> sums(static_cast<std::size_t>(grid.cols));
  std::vector<std::int64_t> counts(static_cast<std::size_t>(grid.cols));
  std::vector<char> bad(static_cast<std::size_t>(grid.cols));
  for (std::int64_t cr = 0; cr < grid.rows; ++cr) {
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(counts.begin(), counts.end(), 0);
    std::fill(bad.begin(), bad.end(), 0);
    const std::int64_t r_end = std::min(window.rows, (cr + 1) * grid.block_rows);
    for (std::int64_t r = cr * grid.block_rows; r < r_end; ++r) {
      for (std::int64_t c = 0; c < window.cols; ++c) {
        const double v = value(window.row0 + r, window.col0 + c);
        const auto cell = static_cast<std::size_t>(c / grid.block_cols);
        if (!std::isfinite(v)) {
          ++grid.nonfinite;
          if (!bad[cell]) sums[cell] = v;
          bad[cell] = 1;
        } else if (!bad[cell]) {
          sums[cell] = reduce == Reduce::mean ? sums[cell] + v : std::max(sums[cell], std::abs(v));
          ++counts[cell];
        }
      }
    }
    for (std::int64_t cc = 0; cc < grid.cols; ++cc) {
      const auto i = static_cast<std::size_t>(cc);
      const bool average = reduce == Reduce::mean && !bad[i] && counts[i] > 0;
      grid.cells[static_cast<std::size_t>(cr * grid.cols + cc)] =
          average ? sums[i] / static_cast<double>(counts[i]) : sums[i];
    }
  }
  return grid;
}

/// The smallest and largest finite cells; nullopt when there is none.
struct Range {
  double lo = 0;
  double hi = 0;
};
std::optional<Range> finite_range(const CellGrid& grid);

}  // namespace lucid::quantization::report
