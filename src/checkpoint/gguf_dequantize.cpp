// dequantize_gguf: every tensor of a GGUF file decoded to float32 into a safetensors file.
#include <cstring>

#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/ggml_quants.hpp"
#include "lucid/quantization/gguf_quantize.hpp"

namespace lucid::quantization {
namespace {

// The safetensors dtype a tensor is written as: float32 for float and block types, the
// integer types as they are.
ScalarType output_type_of(const GgufTensorInfo& t) {
  switch (t.type) {
    case GgmlType::I8:
      return ScalarType::int8;
    case GgmlType::I16:
      return ScalarType::int16;
    case GgmlType::I32:
      return ScalarType::int32;
    case GgmlType::I64:
      return ScalarType::int64;
    case GgmlType::F64:
      return ScalarType::float64;
    default:
      return ScalarType::float32;
  }
}

bool copied_as_is(const GgufTensorInfo& t) {
  return output_type_of(t) != ScalarType::float32 || t.type == GgmlType::F32;
}

}  // namespace

DequantizeSummary dequantize_gguf(const std::filesystem::path& input,
                                  const std::filesystem::path& output,
                                  const DequantizeGgufOptions& options) {
  const GgufFile in = GgufFile::open(input);
  const std::string file = input.string();
  std::vector<SafetensorsTensorSpec> specs;
  std::uint64_t bytes_total = 0;
  for (const GgufTensorInfo& t : in.tensors()) {
    if (!copied_as_is(t) && !ggml_can_quantize(t.type)) {
      throw Error(file + ": tensor " + detail::quoted(t.name) + ": type " +
                  std::string(ggml_type_traits(t.type).name) +
                  " cannot be decoded by lucidq (expected f32, f16, bf16, q8_0, q4_0, q4_1, "
                  "q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl or an integer type)");
    }
    specs.push_back({t.name, output_type_of(t), t.shape()});
    bytes_total += t.nbytes;
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : in.metadata().entries()) {
    const std::string* text = value.get<std::string>();
    if (text == nullptr) continue;
    // The input's fault, said before the safetensors writer blames its output for it.
    for (const std::string_view part : {std::string_view(key), std::string_view(*text)}) {
      if (detail::find_invalid_utf8(part) != std::string_view::npos) {
        throw Error(file + ": metadata key " + detail::quoted(key) + ": the " +
                    (part.data() == key.data() ? "key" : "string value") +
                    " is not valid UTF-8 (expected UTF-8, as GGUF strings are and safetensors "
                    "metadata must be)");
      }
    }
    metadata[key] = *text;
  }
  SafetensorsWriter out(output, std::move(specs), metadata, options.overwrite);
  DequantizeSummary summary;
  summary.input_bytes = in.file_size();
  CheckpointProgress progress;
  progress.tensor_count = in.tensors().size();
  progress.bytes_total = bytes_total;
  std::vector<float> values;
  try {
    for (const GgufTensorInfo& t : in.tensors()) {
      const auto bytes = in.bytes(t);
      if (copied_as_is(t)) {
        out.write(t.name, bytes);
        ++summary.copied;
      } else {
        values.resize(static_cast<std::size_t>(t.numel()));
        try {
          if (!values.empty()) {
            ggml_dequantize_rows(t.type, bytes.data(), values.data(), t.rows(), t.row_length());
          }
        } catch (const Error& e) {
          throw Error(file + ": tensor " + detail::quoted(t.name) + ": " + e.what());
        }
        out.write(t.name, std::as_bytes(std::span<const float>(values)));
        ++summary.dequantized;
      }
      in.release_pages(t);
      ++progress.tensors_done;
      progress.bytes_done += t.nbytes;
      progress.tensor = t.name;
      if (options.progress) options.progress(progress);
      in.check_intact();
    }
  } catch (const Error&) {
    in.check_intact();  // data read as zeros from a shrinking input: report that instead
    throw;
  }
  out.commit();
  std::error_code error;
  const auto written = std::filesystem::file_size(output, error);
  summary.output_bytes = error ? 0 : written;
  return summary;
}

}  // namespace lucid::quantization
