// Internal: the 2-D view of a tensor, slices of it (parse_slice) and cell ranges.
#include "plot/grid.hpp"

#include <charconv>
#include <string>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

// Parses a non-negative decimal integer filling all of `text`.
std::optional<std::int64_t> parse_index(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

Slice parse_slice(std::string_view text, std::string_view option) {
  const auto fail = [&](const char* expected) -> Slice {
    throw Error(std::string(option) + " = " + std::string(text) + " (expected " + expected + ")");
  };
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return fail("a:b, a:, :b or : with integers 0 <= a < b");
  const std::string_view first = text.substr(0, colon);
  const std::string_view second = text.substr(colon + 1);
  Slice slice;
  if (!first.empty()) {
    const auto begin = parse_index(first);
    if (!begin) return fail("a:b, a:, :b or : with integers 0 <= a < b");
    slice.begin = *begin;
  }
  if (!second.empty()) {
    slice.end = parse_index(second);
    if (!slice.end) return fail("a:b, a:, :b or : with integers 0 <= a < b");
    if (*slice.end <= slice.begin) return fail("a:b with a < b");
  }
  return slice;
}

namespace report {
namespace {

// Rows or columns [begin, end) of a dimension of size `dim`; throws naming `name`.
std::pair<std::int64_t, std::int64_t> resolve(const std::optional<Slice>& slice, std::int64_t dim,
                                              const char* name) {
  if (!slice) return {0, dim};
  const std::int64_t end = slice->end.value_or(dim);
  if (slice->begin < 0 || end <= slice->begin || end > dim) {
    throw Error(std::string(name) + " = " + to_string(*slice) +
                " (expected a:b with 0 <= a < b <= " + std::to_string(dim) + ", the " + name +
                " of the 2-D view)");
  }
  return {slice->begin, end - slice->begin};
}

}  // namespace

MatrixDims matrix_dims(const Shape& shape) {
  if (shape.empty()) return {1, 1};
  MatrixDims dims{1, shape.back()};
  for (std::size_t i = 0; i + 1 < shape.size(); ++i)
    dims.rows *= shape[i];
  return dims;
}

Window resolve_window(MatrixDims dims, const std::optional<Slice>& rows,
                      const std::optional<Slice>& cols) {
  const auto [row0, row_count] = resolve(rows, dims.rows, "rows");
  const auto [col0, col_count] = resolve(cols, dims.cols, "cols");
  return {row0, row_count, col0, col_count};
}

std::string to_string(const Slice& slice) {
  return std::to_string(slice.begin) + ":" + (slice.end ? std::to_string(*slice.end) : "");
}

std::optional<Range> finite_range(const CellGrid& grid) {
  std::optional<Range> range;
  for (const double v : grid.cells) {
    if (!std::isfinite(v)) continue;
    if (!range) range = Range{v, v};
    range->lo = std::min(range->lo, v);
    range->hi = std::max(range->hi, v);
  }
  return range;
}

}  // namespace report
}  // namespace lucid::quantization
