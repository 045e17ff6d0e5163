// PyTorch 1.13 HistogramObserver arithmetic: histc, histogram combination and the L2 search.
#include "observers/torch_histogram.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "kernels/histogram.hpp"
#include "observers/bin_counter.hpp"

namespace lucid::quantization::detail {

// ------------------------------------------------------------------ sums

namespace {

// utils::CeilLog2 of ATen: 1 for x <= 2, else ceil(log2(x)).
std::int64_t ceil_log2(std::int64_t x) {
  if (x <= 2) return 1;
  std::int64_t bits = 0;
  for (auto v = static_cast<std::uint64_t>(x - 1); v != 0; v >>= 1)
    ++bits;
  return bits;
}

constexpr std::int64_t kLanes = 8;  // Vectorized<float>::size() on AVX2
using Lanes = std::array<float, kLanes>;

void add_lanes(Lanes& acc, const Lanes& v) {
  for (std::int64_t j = 0; j < kLanes; ++j)
    acc[static_cast<std::size_t>(j)] += v[static_cast<std::size_t>(j)];
}

Lanes load_lanes(const float* p) {
  Lanes v;
  std::copy(p, p + kLanes, v.begin());
  return v;
}

}  // namespace

float torch_sum(std::span<const float> values) {
  // vectorized_inner_sum -> row_sum (ilp 4) -> multi_row_sum (4 cascade levels).
  const auto n = static_cast<std::int64_t>(values.size());
  const float* data = values.data();
  const std::int64_t vectors = n / kLanes;
  const std::int64_t rows = vectors / 4;
  const std::int64_t level_power = std::max<std::int64_t>(4, ceil_log2(rows) / 4);
  const std::int64_t level_step = std::int64_t{1} << level_power;
  const std::int64_t level_mask = level_step - 1;
  std::array<std::array<Lanes, 4>, 4> acc{};  // [level][row]
  auto vec = [&](std::int64_t index) { return load_lanes(data + index * kLanes); };
  std::int64_t i = 0;
  while (i + level_step <= rows) {
    for (std::int64_t j = 0; j < level_step; ++j, ++i) {
      for (std::size_t k = 0; k < 4; ++k)
        add_lanes(acc[0][k], vec(4 * i + static_cast<std::int64_t>(k)));
    }
    for (std::size_t j = 1; j < 4; ++j) {
      for (std::size_t k = 0; k < 4; ++k) {
        add_lanes(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = Lanes{};
      }
      if ((i & (level_mask << (static_cast<std::int64_t>(j) * level_power))) != 0) break;
    }
  }
  for (; i < rows; ++i) {
    for (std::size_t k = 0; k < 4; ++k)
      add_lanes(acc[0][k], vec(4 * i + static_cast<std::int64_t>(k)));
  }
  for (std::size_t j = 1; j < 4; ++j) {
    for (std::size_t k = 0; k < 4; ++k)
      add_lanes(acc[0][k], acc[j][k]);
  }
  Lanes partial = acc[0][0];
  for (std::int64_t r = rows * 4; r < vectors; ++r)
    add_lanes(partial, vec(r));
  for (std::size_t k = 1; k < 4; ++k)
    add_lanes(partial, acc[0][k]);
  float total = 0.0f;
  for (std::int64_t r = vectors * kLanes; r < n; ++r)
    total += data[r];
  for (const float lane : partial)
    total += lane;
  return total;
}

// ------------------------------------------------------------------ histc

std::vector<float> torch_histc(const kernels::KernelTable& kt, const float* x, std::int64_t n,
                               std::int64_t bins, double lo, double hi, float data_min,
                               float data_max) {
  if (lo == hi) {  // histc_select_outer_bin_edges
    lo = data_min;
    hi = data_max;
  }
  if (lo == hi) {
    lo -= 1.0;
    hi += 1.0;
  }
  const auto left = static_cast<float>(lo);  // linspace end points, float32
  const auto right = static_cast<float>(hi);
  const auto skip = static_cast<std::int32_t>(bins);
  const kernels::HistcIndicesFn histc_indices = kt.histc_indices;
  BinCounter counter(bins);
  std::array<std::int32_t, kIndexChunk> idx;
  for (std::int64_t start = 0; start < n; start += kIndexChunk) {
    const std::int64_t m = std::min(kIndexChunk, n - start);
    histc_indices(x + start, m, left, right, static_cast<float>(bins), skip, idx.data());
    counter.add(idx.data(), m);
  }
  const std::vector<std::int64_t> counts = counter.counts();
  return {counts.begin(), counts.end()};
}

// ------------------------------------------------------------------ forward / combine

namespace {

// _adjust_min_max: the combined grid as a multiple of this histogram's upsampled bin width.
// `valid` is false where PyTorch's float32 arithmetic breaks down (a range beyond float32, or
// an upsampled width that underflows to 0: NaN or an exception in PyTorch).
struct Adjusted {
  float min;
  float max;
  std::int64_t downsample_rate;
  std::int64_t start_idx;
  bool valid;
};

Adjusted adjust_min_max(const TorchHistogram& h, float combined_min, float combined_max) {
  const float hist_bin_width =
      (h.max_val - h.min_val) / static_cast<float>(h.bins * h.upsample_rate);
  const float coarse_width = static_cast<float>(h.bins) * hist_bin_width;
  const float ratio = std::ceil((combined_max - combined_min) / coarse_width);
  const float start = std::nearbyint((h.min_val - combined_min) / hist_bin_width);
  if (!(hist_bin_width > 0.0f && ratio >= 1.0f && ratio <= 0x1p40f && start <= 0x1p40f)) {
    return {combined_min, combined_max, 0, 0, false};
  }
  const auto downsample_rate = static_cast<std::int64_t>(ratio);
  const float e =
      static_cast<float>(downsample_rate) * coarse_width - (combined_max - combined_min);
  const float max = combined_max + e;
  return {combined_min, max, downsample_rate, static_cast<std::int64_t>(start), std::isfinite(max)};
}

// _combine_histograms: `orig` plus `h.hist` upsampled by upsample_rate, placed at start_idx on
// the fine grid and summed (in double, sequentially as torch.cumsum) per downsample_rate cells.
// The zeros around the placed histogram add nothing, so they are never materialised.
void combine_into(std::vector<float>& orig, const TorchHistogram& h, const Adjusted& a) {
  const std::int64_t up = h.upsample_rate;
  const std::int64_t fine = h.bins * up;
  std::int64_t taken = 0;   // upsampled cells summed so far
  std::size_t source = 0;   // the bin of h.hist that cell `taken` repeats
  std::int64_t repeat = 0;  // taken % up
  double integral = 0.0;
  float shifted = 0.0f;  // previous integral, stored as float32 as torch does
  for (std::int64_t k = 0; k < h.bins; ++k) {
    const std::int64_t last_cell = (k + 1) * a.downsample_rate - 1;  // inclusive, on the fine grid
    const std::int64_t wanted = std::clamp<std::int64_t>(last_cell - a.start_idx + 1, 0, fine);
    for (; taken < wanted; ++taken) {
      integral += static_cast<double>(h.hist[source]);
      if (++repeat == up) {
        repeat = 0;
        ++source;
      }
    }
    const double interpolated = (integral - static_cast<double>(shifted)) / static_cast<double>(up);
    auto& slot = orig[static_cast<std::size_t>(k)];
    slot = slot + static_cast<float>(interpolated);
    shifted = static_cast<float>(integral);
  }
}

// Adds `mass` spread uniformly over [lo, hi] (a point when lo == hi) to `target`, a histogram
// of target.size() bins over [grid_min, grid_max].
void spread(std::vector<double>& target, double grid_min, double grid_max, double lo, double hi,
            double mass) {
  const auto bins = static_cast<std::int64_t>(target.size());
  const double width = (grid_max - grid_min) / static_cast<double>(bins);
  auto bin_of = [&](double x) {
    const double b = std::floor((x - grid_min) / width);
    return static_cast<std::int64_t>(std::clamp(b, 0.0, static_cast<double>(bins - 1)));
  };
  if (!(hi > lo) || !(width > 0.0)) {
    target[static_cast<std::size_t>(width > 0.0 ? bin_of(lo) : 0)] += mass;
    return;
  }
  const std::int64_t first = bin_of(lo);
  const std::int64_t last = bin_of(hi);
  for (std::int64_t b = first; b <= last; ++b) {
    const double cell_lo = b == first ? lo : grid_min + static_cast<double>(b) * width;
    const double cell_hi = b == last ? hi : grid_min + static_cast<double>(b + 1) * width;
    target[static_cast<std::size_t>(b)] += mass * std::max(0.0, cell_hi - cell_lo) / (hi - lo);
  }
}

// Adds every bin of `source` onto `target` (a grid over [grid_min, grid_max]).
void rebin_into(std::vector<float>& target, double grid_min, double grid_max,
                const TorchHistogram& source) {
  std::vector<double> moved(target.size(), 0.0);
  const double src_width =
      (static_cast<double>(source.max_val) - source.min_val) / static_cast<double>(source.bins);
  for (std::int64_t j = 0; j < source.bins; ++j) {
    const double mass = source.hist[static_cast<std::size_t>(j)];
    if (mass == 0.0) continue;
    const double lo = source.min_val + static_cast<double>(j) * src_width;
    spread(moved, grid_min, grid_max, lo, lo + src_width, mass);
  }
  for (std::size_t b = 0; b < target.size(); ++b)
    target[b] += static_cast<float>(moved[b]);
}

}  // namespace

void TorchHistogram::observe(const kernels::KernelTable& kt, const float* x, std::int64_t n,
                             float batch_min, float batch_max) {
  const bool uninitialized = empty();
  const bool same_values = min_val == max_val;
  if (uninitialized || same_values) {
    min_val = batch_min;
    max_val = batch_max;
    hist = torch_histc(kt, x, n, bins, std::trunc(static_cast<double>(batch_min)),
                       std::trunc(static_cast<double>(batch_max)), batch_min, batch_max);
    return;
  }
  Adjusted a = adjust_min_max(*this, std::min(batch_min, min_val), std::max(batch_max, max_val));
  if (!a.valid) a.max = std::max(batch_max, max_val);  // outside PyTorch's domain: re-bin linearly
  std::vector<float> combined =
      torch_histc(kt, x, n, bins, std::trunc(static_cast<double>(a.min)),
                  std::trunc(static_cast<double>(a.max)), batch_min, batch_max);
  if (!a.valid) {
    rebin_into(combined, a.min, a.max, *this);
  } else if (a.min == min_val && a.max == max_val) {
    for (std::size_t b = 0; b < combined.size(); ++b)
      combined[b] += hist[b];
  } else {
    combine_into(combined, *this, a);
  }
  hist = std::move(combined);
  min_val = a.min;
  max_val = a.max;
}

void TorchHistogram::merge(const TorchHistogram& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  if (min_val == max_val && other.min_val != other.max_val) {  // rebase on other's real grid
    TorchHistogram point = *this;
    *this = other;
    merge(point);
    return;
  }
  const float lo = std::min(min_val, other.min_val);
  const float hi = std::max(max_val, other.max_val);
  std::vector<float> combined(static_cast<std::size_t>(bins), 0.0f);
  if (min_val == max_val) {  // both single values: a fresh grid over both
    std::vector<double> masses(combined.size(), 0.0);
    spread(masses, lo, hi, min_val, min_val, torch_sum(hist));
    spread(masses, lo, hi, other.min_val, other.min_val, torch_sum(other.hist));
    for (std::size_t b = 0; b < combined.size(); ++b)
      combined[b] = static_cast<float>(masses[b]);
    hist = std::move(combined);
    min_val = lo;
    max_val = hi;
    return;
  }
  const Adjusted a = adjust_min_max(*this, lo, hi);
  if (!a.valid) {
    rebin_into(combined, lo, hi, *this);
  } else if (a.min == min_val && a.max == max_val) {
    combined = hist;
  } else {
    combine_into(combined, *this, a);
  }
  min_val = a.min;
  max_val = a.valid ? a.max : hi;
  TorchHistogram source = other;
  if (source.min_val == source.max_val) {  // a single value: its whole mass sits there
    source.hist.assign(1, torch_sum(other.hist));
    source.bins = 1;
  }
  rebin_into(combined, min_val, max_val, source);
  hist = std::move(combined);
}

// ------------------------------------------------------------------ search

namespace {

// _compute_quantization_error: the L2 norm of quantizing bins [start, end] onto dst_nbins levels,
// in torch's mix of double (Python floats) and float32 (tensors).
double quantization_error(kernels::L2NormsFn l2_norms, std::span<const float> hist, float min_val,
                          float max_val, std::int64_t start, std::int64_t end, double dst_nbins,
                          std::vector<float>& norms) {
  const auto bins = static_cast<std::int64_t>(hist.size());
  const double bin_width =
      (static_cast<double>(max_val) - static_cast<double>(min_val)) / static_cast<double>(bins);
  const double dst_bin_width = bin_width * static_cast<double>(end - start + 1) / dst_nbins;
  if (dst_bin_width == 0.0) return 0.0;
  const auto bw = static_cast<float>(bin_width);
  const auto dbw = static_cast<float>(dst_bin_width);
  const auto half = static_cast<float>(dst_bin_width / 2);
  const auto neg_half = static_cast<float>(-dst_bin_width / 2);
  const auto last_dst = static_cast<float>(dst_nbins - 1);
  // |src_begin|, |src_end| <= (bins + 1) * bw; with quotients that large only libm's fmod is exact.
  if (static_cast<double>(bins + 1) * bw < 0x1p27 * static_cast<double>(dbw)) {
    l2_norms(hist.data(), bins, start, bw, dbw, half, neg_half, last_dst, norms.data());
  } else {
    kernels::l2_norms_libm_fmod(hist.data(), bins, start, bw, dbw, half, neg_half, last_dst,
                                norms.data());
  }
  return static_cast<double>(torch_sum(norms));
}

}  // namespace

std::pair<float, float> l2_param_search(const kernels::KernelTable& kt, std::span<const float> hist,
                                        float min_val, float max_val, double dst_nbins) {
  const auto bins = static_cast<std::int64_t>(hist.size());
  const float bin_width = (max_val - min_val) / static_cast<float>(bins);
  if (!std::isfinite(bin_width)) return {min_val, max_val};  // a range beyond float32: NaN in torch
  const auto total = static_cast<double>(torch_sum(hist));
  std::vector<float> cumulative(hist.size());  // torch.cumsum: double accumulator, float32 out
  double running = 0.0;
  for (std::size_t i = 0; i < hist.size(); ++i) {
    running += static_cast<double>(hist[i]);
    cumulative[i] = static_cast<float>(running);
  }
  std::vector<float> norms(hist.size());
  constexpr double stepsize = 1e-5;
  double alpha = 0.0;
  double beta = 1.0;
  std::int64_t start_bin = 0;
  std::int64_t end_bin = bins - 1;
  double norm_min = std::numeric_limits<double>::infinity();
  while (alpha < beta) {
    const double next_alpha = alpha + stepsize;
    const double next_beta = beta - stepsize;
    // The tensor comparisons round the Python-float bounds to float32.
    const auto lower = static_cast<float>(next_alpha * total);
    const auto upper = static_cast<float>(next_beta * total);
    std::int64_t l = start_bin;
    std::int64_t r = end_bin;
    while (l < end_bin && cumulative[static_cast<std::size_t>(l)] < lower)
      ++l;
    while (r > start_bin && cumulative[static_cast<std::size_t>(r)] > upper)
      --r;
    std::int64_t next_start_bin = start_bin;
    std::int64_t next_end_bin = end_bin;
    if ((l - start_bin) > (end_bin - r)) {
      next_start_bin = l;
      alpha = next_alpha;
    } else {
      next_end_bin = r;
      beta = next_beta;
    }
    if (next_start_bin == start_bin && next_end_bin == end_bin) continue;
    const double norm = quantization_error(kt.l2_norms, hist, min_val, max_val, next_start_bin,
                                           next_end_bin, dst_nbins, norms);
    if (norm > norm_min) break;
    norm_min = norm;
    start_bin = next_start_bin;
    end_bin = next_end_bin;
  }
  const float new_min = min_val + bin_width * static_cast<float>(start_bin);
  const float new_max = min_val + bin_width * static_cast<float>(end_bin + 1);
  return {new_min, new_max};
}

}  // namespace lucid::quantization::detail
