// Error metrics: MSE, RMSE, max |error|, SQNR, cosine similarity, saturation (the streaming
// engine of core/streaming_metrics.cpp computes every figure).
#include "lucid/quantization/metrics.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "core/kernel_args.hpp"
#include "core/streaming_metrics.hpp"
#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"
#include "support/param_layout.hpp"

namespace lucid::quantization {
namespace {

void check_same_shape(const Shape& a, const Shape& b, const char* what) {
  if (a != b) {
    throw Error(std::string(what) + ": original shape " + to_string(a) +
                " differs from the reconstruction's " + to_string(b) + " (expected equal shapes)");
  }
}

// `view` as the engine reads it: itself when float32 / float16 / bfloat16, else narrowed to
// float32 into `storage` (float64; other types throw naming `what`).
TensorView engine_input(const TensorView& view, const char* what, std::vector<float>& storage) {
  if (detail::is_kernel_input(view.type)) return view;
  storage = to_float32(view, what);
  return TensorView(storage.data(), ScalarType::float32, view.shape);
}

// The metrics of `slots` sets of elements, slot_of(flat index, parameter index) naming each
// element's: every slot's pairs are gathered in element order, then summed as error_metrics
// sums a tensor (saturation judged with the element's own parameters).
template <class SlotOf>
std::vector<ErrorMetrics> metrics_per_slot(const TensorView& original,
                                           const QuantizedTensor& quantized, std::int64_t slots,
                                           SlotOf slot_of) {
  check_same_shape(original.shape, quantized.shape(), "error_metrics");
  const std::vector<float> x = to_float32(original, "error_metrics: original");
  const Tensor x_hat = dequantize(quantized);
  const float* y = x_hat.data_as<float>();
  const QParams& qp = quantized.qparams();
  const auto count = static_cast<std::size_t>(slots);
  std::vector<std::vector<float>> xs(count), ys(count);
  std::vector<detail::MetricSums> sums(count);
  detail::ParamLayout::make(original.shape, qp.qscheme, qp.ch_axis, qp.group_size)
      .for_each([&](std::int64_t flat, std::int64_t param) {
        const auto f = static_cast<std::size_t>(flat);
        const auto p = static_cast<std::size_t>(param);
        const auto c = static_cast<std::size_t>(slot_of(flat, param));
        xs[c].push_back(x[f]);
        ys[c].push_back(y[f]);
        if (std::isfinite(x[f]) &&
            detail::saturates(x[f], qp.scale[p], qp.zero_point[p], qp.qdtype))
          ++sums[c].saturated;
      });
  const kernels::KernelTable& kt = kernels::active();
  std::vector<ErrorMetrics> out;
  out.reserve(count);
  for (std::size_t c = 0; c < count; ++c) {
    detail::add_pairs(kt, xs[c].data(), ys[c].data(), static_cast<std::int64_t>(xs[c].size()),
                      sums[c]);
    out.push_back(sums[c].finish());
  }
  return out;
}

}  // namespace

double quantization_error(const TensorView& original, const TensorView& dequantized) {
  return error_metrics(original, dequantized).mse;
}

ErrorMetrics error_metrics(const TensorView& original, const TensorView& reconstructed) {
  check_same_shape(original.shape, reconstructed.shape, "error_metrics");
  std::vector<float> x_storage, y_storage;
  return detail::streaming_error_metrics(
      engine_input(original, "error_metrics: original", x_storage),
      engine_input(reconstructed, "error_metrics: reconstructed", y_storage));
}

ErrorMetrics error_metrics(const TensorView& original, const QuantizedTensor& quantized) {
  check_same_shape(original.shape, quantized.shape(), "error_metrics");
  std::vector<float> storage;
  return detail::streaming_error_metrics(engine_input(original, "error_metrics: original", storage),
                                         quantized);
}

std::vector<ErrorMetrics> error_metrics_per_channel(const TensorView& original,
                                                    const QuantizedTensor& quantized, int axis) {
  const auto channels =
      detail::ParamLayout::make(original.shape, QScheme::PER_CHANNEL_AFFINE,
                                normalize_axis(axis, original.shape.size(), "axis"), 0);
  return metrics_per_slot(original, quantized, channels.dim, [&](std::int64_t flat, std::int64_t) {
    return (flat / channels.inner) % channels.dim;
  });
}

std::vector<ErrorMetrics> error_metrics_per_group(const TensorView& original,
                                                  const QuantizedTensor& quantized) {
  const QParams& qp = quantized.qparams();
  const auto params =
      detail::ParamLayout::make(quantized.shape(), qp.qscheme, qp.ch_axis, qp.group_size);
  return metrics_per_slot(original, quantized, params.slots(),
                          [](std::int64_t, std::int64_t param) { return param; });
}

}  // namespace lucid::quantization
