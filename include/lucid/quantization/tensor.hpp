// Plain dense tensors: an owning Tensor and a non-owning TensorView, both
// contiguous and row-major, with a runtime element type.
#pragma once

#include <cstddef>
#include <cstdint>
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

/// Owning byte storage, 64-byte aligned; copies are deep, moves are cheap.
///
/// Buffers of 4 MiB and more are private anonymous mappings advised for
/// transparent huge pages: a fresh one is faulted in (and zeroed by the OS) by
/// whichever thread first writes each page, so a parallel kernel writing a new
/// output touches its own pieces and nothing zero-fills it on one thread first.
/// A freed large buffer is kept for reuse by a later uninitialized() request of
/// a similar size (at most 4 mappings and 512 MiB in all, per process, shared
/// with large QParams arrays: param_array.hpp), which saves its page faults;
/// release_cached_buffers() returns them to the OS.
/// Smaller buffers come from the aligned operator new.
class ByteBuffer {
 public:
  ByteBuffer() noexcept = default;
  /// `size` bytes with unspecified contents, for outputs that are fully overwritten.
  static ByteBuffer uninitialized(std::size_t size);
  /// `size` zero bytes (large buffers are zero from the OS without a fill).
  static ByteBuffer zeroed(std::size_t size);
  /// A copy of `bytes`.
  explicit ByteBuffer(std::span<const std::uint8_t> bytes);
  ByteBuffer(const ByteBuffer& other);
  ByteBuffer(ByteBuffer&& other) noexcept;
  ByteBuffer& operator=(const ByteBuffer& other);
  ByteBuffer& operator=(ByteBuffer&& other) noexcept;
  ~ByteBuffer();

  std::uint8_t* data() { return data_; }
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<std::uint8_t> span() { return {data_, size_}; }
  std::span<const std::uint8_t> span() const { return {data_, size_}; }

 private:
  void release() noexcept;

  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;  // length of the page mapping, 0 for operator new memory
};

/// Returns the large mappings kept for reuse (ByteBuffer storage, QParams arrays) to the OS.
void release_cached_buffers();

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
  /// A tensor of `type` and `shape` whose elements are unspecified until written
  /// (for outputs a kernel fully overwrites; see ByteBuffer).
  static Tensor uninitialized(ScalarType type, Shape shape);
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
  Tensor(ScalarType type, Shape shape, ByteBuffer storage)
      : type_(type), shape_(std::move(shape)), storage_(std::move(storage)) {}

  ScalarType type_ = ScalarType::float32;
  Shape shape_;
  ByteBuffer storage_;
};

/// The elements of a floating-point view widened / narrowed to float32
/// (float64 is rounded to nearest). Throws Error naming `what` for a
/// non-floating type.
std::vector<float> to_float32(const TensorView& view, const char* what);

}  // namespace lucid::quantization
