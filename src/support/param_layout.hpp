// Internal: which (scale, zero_point) slot each element of a tensor uses.
#pragma once

#include <algorithm>
#include <cstdint>

#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::detail {

/// The tensor seen as [outer, dim, inner] around the quantization axis, and
/// the rule that maps an element (o, d, i) to its parameter slot.
struct ParamLayout {
  enum class Kind { per_tensor, per_channel, per_group };
  Kind kind = Kind::per_tensor;
  std::int64_t outer = 1;
  std::int64_t dim = 1;
  std::int64_t inner = 1;
  std::int64_t group_size = 0;  // per_group only
  std::int64_t groups = 1;      // ceil(dim / group_size), per_group only

  /// The layout for `qscheme` / `axis` / `group_size` on `shape`; the axis must be valid.
  static ParamLayout make(const Shape& shape, QScheme qscheme, int axis, std::int64_t group_size);

  /// Number of parameter slots.
  std::int64_t slots() const {
    switch (kind) {
      case Kind::per_tensor:
        return 1;
      case Kind::per_channel:
        return dim;
      case Kind::per_group:
        return outer * groups * inner;
    }
    return 1;
  }
  /// The slot of element (o, d, i).
  std::int64_t slot(std::int64_t o, std::int64_t d, std::int64_t i) const {
    switch (kind) {
      case Kind::per_tensor:
        return 0;
      case Kind::per_channel:
        return d;
      case Kind::per_group:
        return (o * groups + d / group_size) * inner + i;
    }
    return 0;
  }

  /// Calls f(begin, end, slot, per_element) for the runs that tile the flat
  /// range [first, last) in order. In a run with per_element == false every
  /// element uses `slot`; with per_element == true element begin + k uses
  /// slot + k (per-channel along the last axis, per-group along an outer axis).
  template <class F>
  void for_each_run(std::int64_t first, std::int64_t last, F&& f) const {
    for (std::int64_t p = first; p < last;) {
      std::int64_t stop = last;
      if (kind == Kind::per_tensor) {
        f(p, stop, std::int64_t{0}, false);
      } else if (kind == Kind::per_channel && inner > 1) {
        stop = std::min(last, (p / inner + 1) * inner);
        f(p, stop, (p / inner) % dim, false);
      } else if (kind == Kind::per_channel) {
        const std::int64_t d = p % dim;
        stop = std::min(last, p - d + dim);
        f(p, stop, d, true);
      } else if (inner > 1) {  // per_group along an outer axis: one row of `inner` at a time
        const std::int64_t row = p / inner;
        const std::int64_t o = row / dim;
        const std::int64_t d = row % dim;
        stop = std::min(last, (row + 1) * inner);
        f(p, stop, (o * groups + d / group_size) * inner + p % inner, true);
      } else {  // per_group along the last axis: groups are contiguous runs
        const std::int64_t o = p / dim;
        const std::int64_t d = p % dim;
        const std::int64_t group_end = std::min((d / group_size + 1) * group_size, dim);
        stop = std::min(last, p - d + group_end);
        f(p, stop, o * groups + d / group_size, false);
      }
      p = stop;
    }
  }

  /// Whether the groups lie along the last axis: each group a contiguous run of elements.
  bool groups_contiguous() const { return kind == Kind::per_group && inner == 1; }

  /// Whole groups per call of the per-group kernels: at most max_run_groups, and at most
  /// run_bytes of input, so that a run stays in L1 from the range pass to the codes pass (8 KB:
  /// g128 at 256 MB +10 %, g32 unchanged; docs/performance.md) and the codes kernels' prefetch,
  /// one call's length ahead, stays near.
  static constexpr std::int64_t max_run_groups = 128;
  static constexpr std::int64_t run_bytes = 8192;
  std::int64_t groups_per_run(std::int64_t element_bytes) const {
    return std::clamp<std::int64_t>(run_bytes / (group_size * element_bytes), 1, max_run_groups);
  }

  /// For groups_contiguous() layouts: tiles [first, last) in order with whole(begin, count, slot)
  /// for runs of 1 to max_groups whole groups of group_size elements (within one row) and
  /// part(begin, end, slot) for a group cut by first, last or the row's end.
  template <class Whole, class Part>
  void for_each_group_run(std::int64_t first, std::int64_t last, std::int64_t max_groups,
                          Whole&& whole, Part&& part) const {
    for (std::int64_t p = first; p < last;) {
      const std::int64_t row = p / dim, d = p % dim;
      const std::int64_t slot = row * groups + d / group_size;
      const std::int64_t row_end = std::min(last, (row + 1) * dim);
      const std::int64_t count =
          d % group_size == 0 ? std::min(max_groups, (row_end - p) / group_size) : 0;
      if (count > 0) {
        whole(p, count, slot);
        p += count * group_size;
        continue;
      }
      const std::int64_t stop = std::min(row_end, p - d % group_size + group_size);
      part(p, stop, slot);
      p = stop;
    }
  }

  /// Calls f(flat_index, slot) for every element in row-major order.
  template <class F>
  void for_each(F&& f) const {
    std::int64_t flat = 0;
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t d = 0; d < dim; ++d) {
        for (std::int64_t i = 0; i < inner; ++i, ++flat)
          f(flat, slot(o, d, i));
      }
    }
  }
};

}  // namespace lucid::quantization::detail
