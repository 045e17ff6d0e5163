// PackedConvWeights: OIHW int8 codes reordered per group for the GEMM, or as depthwise taps.
#include <string>

#include "conv/conv_layout.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/stage_checks.hpp"

namespace lucid::quantization {
namespace {

constexpr const char* what = "PackedConvWeights";

void check_size(const char* name, std::int64_t value) {
  if (value < 1) {
    throw Error(std::string(what) + ": " + name + " = " + std::to_string(value) +
                " (expected >= 1)");
  }
}

void check_shape(std::int64_t out_channels, std::int64_t in_per_group, std::int64_t kernel_h,
                 std::int64_t kernel_w, std::int64_t groups) {
  check_size("out_channels", out_channels);
  check_size("in_channels_per_group", in_per_group);
  check_size("kernel_h", kernel_h);
  check_size("kernel_w", kernel_w);
  check_size("groups", groups);
  if (out_channels % groups != 0) {
    throw Error(std::string(what) + ": out_channels = " + std::to_string(out_channels) +
                " is not a multiple of groups = " + std::to_string(groups));
  }
  const std::int64_t depth = in_per_group * kernel_h * kernel_w;
  if (depth > max_gemm_depth) {
    throw Error(std::string(what) + ": in_channels_per_group · kernel_h · kernel_w = " +
                std::to_string(depth) + " (expected <= " + std::to_string(max_gemm_depth) + ")");
  }
}

}  // namespace

PackedConvWeights PackedConvWeights::pack(const std::int8_t* w, std::int64_t out_channels,
                                          std::int64_t in_channels_per_group, std::int64_t kernel_h,
                                          std::int64_t kernel_w, std::int64_t groups,
                                          std::span<const float> scales) {
  check_shape(out_channels, in_channels_per_group, kernel_h, kernel_w, groups);
  if (w == nullptr) throw Error(std::string(what) + ": w is null");
  if (scales.size() != 1 && static_cast<std::int64_t>(scales.size()) != out_channels) {
    throw Error(std::string(what) + ": " + std::to_string(scales.size()) +
                " scales (expected 1 or out_channels = " + std::to_string(out_channels) + ")");
  }
  auto layout = std::make_shared<Layout>();
  Layout& l = *layout;
  l.out_channels = out_channels;
  l.in_per_group = in_channels_per_group;
  l.kernel_h = kernel_h;
  l.kernel_w = kernel_w;
  l.groups = groups;
  l.per_channel = scales.size() != 1;
  const std::int64_t taps = kernel_h * kernel_w;
  const std::int64_t depth = l.depth();
  l.oihw.assign(w, w + out_channels * depth);
  if (l.depthwise()) {
    // (The GEMM paths have pack() check their scales.)
    for (std::size_t s = 0; s < scales.size(); ++s) {
      const std::string name = "scales[" + std::to_string(s) + "]";
      check_scale(what, name, scales[s]);
    }
    l.depthwise_taps.resize(static_cast<std::size_t>(taps * out_channels));
    for (std::int64_t o = 0; o < out_channels; ++o)
      for (std::int64_t t = 0; t < taps; ++t)
        l.depthwise_taps[static_cast<std::size_t>(t * out_channels + o)] = w[o * taps + t];
  } else {
    const std::int64_t per_group = l.out_per_group();
    std::vector<std::int8_t> rows(static_cast<std::size_t>(per_group * depth));
    for (std::int64_t g = 0; g < groups; ++g) {
      // Row o, column (i · KW + j) · C_in/g + c  <-  OIHW element (o, c, i, j).
      for (std::int64_t o = 0; o < per_group; ++o)
        for (std::int64_t c = 0; c < in_channels_per_group; ++c)
          for (std::int64_t t = 0; t < taps; ++t)
            rows[static_cast<std::size_t>(o * depth + t * in_channels_per_group + c)] =
                w[((g * per_group + o) * in_channels_per_group + c) * taps + t];
      const auto group_scales = scales.size() == 1
                                    ? scales
                                    : scales.subspan(static_cast<std::size_t>(g * per_group),
                                                     static_cast<std::size_t>(per_group));
      l.group_weights.push_back(
          PackedWeightsInt8::pack(rows.data(), per_group, depth, depth, group_scales));
    }
  }
  l.scales.resize(static_cast<std::size_t>(out_channels));
  for (std::int64_t o = 0; o < out_channels; ++o)
    l.scales[static_cast<std::size_t>(o)] = scales[scales.size() == 1 ? 0 : o];
  PackedConvWeights packed;
  packed.layout_ = std::move(layout);
  return packed;
}

PackedConvWeights PackedConvWeights::quantize(const float* w, std::int64_t out_channels,
                                              std::int64_t in_channels_per_group,
                                              std::int64_t kernel_h, std::int64_t kernel_w,
                                              std::int64_t groups, bool per_channel,
                                              QDtype qdtype) {
  check_shape(out_channels, in_channels_per_group, kernel_h, kernel_w, groups);
  if (w == nullptr) throw Error(std::string(what) + ": w is null");
  // Each OIHW output channel is one contiguous row, so the GEMM's quantizer gives its codes.
  const std::int64_t depth = in_channels_per_group * kernel_h * kernel_w;
  const PackedWeightsInt8 rows =
      PackedWeightsInt8::quantize(w, out_channels, depth, depth, per_channel, qdtype);
  const std::vector<std::int8_t> codes = rows.unpack();
  const std::span<const float> scales = per_channel ? rows.scales() : rows.scales().subspan(0, 1);
  PackedConvWeights packed =
      pack(codes.data(), out_channels, in_channels_per_group, kernel_h, kernel_w, groups, scales);
  std::const_pointer_cast<Layout>(packed.layout_)->qdtype = qdtype;
  return packed;
}

const PackedConvWeights::Layout& PackedConvWeights::layout() const {
  if (!layout_) throw Error(std::string(what) + ": empty weights (use pack() or quantize())");
  return *layout_;
}

std::int64_t PackedConvWeights::out_channels() const {
  return layout().out_channels;
}
std::int64_t PackedConvWeights::in_channels() const {
  return layout().in_per_group * layout().groups;
}
std::int64_t PackedConvWeights::kernel_h() const {
  return layout().kernel_h;
}
std::int64_t PackedConvWeights::kernel_w() const {
  return layout().kernel_w;
}
std::int64_t PackedConvWeights::groups() const {
  return layout().groups;
}
bool PackedConvWeights::per_channel() const {
  return layout().per_channel;
}
bool PackedConvWeights::depthwise() const {
  return layout().depthwise();
}
std::span<const float> PackedConvWeights::scales() const {
  return layout().scales;
}
std::vector<std::int8_t> PackedConvWeights::unpack() const {
  return layout().oihw;
}

}  // namespace lucid::quantization
