// quantize / dequantize / fake_quantize: the reference (scalar) implementation.
#include "lucid/quantization/quantize.hpp"

#include <algorithm>
#include <cmath>

#include "core/param_layout.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/pack.hpp"

namespace lucid::quantization {
namespace {

// nearbyint(x * inv_scale) + zero_point before clamping, exact in double
// (floats above 2^24 are integers already). NaN stays NaN.
double unclamped_code(float x, float inv_scale, std::int32_t zero_point) {
  return static_cast<double>(std::nearbyint(x * inv_scale)) + zero_point;
}

std::int32_t clamp_code(double code, std::int32_t zero_point, const QDtype& qdtype) {
  if (std::isnan(code)) return zero_point;
  return static_cast<std::int32_t>(std::clamp(code, static_cast<double>(qdtype.quant_min()),
                                              static_cast<double>(qdtype.quant_max())));
}

// Reciprocal scales, one per slot: the factor PyTorch multiplies by.
std::vector<float> inverse_scales(const QParams& qparams) {
  std::vector<float> inverse(qparams.scale.size());
  for (std::size_t i = 0; i < inverse.size(); ++i)
    inverse[i] = 1.0f / qparams.scale[i];
  return inverse;
}

detail::ParamLayout layout_for(const Shape& shape, const QParams& qparams) {
  return detail::ParamLayout::make(shape, qparams.qscheme, qparams.ch_axis, qparams.group_size);
}

// Validates qparams against x and returns x's elements as float32.
std::vector<float> checked_input(const TensorView& x, const QParams& qparams, const char* what) {
  qparams.validate_for(x.shape);
  if (x.type != ScalarType::float32 && x.type != ScalarType::float16 &&
      x.type != ScalarType::bfloat16) {
    throw Error(std::string(what) + ": x has element type " + to_string(x.type) +
                " (expected float32, float16 or bfloat16)");
  }
  return to_float32(x, what);
}

}  // namespace

std::int32_t quantize_value(float x, float scale, std::int32_t zero_point, const QDtype& qdtype) {
  return clamp_code(unclamped_code(x, 1.0f / scale, zero_point), zero_point, qdtype);
}

float dequantize_value(std::int32_t code, float scale, std::int32_t zero_point) {
  // The double product is exact for |code - zero_point| <= 2^29, so this rounds once.
  return static_cast<float>(static_cast<double>(scale) *
                            static_cast<double>(static_cast<std::int64_t>(code) - zero_point));
}

QuantizedTensor quantize(const TensorView& x, const QParams& qparams) {
  const std::vector<float> values = checked_input(x, qparams, "quantize");
  const std::vector<float> inverse = inverse_scales(qparams);
  std::vector<std::int32_t> codes(values.size());
  layout_for(x.shape, qparams).for_each([&](std::int64_t flat, std::int64_t slot) {
    const auto s = static_cast<std::size_t>(slot);
    const std::int32_t z = qparams.zero_point[s];
    codes[static_cast<std::size_t>(flat)] = clamp_code(
        unclamped_code(values[static_cast<std::size_t>(flat)], inverse[s], z), z, qparams.qdtype);
  });
  return QuantizedTensor(x.shape, qparams, pack_codes(codes, qparams.qdtype));
}

QuantizedTensor quantize(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                         std::int64_t group_size) {
  return quantize(x, choose_qparams(x, qscheme, qdtype, ch_axis, group_size));
}

Tensor dequantize(const QuantizedTensor& q) {
  const QParams& qparams = q.qparams();
  const std::vector<std::int32_t> codes = q.int_repr();
  Tensor out(ScalarType::float32, q.shape());
  float* dst = out.data_as<float>();
  layout_for(q.shape(), qparams).for_each([&](std::int64_t flat, std::int64_t slot) {
    const auto s = static_cast<std::size_t>(slot);
    dst[flat] = dequantize_value(codes[static_cast<std::size_t>(flat)], qparams.scale[s],
                                 qparams.zero_point[s]);
  });
  return out;
}

FakeQuantizeResult fake_quantize_with_mask(const TensorView& x, const QParams& qparams) {
  const std::vector<float> values = checked_input(x, qparams, "fake_quantize");
  const std::vector<float> inverse = inverse_scales(qparams);
  FakeQuantizeResult result{Tensor(ScalarType::float32, x.shape),
                            Tensor(ScalarType::boolean, x.shape)};
  float* out = result.output.data_as<float>();
  auto* mask = result.mask.data_as<std::uint8_t>();
  const auto qmin = static_cast<double>(qparams.qdtype.quant_min());
  const auto qmax = static_cast<double>(qparams.qdtype.quant_max());
  layout_for(x.shape, qparams).for_each([&](std::int64_t flat, std::int64_t slot) {
    const auto s = static_cast<std::size_t>(slot);
    const std::int32_t z = qparams.zero_point[s];
    const double code = unclamped_code(values[static_cast<std::size_t>(flat)], inverse[s], z);
    mask[flat] = (code >= qmin && code <= qmax) ? 1 : 0;
    out[flat] = dequantize_value(clamp_code(code, z, qparams.qdtype), qparams.scale[s], z);
  });
  return result;
}

Tensor fake_quantize(const TensorView& x, const QParams& qparams) {
  return fake_quantize_with_mask(x, qparams).output;
}

Tensor fake_quantize_backward(const TensorView& grad_out, const TensorView& mask) {
  if (grad_out.type != ScalarType::float32) {
    throw Error("fake_quantize_backward: grad_out has element type " + to_string(grad_out.type) +
                " (expected float32)");
  }
  if (mask.type != ScalarType::boolean) {
    throw Error("fake_quantize_backward: mask has element type " + to_string(mask.type) +
                " (expected bool)");
  }
  if (grad_out.shape != mask.shape) {
    throw Error("fake_quantize_backward: grad_out shape " + to_string(grad_out.shape) +
                " differs from mask shape " + to_string(mask.shape) + " (expected equal shapes)");
  }
  const std::vector<float> grad = to_float32(grad_out, "fake_quantize_backward: grad_out");
  const auto* keep = mask.data_as<std::uint8_t>();
  Tensor out(ScalarType::float32, grad_out.shape);
  float* dst = out.data_as<float>();
  // A product, as PyTorch computes it: a NaN or Inf gradient stays visible (Inf * 0 = NaN).
  for (std::size_t i = 0; i < grad.size(); ++i)
    dst[i] = grad[i] * (keep[i] ? 1.0f : 0.0f);
  return out;
}

}  // namespace lucid::quantization
