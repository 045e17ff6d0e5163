// observe_range / choose_qparams: min and max of a tensor per granularity.
#include <algorithm>
#include <cmath>

#include "core/param_layout.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/qparams.hpp"

namespace lucid::quantization {

namespace detail {

ParamLayout ParamLayout::make(const Shape& shape, QScheme qscheme, int axis,
                              std::int64_t group_size) {
  ParamLayout layout;
  const std::int64_t count = shape_numel(shape);
  if (!is_per_channel(qscheme)) {
    layout.inner = count;
    return layout;
  }
  const int a = normalize_axis(axis, shape.size(), "ch_axis");
  for (int k = 0; k < a; ++k)
    layout.outer *= shape[static_cast<std::size_t>(k)];
  layout.dim = shape[static_cast<std::size_t>(a)];
  for (std::size_t k = static_cast<std::size_t>(a) + 1; k < shape.size(); ++k) {
    layout.inner *= shape[k];
  }
  if (group_size > 0) {
    layout.kind = Kind::per_group;
    layout.group_size = group_size;
    layout.groups = (layout.dim + group_size - 1) / group_size;
  } else {
    layout.kind = Kind::per_channel;
  }
  return layout;
}

}  // namespace detail

RangeStats observe_range(const TensorView& x, QScheme qscheme, int ch_axis,
                         std::int64_t group_size) {
  if (group_size < 0) {
    throw Error("observe_range: group_size = " + std::to_string(group_size) +
                " (expected 0 for per-channel, or > 0 for per-group)");
  }
  if (group_size > 0 && !is_per_channel(qscheme)) {
    throw Error("observe_range: group_size = " + std::to_string(group_size) + " with qscheme " +
                to_string(qscheme) + " (expected a per-channel scheme for per-group quantization)");
  }
  const std::vector<float> values = to_float32(x, "observe_range: x");
  const auto layout = detail::ParamLayout::make(x.shape, qscheme, ch_axis, group_size);
  const auto slots = static_cast<std::size_t>(layout.slots());
  RangeStats stats;
  stats.min.assign(slots, INFINITY);
  stats.max.assign(slots, -INFINITY);
  layout.for_each([&](std::int64_t flat, std::int64_t slot) {
    const float v = values[static_cast<std::size_t>(flat)];
    if (!std::isfinite(v)) {
      ++stats.nonfinite_count;
      return;
    }
    const auto s = static_cast<std::size_t>(slot);
    stats.min[s] = std::min(stats.min[s], v);
    stats.max[s] = std::max(stats.max[s], v);
  });
  for (std::size_t s = 0; s < slots; ++s) {
    if (stats.min[s] > stats.max[s]) stats.min[s] = stats.max[s] = 0.0f;  // saw nothing finite
  }
  return stats;
}

QParams choose_qparams(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                       std::int64_t group_size, float eps) {
  const RangeStats stats = observe_range(x, qscheme, ch_axis, group_size);
  if (!is_per_channel(qscheme)) {
    return calculate_qparams(stats.min[0], stats.max[0], qscheme, qdtype, eps);
  }
  QParams qparams = calculate_qparams(stats.min, stats.max, qscheme, qdtype, ch_axis, eps);
  qparams.group_size = group_size;
  return qparams;
}

}  // namespace lucid::quantization
