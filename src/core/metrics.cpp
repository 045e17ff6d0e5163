// Error metrics: MSE, RMSE, max |error|, SQNR, cosine similarity, saturation.
#include "lucid/quantization/metrics.hpp"

#include <cmath>
#include <limits>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"
#include "support/param_layout.hpp"

namespace lucid::quantization {
namespace {

// Sums over the finite elements, folded into ErrorMetrics by finish().
struct Accumulator {
  std::int64_t count = 0;
  std::int64_t nonfinite = 0;
  std::int64_t saturated = 0;
  double sum_sq_error = 0;
  double sum_sq_signal = 0;
  double sum_sq_reconstruction = 0;
  double dot = 0;
  double max_abs_error = 0;

  void add(float x, float x_hat) {
    if (!std::isfinite(x)) {
      ++nonfinite;
      return;
    }
    const double error = static_cast<double>(x_hat) - x;
    ++count;
    sum_sq_error += error * error;
    sum_sq_signal += static_cast<double>(x) * x;
    sum_sq_reconstruction += static_cast<double>(x_hat) * x_hat;
    dot += static_cast<double>(x) * x_hat;
    max_abs_error = std::max(max_abs_error, std::abs(error));
  }

  ErrorMetrics finish() const {
    ErrorMetrics m;
    m.count = count;
    m.nonfinite_count = nonfinite;
    if (count == 0) return m;
    m.mse = sum_sq_error / static_cast<double>(count);
    m.rmse = std::sqrt(m.mse);
    m.max_abs_error = max_abs_error;
    m.sqnr_db = sum_sq_error == 0 ? std::numeric_limits<double>::infinity()
                                  : 10.0 * std::log10(sum_sq_signal / sum_sq_error);
    if (sum_sq_signal == 0 && sum_sq_reconstruction == 0) {
      m.cosine_similarity = 1.0;
    } else if (sum_sq_signal == 0 || sum_sq_reconstruction == 0) {
      m.cosine_similarity = 0.0;
    } else {
      m.cosine_similarity = dot / std::sqrt(sum_sq_signal * sum_sq_reconstruction);
    }
    m.fraction_saturated = static_cast<double>(saturated) / static_cast<double>(count);
    return m;
  }
};

void check_same_shape(const Shape& a, const Shape& b, const char* what) {
  if (a != b) {
    throw Error(std::string(what) + ": original shape " + to_string(a) +
                " differs from the reconstruction's " + to_string(b) + " (expected equal shapes)");
  }
}

// Whether the code of x was clamped: its unclamped value left [qmin, qmax].
bool saturates(float x, float scale, std::int32_t zero_point, const QDtype& qdtype) {
  const double code = static_cast<double>(std::nearbyint(x * (1.0f / scale))) + zero_point;
  return code < static_cast<double>(qdtype.quant_min()) ||
         code > static_cast<double>(qdtype.quant_max());
}

// Per-slot accumulation of original vs dequantized, with `slot_of(flat)`
// choosing the accumulator.
template <class SlotOf>
std::vector<Accumulator> accumulate(const TensorView& original, const QuantizedTensor& quantized,
                                    std::size_t slots, SlotOf slot_of) {
  check_same_shape(original.shape, quantized.shape(), "error_metrics");
  const std::vector<float> x = to_float32(original, "error_metrics: original");
  const Tensor x_hat = dequantize(quantized);
  const float* y = x_hat.data_as<float>();
  const QParams& qp = quantized.qparams();
  std::vector<Accumulator> acc(slots);
  detail::ParamLayout::make(original.shape, qp.qscheme, qp.ch_axis, qp.group_size)
      .for_each([&](std::int64_t flat, std::int64_t param) {
        const auto f = static_cast<std::size_t>(flat);
        const auto p = static_cast<std::size_t>(param);
        Accumulator& a = acc[slot_of(flat)];
        a.add(x[f], y[f]);
        if (std::isfinite(x[f]) && saturates(x[f], qp.scale[p], qp.zero_point[p], qp.qdtype)) {
          ++a.saturated;
        }
      });
  return acc;
}

}  // namespace

double quantization_error(const TensorView& original, const TensorView& dequantized) {
  return error_metrics(original, dequantized).mse;
}

ErrorMetrics error_metrics(const TensorView& original, const TensorView& reconstructed) {
  check_same_shape(original.shape, reconstructed.shape, "error_metrics");
  const std::vector<float> x = to_float32(original, "error_metrics: original");
  const std::vector<float> y = to_float32(reconstructed, "error_metrics: reconstructed");
  Accumulator acc;
  for (std::size_t i = 0; i < x.size(); ++i)
    acc.add(x[i], y[i]);
  return acc.finish();
}

ErrorMetrics error_metrics(const TensorView& original, const QuantizedTensor& quantized) {
  return accumulate(original, quantized, 1, [](std::int64_t) { return std::size_t{0}; })[0]
      .finish();
}

std::vector<ErrorMetrics> error_metrics_per_channel(const TensorView& original,
                                                    const QuantizedTensor& quantized, int axis) {
  const auto layout =
      detail::ParamLayout::make(original.shape, QScheme::PER_CHANNEL_AFFINE,
                                normalize_axis(axis, original.shape.size(), "axis"), 0);
  const auto channels = static_cast<std::size_t>(layout.dim);
  const std::vector<Accumulator> acc =
      accumulate(original, quantized, channels, [&](std::int64_t flat) {
        return static_cast<std::size_t>((flat / layout.inner) % layout.dim);
      });
  std::vector<ErrorMetrics> out;
  out.reserve(acc.size());
  for (const Accumulator& a : acc)
    out.push_back(a.finish());
  return out;
}

}  // namespace lucid::quantization
