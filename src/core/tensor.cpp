// Tensor, TensorView and shape helpers.
#include "lucid/quantization/tensor.hpp"

#include <cstring>
#include <limits>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t dim = shape[i];
    if (dim < 0) {
      throw Error("shape " + to_string(shape) + ": dimension " + std::to_string(i) + " = " +
                  std::to_string(dim) + " (expected >= 0)");
    }
    if (dim != 0 && count > std::numeric_limits<std::int64_t>::max() / dim) {
      throw Error("shape " + to_string(shape) + ": element count overflows int64");
    }
    count *= dim;
  }
  return count;
}

std::string to_string(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

int normalize_axis(int axis, std::size_t rank, const char* what) {
  const auto r = static_cast<int>(rank);
  if (axis < -r || axis >= r) {
    throw Error(std::string(what) + " = " + std::to_string(axis) + " is out of range for a " +
                std::to_string(rank) + "-D tensor (expected " +
                (rank == 0 ? std::string("a tensor of rank >= 1")
                           : "-" + std::to_string(r) + " <= axis < " + std::to_string(r)) +
                ")");
  }
  return axis < 0 ? axis + r : axis;
}

TensorView::TensorView(std::span<const float> values, Shape shape_)
    : data(values.data()),
      type(ScalarType::float32),
      shape(shape_.empty() ? Shape{static_cast<std::int64_t>(values.size())} : std::move(shape_)) {
  if (shape_numel(shape) != static_cast<std::int64_t>(values.size())) {
    throw Error("TensorView: shape " + to_string(shape) + " holds " +
                std::to_string(shape_numel(shape)) + " elements but " +
                std::to_string(values.size()) + " values were given");
  }
}

Tensor::Tensor(ScalarType type, Shape shape)
    : type_(type),
      shape_(std::move(shape)),
      storage_(static_cast<std::size_t>(shape_numel(shape_)) * element_size(type)) {}

Tensor Tensor::from_floats(std::vector<float> values, Shape shape) {
  const TensorView view(values, std::move(shape));
  return copy_of(view);
}

Tensor Tensor::copy_of(const TensorView& view) {
  Tensor tensor(view.type, view.shape);
  if (tensor.nbytes() != 0) std::memcpy(tensor.data(), view.data, tensor.nbytes());
  return tensor;
}

std::span<const float> Tensor::floats() const {
  if (type_ != ScalarType::float32) {
    throw Error("Tensor::floats: tensor type is " + to_string(type_) + " (expected float32)");
  }
  return {data_as<float>(), static_cast<std::size_t>(numel())};
}

std::vector<float> to_float32(const TensorView& view, const char* what) {
  const auto count = static_cast<std::size_t>(view.numel());
  std::vector<float> out(count);
  const auto* bytes = static_cast<const unsigned char*>(view.data);
  // memcpy per element: views into mapped files may be unaligned.
  switch (view.type) {
    case ScalarType::float32:
      if (count) std::memcpy(out.data(), bytes, count * sizeof(float));
      break;
    case ScalarType::float16:
    case ScalarType::bfloat16:
      for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, bytes + 2 * i, 2);
        out[i] =
            view.type == ScalarType::float16 ? float16_to_float(bits) : bfloat16_to_float(bits);
      }
      break;
    case ScalarType::float64:
      for (std::size_t i = 0; i < count; ++i) {
        double value;
        std::memcpy(&value, bytes + 8 * i, 8);
        out[i] = static_cast<float>(value);
      }
      break;
    default:
      throw Error(std::string(what) + ": element type " + to_string(view.type) +
                  " (expected float32, float16, bfloat16 or float64)");
  }
  return out;
}

}  // namespace lucid::quantization
