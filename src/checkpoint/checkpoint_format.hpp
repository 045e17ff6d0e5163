// Internal: the per-tensor metadata of lucidq checkpoints (format 1), encoded and decoded.
#pragma once

#include <string>
#include <string_view>

#include "lucid/quantization/checkpoint.hpp"

namespace lucid::quantization::detail {

/// The layout of tensor `name` quantized with `settings` (resolved: axis non-negative).
QuantizedTensorLayout make_layout(std::string name, const Shape& shape, ScalarType original_type,
                                  const QuantSettings& settings);

/// The JSON value of "lucidq.tensor.<name>" for `layout`, compact, keys in a fixed order:
/// {"dtype","scheme","axis","group_size","quant_min","quant_max","packing","shape",
///  "original_dtype","scale"[,"zero_point"]}.
std::string encode_tensor_metadata(const QuantizedTensorLayout& layout);

/// Parses the JSON value of "lucidq.tensor.<name>" back into a layout. Unknown keys are
/// ignored (later versions of format 1 may add some). Throws Error starting with `file` and
/// naming the tensor and the key on a missing key, a wrong type or an inconsistent value.
QuantizedTensorLayout decode_tensor_metadata(std::string_view name, std::string_view json_text,
                                             std::string_view file);

/// Throws Error naming `file`'s path when its __metadata__ marks a lucidq checkpoint (a key
/// "lucidq.*"): quantizing codes again would be meaningless, the input must be dequantized first.
void check_not_lucidq_checkpoint(const SafetensorsFile& file);

}  // namespace lucid::quantization::detail
