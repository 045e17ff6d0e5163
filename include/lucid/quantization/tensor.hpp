// Plain dense tensors: an owning Tensor and a non-owning TensorView, both
// contiguous and row-major, with a runtime element type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "lucid/quantization/scalar_type.hpp"

namespace lucid::quantization {

/// Dimensions of a row-major tensor, outermost first.
using Shape = std::vector<std::int64_t>;

/// Number of elements of `shape` (1 for a scalar shape `{}`).
/// Throws Error on a negative dimension or when the product overflows int64.
std::int64_t shape_numel(const Shape& shape);
/// "[3, 4]"
std::string to_string(const Shape& shape);
/// Resolves a possibly negative axis against `rank` (-1 = last). Throws Error
/// naming `what` when the axis is outside [-rank, rank).
int normalize_axis(int axis, std::size_t rank, const char* what);

/// A read-only window on contiguous row-major data owned elsewhere.
struct TensorView {
  const void* data = nullptr;
  ScalarType type = ScalarType::float32;
  Shape shape;

  TensorView() = default;
  TensorView(const void* data_, ScalarType type_, Shape shape_)
      : data(data_), type(type_), shape(std::move(shape_)) {}
  /// A float32 view of `values` with the given shape (default: 1-D).
  TensorView(std::span<const float> values, Shape shape_ = {});

  std::int64_t numel() const { return shape_numel(shape); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(type); }
  template <class T>
  const T* data_as() const {
    return static_cast<const T*>(data);
  }
};

/// An owning dense tensor. Copyable; moves are cheap.
class Tensor {
 public:
  Tensor() = default;
  /// A zero-filled tensor of `type` and `shape`.
  Tensor(ScalarType type, Shape shape);
  /// A float32 tensor holding `values`; `shape` defaults to 1-D and must match the count.
  static Tensor from_floats(std::vector<float> values, Shape shape = {});
  /// A copy of what `view` shows.
  static Tensor copy_of(const TensorView& view);

  ScalarType type() const { return type_; }
  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return storage_.size(); }
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }
  template <class T>
  T* data_as() {
    return reinterpret_cast<T*>(storage_.data());
  }
  template <class T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(storage_.data());
  }
  /// The float32 elements (requires type() == float32).
  std::span<const float> floats() const;
  TensorView view() const { return TensorView(storage_.data(), type_, shape_); }
  operator TensorView() const { return view(); }  // NOLINT(google-explicit-constructor)

 private:
  ScalarType type_ = ScalarType::float32;
  Shape shape_;
  std::vector<std::byte> storage_;
};

/// The elements of a floating-point view widened / narrowed to float32
/// (float64 is rounded to nearest). Throws Error naming `what` for a
/// non-floating type.
std::vector<float> to_float32(const TensorView& view, const char* what);

}  // namespace lucid::quantization
