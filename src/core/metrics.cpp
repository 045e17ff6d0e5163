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
  const auto channels_layout =
      detail::ParamLayout::make(original.shape, QScheme::PER_CHANNEL_AFFINE,
                                normalize_axis(axis, original.shape.size(), "axis"), 0);
  check_same_shape(original.shape, quantized.shape(), "error_metrics");
  const std::vector<float> x = to_float32(original, "error_metrics: original");
  const Tensor x_hat = dequantize(quantized);
  const float* y = x_hat.data_as<float>();
  const QParams& qp = quantized.qparams();
  // Each channel's pairs gathered in element order, then summed as error_metrics sums a tensor.
  const auto channels = static_cast<std::size_t>(channels_layout.dim);
  std::vector<std::vector<float>> xs(channels), ys(channels);
  std::vector<detail::MetricSums> sums(channels);
  detail::ParamLayout::make(original.shape, qp.qscheme, qp.ch_axis, qp.group_size)
      .for_each([&](std::int64_t flat, std::int64_t param) {
        const auto f = static_cast<std::size_t>(flat);
        const auto p = static_cast<std::size_t>(param);
        const auto c =
            static_cast<std::size_t>((flat / channels_layout.inner) % channels_layout.dim);
        xs[c].push_back(x[f]);
        ys[c].push_back(y[f]);
        if (std::isfinite(x[f]) &&
            detail::saturates(x[f], qp.scale[p], qp.zero_point[p], qp.qdtype))
          ++sums[c].saturated;
      });
  const kernels::KernelTable& kt = kernels::active();
  std::vector<ErrorMetrics> out;
  out.reserve(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    detail::add_pairs(kt, xs[c].data(), ys[c].data(), static_cast<std::int64_t>(xs[c].size()),
                      sums[c]);
    out.push_back(sums[c].finish());
  }
  return out;
}

}  // namespace lucid::quantization
