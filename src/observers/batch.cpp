// Observer batches as float32, their finite min / max (dispatched kernels), and the channel layout.
#include "observers/batch.hpp"

#include <algorithm>
#include <string>

#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization::detail {

FloatBatch::FloatBatch(const TensorView& x, std::string_view who) : shape_(x.shape) {
  size_ = x.numel();
  if (x.type == ScalarType::float32) {
    data_ = x.data_as<float>();
    return;
  }
  if (!is_floating_point(x.type)) {
    throw Error(std::string(who) + ".observe: x has dtype " + to_string(x.type) +
                " (expected float32, float16, bfloat16 or float64)");
  }
  owned_ = to_float32(x, "observe: x");
  data_ = owned_.data();
}

FiniteStats finite_stats(const kernels::KernelTable& kt, const float* v, std::int64_t n) {
  FiniteStats stats;
  stats.nonfinite =
      kt.minmax[static_cast<int>(kernels::FloatType::f32)](v, n, &stats.min, &stats.max);
  stats.finite = n - stats.nonfinite;
  return stats;
}

ChannelLayout ChannelLayout::make(const Shape& shape, int ch_axis, std::string_view who) {
  if (shape.empty()) {
    throw Error(std::string(who) +
                ".observe: x is a scalar (expected a tensor with a channel axis " +
                std::to_string(ch_axis) + ")");
  }
  const auto axis = static_cast<std::size_t>(
      normalize_axis(ch_axis, shape.size(), (std::string(who) + ": ch_axis").c_str()));
  ChannelLayout layout;
  for (std::size_t k = 0; k < axis; ++k)
    layout.outer *= shape[k];
  layout.channels = shape[axis];
  for (std::size_t k = axis + 1; k < shape.size(); ++k)
    layout.inner *= shape[k];
  return layout;
}

ChannelStats channel_stats(const FloatBatch& x, const ChannelLayout& layout) {
  const kernels::KernelTable& k = kernels::active();
  const auto f32 = static_cast<int>(kernels::FloatType::f32);
  const auto channels = static_cast<std::size_t>(layout.channels);
  ChannelStats stats{std::vector<float>(channels, INFINITY),
                     std::vector<float>(channels, -INFINITY), 0};
  const float* row = x.data();
  for (std::int64_t o = 0; o < layout.outer; ++o) {
    if (layout.inner == 1) {  // channels innermost: fold whole rows
      stats.nonfinite +=
          k.minmax_vec[f32](row, layout.channels, stats.min.data(), stats.max.data());
      row += layout.channels;
      continue;
    }
    for (std::size_t c = 0; c < channels; ++c, row += layout.inner) {
      stats.nonfinite += k.minmax[f32](row, layout.inner, &stats.min[c], &stats.max[c]);
    }
  }
  return stats;
}

std::vector<float> channel_major(const FloatBatch& x, const ChannelLayout& layout) {
  std::vector<float> out(static_cast<std::size_t>(x.size()));
  const std::int64_t per_channel = layout.outer * layout.inner;
  const float* src = x.data();
  for (std::int64_t o = 0; o < layout.outer; ++o) {
    for (std::int64_t c = 0; c < layout.channels; ++c, src += layout.inner) {
      std::copy(src, src + layout.inner,
                out.begin() + static_cast<std::ptrdiff_t>(c * per_channel + o * layout.inner));
    }
  }
  return out;
}

void check_channel_count(std::string_view who, std::int64_t channels, std::size_t expected) {
  if (expected != 0 && static_cast<std::size_t>(channels) != expected) {
    throw Error(std::string(who) + ": " + std::to_string(channels) +
                " channels along ch_axis (expected " + std::to_string(expected) +
                ", the count of the first batch)");
  }
}

}  // namespace lucid::quantization::detail
