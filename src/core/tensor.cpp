// Tensor, TensorView, ByteBuffer and shape helpers.
#include "lucid/quantization/tensor.hpp"

#include <cstring>
#include <new>
#include <utility>

#include "core/large_buffer.hpp"
#include "core/mapping_cache.hpp"
#include "core/widen.hpp"
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
    // No division: quantize calls on small tensors count their elements several times.
    if (__builtin_mul_overflow(count, dim, &count)) {
      throw Error("shape " + to_string(shape) + ": element count overflows int64");
    }
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

namespace {

constexpr std::align_val_t buffer_alignment{64};

}  // namespace

void release_cached_buffers() {
  detail::release_cached_mappings();
}

ByteBuffer ByteBuffer::uninitialized(std::size_t size) {
  ByteBuffer buffer;
  if (size == 0) return buffer;
  if (detail::is_large(size)) {
    const std::size_t length = detail::mapped_length(size);
    auto [data, have] = detail::take_cached_mapping(length, 2 * length);
    if (data == nullptr) {
      data = detail::map_large(size);
      have = length;
    }
    buffer.data_ = static_cast<std::uint8_t*>(data);
    buffer.mapped_ = have;
  } else {
    buffer.data_ = static_cast<std::uint8_t*>(::operator new(size, buffer_alignment));
  }
  buffer.size_ = size;
  return buffer;
}

ByteBuffer ByteBuffer::zeroed(std::size_t size) {
  if (!detail::is_large(size)) {
    ByteBuffer buffer = uninitialized(size);
    if (size != 0) std::memset(buffer.data_, 0, size);
    return buffer;
  }
  // A fresh mapping is zero already; a cached one would need a fill on this thread.
  ByteBuffer buffer;
  buffer.data_ = static_cast<std::uint8_t*>(detail::map_large(size));
  buffer.size_ = size;
  buffer.mapped_ = detail::mapped_length(size);
  return buffer;
}

ByteBuffer::ByteBuffer(std::span<const std::uint8_t> bytes)
    : ByteBuffer(uninitialized(bytes.size())) {
  if (!bytes.empty()) std::memcpy(data_, bytes.data(), bytes.size());
}

ByteBuffer::ByteBuffer(const ByteBuffer& other) : ByteBuffer(other.span()) {}

ByteBuffer::ByteBuffer(ByteBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

ByteBuffer& ByteBuffer::operator=(const ByteBuffer& other) {
  if (this != &other) *this = ByteBuffer(other);
  return *this;
}

ByteBuffer& ByteBuffer::operator=(ByteBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

ByteBuffer::~ByteBuffer() {
  release();
}

void ByteBuffer::release() noexcept {
  if (data_ == nullptr) return;
  if (mapped_ != 0) {
    detail::keep_mapping(data_, mapped_);
  } else {
    ::operator delete(data_, buffer_alignment);
  }
  data_ = nullptr;
  size_ = 0;
  mapped_ = 0;
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
      storage_(
          ByteBuffer::zeroed(static_cast<std::size_t>(shape_numel(shape_)) * element_size(type))) {}

Tensor Tensor::uninitialized(ScalarType type, Shape shape) {
  const auto bytes = static_cast<std::size_t>(shape_numel(shape)) * element_size(type);
  return Tensor(type, std::move(shape), ByteBuffer::uninitialized(bytes));
}

Tensor Tensor::from_floats(std::vector<float> values, Shape shape) {
  const TensorView view(values, std::move(shape));
  return copy_of(view);
}

Tensor Tensor::copy_of(const TensorView& view) {
  Tensor tensor = uninitialized(view.type, view.shape);
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
    case ScalarType::float16:
    case ScalarType::bfloat16:
      detail::widen_to_float32(view.data, view.type, static_cast<std::int64_t>(count), out.data());
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
