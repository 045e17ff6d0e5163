// QuantizedTensor: validated codes + QParams.
#include "lucid/quantization/quantized_tensor.hpp"

#include "core/qparams_formula.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/pack.hpp"

namespace lucid::quantization {

QuantizedTensor::QuantizedTensor(Shape shape, QParams qparams,
                                 const std::vector<std::uint8_t>& storage)
    : QuantizedTensor(std::move(shape), std::move(qparams), ByteBuffer(std::span(storage))) {}

QuantizedTensor::QuantizedTensor(Shape shape, QParams qparams, ByteBuffer storage)
    : shape_(std::move(shape)), qparams_(std::move(qparams)), storage_(std::move(storage)) {
  qparams_.validate_for(shape_);
  check_storage();
}

QuantizedTensor::QuantizedTensor(Shape shape, QParams qparams, ByteBuffer storage,
                                 detail::ValidParams)
    : shape_(std::move(shape)), qparams_(std::move(qparams)), storage_(std::move(storage)) {
  detail::validate_layout_for(qparams_, shape_);
  check_storage();
}

void QuantizedTensor::check_storage() const {
  const std::int64_t expected = qparams_.qdtype.storage_bytes(numel());
  if (static_cast<std::int64_t>(storage_.size()) != expected) {
    throw Error("QuantizedTensor: storage holds " + std::to_string(storage_.size()) +
                " bytes but shape " + to_string(shape_) + " of " + qparams_.qdtype.name() +
                " needs " + std::to_string(expected));
  }
  if (qparams_.qdtype.has_custom_range()) {
    const std::vector<std::int32_t> codes = int_repr();
    for (std::size_t i = 0; i < codes.size(); ++i) {
      if (codes[i] < qparams_.qdtype.quant_min() || codes[i] > qparams_.qdtype.quant_max()) {
        throw Error("QuantizedTensor: code[" + std::to_string(i) +
                    "] = " + std::to_string(codes[i]) + " is outside " + qparams_.qdtype.name());
      }
    }
  }
}

std::vector<std::int32_t> QuantizedTensor::int_repr() const {
  return unpack_codes(storage(), numel(), qparams_.qdtype);
}

}  // namespace lucid::quantization
