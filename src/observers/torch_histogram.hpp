// Internal: torch.ao.quantization 1.13 HistogramObserver arithmetic, replicated step for step.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "kernels/kernel_table.hpp"

namespace lucid::quantization::detail {

/// at::sum of a contiguous float32 array as PyTorch 1.13 computes it on an
/// AVX2 CPU (cascade_sum: 8-lane vectors, 4-way ILP, 4 cascade levels), so
/// that the L2 norms of the search compare exactly as PyTorch's do.
float torch_sum(std::span<const float> values);

/// The state of torch's HistogramObserver: float32 counts over [min_val, max_val].
struct TorchHistogram {
  std::int64_t bins = 2048;
  std::int64_t upsample_rate = 128;
  float min_val = INFINITY;
  float max_val = -INFINITY;
  std::vector<float> hist;  // `bins` counts once observed, empty before

  bool empty() const { return hist.empty(); }

  /// HistogramObserver.forward for a batch whose finite values span
  /// [batch_min, batch_max] (at least one finite value); non-finite values
  /// are skipped. First batch (or a histogram of one value): histc over
  /// [trunc(min), trunc(max)]; later batches: _adjust_min_max, histc over the
  /// truncated combined range, _combine_histograms of the old counts. Bins with `kt`.
  void observe(const kernels::KernelTable& kt, const float* x, std::int64_t n, float batch_min,
               float batch_max);

  /// Folds `other` (same bins) in: the combined grid is the one observe()
  /// would pick for other's range, this histogram is re-binned as PyTorch does,
  /// other's by mass-conserving linear re-binning.
  void merge(const TorchHistogram& other);
};

/// torch.histc(x, bins, min=lo, max=hi) as float32 counts, with torch's rule
/// that lo == hi means the data's own [data_min, data_max] (then +-1 if equal).
std::vector<float> torch_histc(const kernels::KernelTable& kt, const float* x, std::int64_t n,
                               std::int64_t bins, double lo, double hi, float data_min,
                               float data_max);

/// _non_linear_param_search: the [new_min, new_max] (float32, as PyTorch) that
/// the greedy L2-norm search picks on `hist` over [min_val, max_val] for
/// `dst_nbins` quantization levels (2^bits of the dtype), with `kt`'s L2-norm kernel.
std::pair<float, float> l2_param_search(const kernels::KernelTable& kt, std::span<const float> hist,
                                        float min_val, float max_val, double dst_nbins);

}  // namespace lucid::quantization::detail
