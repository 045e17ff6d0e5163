// PackedWeightsInt8: packing int8 weights into 16-channel panels, quantizing float weights, round
// trips.
#include <cmath>
#include <string>

#include "core/row_quantization.hpp"
#include "gemm/packed_layout.hpp"
#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/stage_checks.hpp"

namespace lucid::quantization {
namespace {

using Layout = PackedWeightsInt8::Layout;

// Throws unless n, k, the stride and the pointer describe a valid weight.
void check_shape(const char* what, const void* w, std::int64_t n, std::int64_t k,
                 std::int64_t row_stride) {
  const std::string name(what);
  if (w == nullptr) throw Error(name + ": w is null (expected N · K weights)");
  if (n < 1) throw Error(name + ": n = " + std::to_string(n) + " (expected n >= 1)");
  if (k < 1) throw Error(name + ": k = " + std::to_string(k) + " (expected k >= 1)");
  if (k > max_gemm_depth) {
    throw Error(name + ": k = " + std::to_string(k) + " exceeds max_gemm_depth = " +
                std::to_string(max_gemm_depth) + " (the int32 accumulator could overflow)");
  }
  if (row_stride < k) {
    throw Error(name + ": row_stride = " + std::to_string(row_stride) +
                " (expected >= k = " + std::to_string(k) + ")");
  }
}

// Packs validated codes (row n at w + n · row_stride) with validated scales.
std::shared_ptr<const Layout> build(const std::int8_t* w, std::int64_t n, std::int64_t k,
                                    std::int64_t row_stride, std::vector<float> scales,
                                    bool per_channel, QDtype qdtype) {
  auto layout = std::make_shared<Layout>();
  layout->qdtype = qdtype;
  layout->n = n;
  layout->k = k;
  layout->panels = (n + igemm::panel_width - 1) / igemm::panel_width;
  layout->per_channel = per_channel;
  layout->scales = std::move(scales);
  const std::int64_t groups = layout->groups_per_panel();
  layout->column_sums.assign(static_cast<std::size_t>(layout->panels * igemm::panel_width), 0);
  layout->storage =
      ByteBuffer::zeroed(static_cast<std::size_t>(layout->panels * groups) * sizeof(Layout::Group));
  for (std::int64_t row = 0; row < n; ++row) {
    const std::int64_t p = row / igemm::panel_width;
    const std::int64_t c = row % igemm::panel_width;
    std::int32_t sum = 0;
    for (std::int64_t col = 0; col < k; ++col) {
      const std::int8_t code = w[row * row_stride + col];
      sum += code;
      auto& group = layout->groups()[p * groups + col / 4];
      group.bytes[c * 4 + col % 4] = code;
    }
    layout->column_sums[static_cast<std::size_t>(row)] = sum;
  }
  return layout;
}

}  // namespace

PackedWeightsInt8 PackedWeightsInt8::pack(const std::int8_t* w, std::int64_t n, std::int64_t k,
                                          std::int64_t row_stride, std::span<const float> scales) {
  check_shape("PackedWeightsInt8::pack", w, n, k, row_stride);
  if (scales.size() != 1 && static_cast<std::int64_t>(scales.size()) != n) {
    throw Error("PackedWeightsInt8::pack: " + std::to_string(scales.size()) +
                " scales (expected 1 or n = " + std::to_string(n) + ")");
  }
  for (std::size_t i = 0; i < scales.size(); ++i)
    check_scale("PackedWeightsInt8::pack", "scales[" + std::to_string(i) + "]", scales[i]);
  const bool per_channel = scales.size() != 1;
  std::vector<float> all(static_cast<std::size_t>(n), scales[0]);
  if (per_channel) all.assign(scales.begin(), scales.end());
  PackedWeightsInt8 packed;
  packed.layout_ = build(w, n, k, row_stride, std::move(all), per_channel, qint8);
  return packed;
}

PackedWeightsInt8 PackedWeightsInt8::from_quantized(const QuantizedTensor& weight) {
  const std::string what = "PackedWeightsInt8::from_quantized";
  const QParams& qp = weight.qparams();
  if (weight.shape().size() != 2) {
    throw Error(what + ": weight shape " + to_string(weight.shape()) + " (expected [N, K])");
  }
  if (qp.qdtype.storage() != Storage::int8) {
    throw Error(what + ": qdtype = " + qp.qdtype.name() + " (expected qint8 codes)");
  }
  if (qp.is_per_group()) {
    throw Error(what + ": group_size = " + std::to_string(qp.group_size) +
                " (expected per-tensor or per-channel parameters)");
  }
  const bool per_channel = is_per_channel(qp.qscheme);
  if (per_channel && qp.ch_axis != 0) {
    throw Error(what + ": ch_axis = " + std::to_string(qp.ch_axis) +
                " (expected 0, the output channels)");
  }
  for (std::size_t i = 0; i < qp.zero_point.size(); ++i) {
    if (qp.zero_point[i] != 0) {
      throw Error(what + ": zero_point[" + std::to_string(i) +
                  "] = " + std::to_string(qp.zero_point[i]) + " (expected 0: symmetric weights)");
    }
  }
  const std::int64_t n = weight.shape()[0];
  const std::int64_t k = weight.shape()[1];
  const auto* codes = reinterpret_cast<const std::int8_t*>(weight.storage().data());
  check_shape(what.c_str(), codes, n, k, k);
  for (std::size_t i = 0; i < qp.scale.size(); ++i)
    check_scale(what, "scales[" + std::to_string(i) + "]", qp.scale[i]);
  std::vector<float> scales(static_cast<std::size_t>(n), qp.scale[0]);
  if (per_channel) scales.assign(qp.scale.begin(), qp.scale.end());
  PackedWeightsInt8 packed;
  packed.layout_ = build(codes, n, k, k, std::move(scales), per_channel, qp.qdtype);
  return packed;
}

PackedWeightsInt8 PackedWeightsInt8::quantize(const float* w, std::int64_t n, std::int64_t k,
                                              std::int64_t row_stride, bool per_channel,
                                              QDtype qdtype) {
  const std::string what = "PackedWeightsInt8::quantize";
  check_shape(what.c_str(), w, n, k, row_stride);
  if (qdtype.bits() != 8 || !qdtype.is_signed()) {
    throw Error(what + ": qdtype = " + qdtype.name() + " (expected a signed 8-bit grid: qint8)");
  }
  std::vector<std::int8_t> codes(static_cast<std::size_t>(n * k));
  std::vector<float> scales;
  std::vector<std::int32_t> zero_points;  // 0: symmetric on a signed grid
  const detail::RowQuantization rows{.x = w,
                                     .rows = n,
                                     .k = k,
                                     .x_stride = row_stride,
                                     .scheme = QScheme::PER_TENSOR_SYMMETRIC,
                                     .qdtype = qdtype,
                                     .per_row = per_channel,
                                     .codes = reinterpret_cast<std::uint8_t*>(codes.data()),
                                     .code_stride = k};
  const std::string prefix = what + ": w";
  detail::quantize_rows(kernels::active(), rows, {prefix, "expected finite weights"}, false, scales,
                        zero_points);
  PackedWeightsInt8 packed;
  packed.layout_ = build(codes.data(), n, k, k, std::move(scales), per_channel, qdtype);
  return packed;
}

std::int64_t PackedWeightsInt8::rows() const {
  return layout().n;
}
std::int64_t PackedWeightsInt8::columns() const {
  return layout().k;
}
bool PackedWeightsInt8::per_channel() const {
  return layout().per_channel;
}
std::span<const float> PackedWeightsInt8::scales() const {
  return layout().scales;
}

std::span<const std::int32_t> PackedWeightsInt8::column_sums() const {
  return {layout().column_sums.data(), static_cast<std::size_t>(layout().n)};
}

std::size_t PackedWeightsInt8::packed_bytes() const {
  return layout().storage.size();
}

std::vector<std::int8_t> PackedWeightsInt8::unpack() const {
  const Layout& l = layout();
  std::vector<std::int8_t> w(static_cast<std::size_t>(l.n * l.k));
  for (std::int64_t row = 0; row < l.n; ++row) {
    const std::int8_t* panel = l.panel(row / igemm::panel_width);
    const std::int64_t c = row % igemm::panel_width;
    for (std::int64_t col = 0; col < l.k; ++col)
      w[static_cast<std::size_t>(row * l.k + col)] = panel[col / 4 * 64 + c * 4 + col % 4];
  }
  return w;
}

QuantizedTensor PackedWeightsInt8::to_quantized() const {
  const Layout& l = layout();
  const std::vector<std::int8_t> codes = unpack();
  std::vector<std::uint8_t> storage(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i)
    storage[i] = static_cast<std::uint8_t>(codes[i]);
  QParams qp = l.per_channel
                   ? QParams::per_channel(l.scales, std::vector<std::int32_t>(l.scales.size(), 0),
                                          0, l.qdtype, QScheme::PER_CHANNEL_SYMMETRIC)
                   : QParams::per_tensor(l.scales[0], 0, l.qdtype, QScheme::PER_TENSOR_SYMMETRIC);
  return QuantizedTensor({l.n, l.k}, std::move(qp), std::move(storage));
}

const PackedWeightsInt8::Layout& PackedWeightsInt8::layout() const {
  if (!layout_) {
    throw Error(
        "PackedWeightsInt8: the weights are empty (expected pack(), quantize() or "
        "from_quantized())");
  }
  return *layout_;
}

}  // namespace lucid::quantization
