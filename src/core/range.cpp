// observe_range / observe_abs_max / choose_qparams: ranges of a tensor per granularity.
#include <algorithm>
#include <cmath>

#include "core/kernel_args.hpp"
#include "core/qparams_formula.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/qparams.hpp"
#include "support/param_layout.hpp"

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

namespace {

using detail::ParamLayout;

void check_granularity(QScheme qscheme, std::int64_t group_size, const char* what) {
  if (group_size < 0) {
    throw Error(std::string(what) + ": group_size = " + std::to_string(group_size) +
                " (expected 0 for per-channel, or > 0 for per-group)");
  }
  if (group_size > 0 && !is_per_channel(qscheme)) {
    throw Error(std::string(what) + ": group_size = " + std::to_string(group_size) +
                " with qscheme " + to_string(qscheme) +
                " (expected a per-channel scheme for per-group quantization)");
  }
}

// The slots [first, last) that the elements [begin, end) use.
std::pair<std::int64_t, std::int64_t> slot_window(const ParamLayout& layout, std::int64_t begin,
                                                  std::int64_t end) {
  if (layout.kind == ParamLayout::Kind::per_tensor) return {0, 1};
  if (layout.kind == ParamLayout::Kind::per_channel) return {0, layout.dim};
  const auto group_of_row = [&](std::int64_t row) {
    return (row / layout.dim) * layout.groups + (row % layout.dim) / layout.group_size;
  };
  return {group_of_row(begin / layout.inner) * layout.inner,
          (group_of_row((end - 1) / layout.inner) + 1) * layout.inner};
}

// The input as something the kernels read: float64 is narrowed to float32 first.
struct KernelInput {
  std::vector<float> converted;
  TensorView view;

