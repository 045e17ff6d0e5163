// QuantizedTensor: codes in their dtype's real storage plus the QParams beside them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

namespace detail {
/// Tag of QuantizedTensor's constructor for parameters known valid for the tensor's shape: made
/// by calculate_qparams' formula, or already checked by QParams::validate_for.
struct ValidParams {};
}  // namespace detail

/// Lucid's "sidecar" design (lucid.quantization): integer codes and the parameters that map
/// them back to reals, kept together. Codes are stored as the dtype says
/// (quint8 in uint8, qint4 packed two per byte, ...).
class QuantizedTensor {
 public:
  QuantizedTensor() = default;
  /// Takes over `storage`. Throws Error when qparams do not fit `shape` or
  /// `storage` is not exactly qparams.qdtype.storage_bytes(numel) bytes long.
  QuantizedTensor(Shape shape, QParams qparams, ByteBuffer storage);
  /// As above, copying the bytes of `storage` into a ByteBuffer.
  QuantizedTensor(Shape shape, QParams qparams, const std::vector<std::uint8_t>& storage);
  /// Internal (the quantizers): as the first, for parameters whose every entry is known valid
  /// (calculate_qparams' formula made them, or the caller validated them for this shape); checks
  /// their layout but not each entry again (megabytes of per-group parameters, no longer in cache
  /// by then).
  QuantizedTensor(Shape shape, QParams qparams, ByteBuffer storage, detail::ValidParams);

  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return shape_numel(shape_); }
  const QParams& qparams() const { return qparams_; }
  const QDtype& qdtype() const { return qparams_.qdtype; }
  /// The raw storage bytes.
  std::span<const std::uint8_t> storage() const { return storage_.span(); }
  /// All codes unpacked to int32, row-major (PyTorch's int_repr()).
  std::vector<std::int32_t> int_repr() const;

 private:
  // The constructors' checks past the parameters': the storage's size, custom-range codes.
  void check_storage() const;

  Shape shape_;
  QParams qparams_;
  ByteBuffer storage_;
};

}  // namespace lucid::quantization
