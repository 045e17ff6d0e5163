// Internal: observer batches as float32, their finite min / max, and the channel layout around
// ch_axis.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/kernel_table.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization::detail {

/// The elements of a batch as float32, row-major: borrowed when the batch is
/// already float32, converted (float16, bfloat16, float64) otherwise.
class FloatBatch {
 public:
  /// Throws Error naming `who` when x is not floating point.
  FloatBatch(const TensorView& x, std::string_view who);
  FloatBatch(const FloatBatch&) = delete;
  FloatBatch& operator=(const FloatBatch&) = delete;

  const float* data() const { return data_; }
  std::int64_t size() const { return size_; }
  const Shape& shape() const { return shape_; }

 private:
  std::vector<float> owned_;
  const float* data_ = nullptr;
  std::int64_t size_ = 0;
  Shape shape_;
};

/// Min / max of the finite values of a run, and how many were finite / not.
struct FiniteStats {
  float min = INFINITY;
  float max = -INFINITY;
  std::int64_t finite = 0;
  std::int64_t nonfinite = 0;
};

/// FiniteStats of v[0, n), with the min / max kernel of `kt` (the caller's kernels::active()).
FiniteStats finite_stats(const kernels::KernelTable& kt, const float* v, std::int64_t n);

/// A tensor seen as [outer, channels, inner] around its channel axis.
struct ChannelLayout {
  std::int64_t outer = 1;
  std::int64_t channels = 1;
  std::int64_t inner = 1;

  /// Throws Error naming `who` when ch_axis is outside the rank of `shape`
  /// (a scalar has no channel axis).
  static ChannelLayout make(const Shape& shape, int ch_axis, std::string_view who);
};

/// Min / max of the finite values per channel (+inf / -inf for a channel with
/// none), and the non-finite count of the whole batch.
struct ChannelStats {
  std::vector<float> min;
  std::vector<float> max;
  std::int64_t nonfinite = 0;
};
ChannelStats channel_stats(const FloatBatch& x, const ChannelLayout& layout);

/// The values of `x` regrouped channel by channel: [channels, outer * inner].
std::vector<float> channel_major(const FloatBatch& x, const ChannelLayout& layout);

/// Throws Error naming `who` (e.g. "PerChannelMinMaxObserver.observe") unless
/// `channels` equals `expected` (0 = not yet fixed).
void check_channel_count(std::string_view who, std::int64_t channels, std::size_t expected);

}  // namespace lucid::quantization::detail