  KernelInput(const TensorView& x, const char* what) : view(x) {
    if (detail::is_kernel_input(x.type)) return;
    converted = to_float32(x, what);  // throws for non-floating types
    view = TensorView(converted.data(), ScalarType::float32, x.shape);
  }
};

// Folds every element into `Arrays` per-slot accumulators (min and max, or
// abs-max) with per-piece partials combined afterwards. min / max are exact
// and order-free, so the result does not depend on the thread count.
template <int Arrays, class RunFold, class Combine>
std::int64_t reduce_slots(const TensorView& x, const ParamLayout& layout, float initial[Arrays],
                          ParamArray<float>* results, RunFold run_fold, Combine combine) {
  const std::int64_t n = x.numel();
  const std::int64_t slots = layout.slots();
  for (int a = 0; a < Arrays; ++a)
    results[a].assign(static_cast<std::size_t>(slots), initial[a]);
  const int pieces = kernels::threads_for(n);
  struct Partial {
    std::int64_t first = 0;
    std::vector<float> values[Arrays];
    std::int64_t nonfinite = 0;
  };
  std::vector<Partial> partials(static_cast<std::size_t>(pieces));
  for (int p = 0; p < pieces; ++p) {  // allocate outside the parallel region
    const auto [begin, end] = kernels::piece_of(n, pieces, p, detail::piece_alignment);
    if (begin >= end) continue;
    const auto [first, last] = slot_window(layout, begin, end);
    Partial& partial = partials[static_cast<std::size_t>(p)];
    partial.first = first;
    for (int a = 0; a < Arrays; ++a)
      partial.values[a].assign(static_cast<std::size_t>(last - first), initial[a]);
  }
  const auto* bytes = static_cast<const unsigned char*>(x.data);
  const std::size_t element_bytes = element_size(x.type);
  kernels::parallel_pieces(
      n, pieces, detail::piece_alignment, [&](int p, std::int64_t begin, std::int64_t end) {
        Partial& partial = partials[static_cast<std::size_t>(p)];
        float* values[Arrays];
        for (int a = 0; a < Arrays; ++a)
          values[a] = partial.values[a].data() - partial.first;
        layout.for_each_run(
            begin, end, [&](std::int64_t b, std::int64_t e, std::int64_t slot, bool per_element) {
              partial.nonfinite += run_fold(bytes + static_cast<std::size_t>(b) * element_bytes,
                                            e - b, values, slot, per_element);
            });
      });
  std::int64_t nonfinite = 0;
  for (const Partial& partial : partials) {
    nonfinite += partial.nonfinite;
    for (int a = 0; a < Arrays; ++a) {
      for (std::size_t s = 0; s < partial.values[a].size(); ++s) {
        float& slot = results[a][static_cast<std::size_t>(partial.first) + s];
        slot = combine(a, slot, partial.values[a][s]);
      }
    }
  }
  return nonfinite;
}

// reduce_slots for groups along the last axis (each group a contiguous run): the threads take
// whole groups, so each writes its own slots straight into `results`; runs of whole groups
// (ParamLayout::for_each_group_run) go through group_run(data, count, group_size, values, slot),
// which returns whether every element was finite; a run that was not, and a group cut by its
// row's end, go group by group through run_fold (counting the non-finite; a refold recomputes the
// same bounds).
template <int Arrays, class GroupRun, class RunFold>
std::int64_t reduce_groups(const TensorView& x, const ParamLayout& layout, float initial[Arrays],
                           ParamArray<float>* results, GroupRun group_run, RunFold run_fold) {
  const std::int64_t units = layout.slots();
  for (int a = 0; a < Arrays; ++a)
    results[a].assign(static_cast<std::size_t>(units), initial[a]);
  const int pieces = static_cast<int>(std::clamp<std::int64_t>(kernels::threads_for(x.numel()), 1,
                                                               std::max<std::int64_t>(units, 1)));
  std::vector<std::int64_t> nonfinite(static_cast<std::size_t>(pieces), 0);
  const auto* bytes = static_cast<const unsigned char*>(x.data);
  const auto element_bytes = static_cast<std::int64_t>(element_size(x.type));
  const auto first_element = [&](std::int64_t unit) {  // unit == units: the end
    return (unit / layout.groups) * layout.dim + (unit % layout.groups) * layout.group_size;
  };
  kernels::parallel_pieces(units, pieces, 1, [&](int p, std::int64_t first, std::int64_t last) {
    float* values[Arrays];
    for (int a = 0; a < Arrays; ++a)
      values[a] = results[a].data();
    const auto data_at = [&](std::int64_t element) { return bytes + element * element_bytes; };
    std::int64_t& count_nonfinite = nonfinite[static_cast<std::size_t>(p)];
    const auto refold = [&](std::int64_t begin, std::int64_t count, std::int64_t slot) {
      for (int a = 0; a < Arrays; ++a)
        values[a][slot] = initial[a];
      count_nonfinite += run_fold(data_at(begin), count, values, slot, false);
    };
    layout.for_each_group_run(
        first_element(first), first_element(last), layout.groups_per_run(element_bytes),
        [&](std::int64_t begin, std::int64_t count, std::int64_t slot) {
          if (group_run(data_at(begin), count, layout.group_size, values, slot)) return;
          for (std::int64_t g = 0; g < count; ++g)
            refold(begin + g * layout.group_size, layout.group_size, slot + g);
        },
        [&](std::int64_t begin, std::int64_t end, std::int64_t slot) {
          refold(begin, end - begin, slot);
        });
  });
  std::int64_t total = 0;
  for (const std::int64_t count : nonfinite)
    total += count;
  return total;
}

// -0 and +0 compare equal, so which one a reduction keeps depends on the
// order; the result is always reported as +0.
float canonical_zero(float value) {
  return value == 0.0f ? 0.0f : value;
}

}  // namespace

RangeStats observe_range(const TensorView& x, QScheme qscheme, int ch_axis,
                         std::int64_t group_size) {
  check_granularity(qscheme, group_size, "observe_range");
  const KernelInput input(x, "observe_range: x");
  const auto layout = ParamLayout::make(x.shape, qscheme, ch_axis, group_size);
  const kernels::KernelTable& k = kernels::active();
  const int t = detail::float_index(input.view.type);
  RangeStats stats;
  ParamArray<float> results[2];
  float initial[2] = {INFINITY, -INFINITY};
  const auto run_fold = [&](const void* data, std::int64_t count, float** values, std::int64_t slot,
                            bool per_element) {
    return per_element ? k.minmax_vec[t](data, count, values[0] + slot, values[1] + slot)
                       : k.minmax[t](data, count, values[0] + slot, values[1] + slot);
  };
  if (layout.groups_contiguous()) {
    stats.nonfinite_count = reduce_groups<2>(
        input.view, layout, initial, results,
        [&](const void* data, std::int64_t count, std::int64_t size, float** values,
            std::int64_t slot) {
          return k.minmax_groups[t](data, count, size, values[0] + slot, values[1] + slot);
        },
        run_fold);
  } else {
    stats.nonfinite_count = reduce_slots<2>(
        input.view, layout, initial, results, run_fold, [](int a, float total, float part) {
          return a == 0 ? std::min(total, part) : std::max(total, part);
        });
  }
  stats.min = std::move(results[0]);
  stats.max = std::move(results[1]);
  for (std::size_t s = 0; s < stats.min.size(); ++s) {
    if (stats.min[s] > stats.max[s]) stats.min[s] = stats.max[s] = 0.0f;  // saw nothing finite
    stats.min[s] = canonical_zero(stats.min[s]);
    stats.max[s] = canonical_zero(stats.max[s]);
  }
  return stats;
}

AbsMaxStats observe_abs_max(const TensorView& x, QScheme qscheme, int ch_axis,
                            std::int64_t group_size) {
  check_granularity(qscheme, group_size, "observe_abs_max");
  const KernelInput input(x, "observe_abs_max: x");
  const auto layout = ParamLayout::make(x.shape, qscheme, ch_axis, group_size);
  const kernels::KernelTable& k = kernels::active();
  const int t = detail::float_index(input.view.type);
  AbsMaxStats stats;
  float initial[1] = {0.0f};
  const auto run_fold = [&](const void* data, std::int64_t count, float** values, std::int64_t slot,
                            bool per_element) {
    return per_element ? k.abs_max_vec[t](data, count, values[0] + slot)
                       : k.abs_max[t](data, count, values[0] + slot);
  };
  if (layout.groups_contiguous()) {
    stats.nonfinite_count = reduce_groups<1>(
        input.view, layout, initial, &stats.abs_max,
        [&](const void* data, std::int64_t count, std::int64_t size, float** values,
            std::int64_t slot) { return k.abs_max_groups[t](data, count, size, values[0] + slot); },
        run_fold);
  } else {
    stats.nonfinite_count =
        reduce_slots<1>(input.view, layout, initial, &stats.abs_max, run_fold,
                        [](int, float total, float part) { return std::max(total, part); });
  }
  return stats;
}

QParams choose_qparams(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                       std::int64_t group_size, float eps) {
  // Groups in runs, straight into the parameter arrays (a 256 MB tensor in groups of 32: 1.9 M
  // slots; through observe_range's per-slot partials it took 10 times quantize_per_group).
  if (group_size > 0 && is_per_channel(qscheme) && detail::is_kernel_input(x.type))
    return detail::choose_group_qparams(x, qscheme, qdtype, ch_axis, group_size, eps);
  const RangeStats stats = observe_range(x, qscheme, ch_axis, group_size);
  if (!is_per_channel(qscheme)) {
    return calculate_qparams(stats.min[0], stats.max[0], qscheme, qdtype, eps);
  }
  QParams qparams = calculate_qparams(stats.min, stats.max, qscheme, qdtype, ch_axis, eps);
  qparams.group_size = group_size;
  return qparams;
}

}  // namespace lucid::quantization
