// dequantize_checkpoint: a lucidq checkpoint turned back into a plain float safetensors file.
#include <algorithm>
#include <cstring>

#include "io/safetensors_format.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"

namespace lucid::quantization {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;  // elements converted at a time

ScalarType output_type(const QuantizedTensorLayout& layout,
                       const std::optional<ScalarType>& requested) {
  return requested.value_or(layout.original_type);
}

// Appends `values` to the writer converted to `type` (float32, float16, bfloat16, float64).
void append_converted(SafetensorsWriter& out, std::span<const float> values, ScalarType type) {
  if (type == ScalarType::float32) {
    out.append(std::as_bytes(values));
    return;
  }
  std::vector<std::byte> buffer(kChunk * element_size(type));
  for (std::size_t begin = 0; begin < values.size(); begin += kChunk) {
    const std::size_t n = std::min(kChunk, values.size() - begin);
    for (std::size_t k = 0; k < n; ++k) {
      const float v = values[begin + k];
      if (type == ScalarType::float64) {
        const double wide = v;
        std::memcpy(buffer.data() + 8 * k, &wide, 8);
      } else {
        const std::uint16_t bits =
            type == ScalarType::bfloat16 ? float_to_bfloat16(v) : float_to_float16(v);
        std::memcpy(buffer.data() + 2 * k, &bits, 2);
      }
    }
    out.append(std::span(buffer.data(), n * element_size(type)));
  }
}

void release(const SafetensorsFile& in, const std::string& name) {
  if (const SafetensorsEntry* entry = in.find(name)) in.release_pages(*entry);
}

// Writes tensor `t` of `in` to `out`: copied, or dequantized to the requested dtype.
void dequantize_one(const SafetensorsFile& in, const CheckpointTensor& t,
                    const DequantizeCheckpointOptions& options, SafetensorsWriter& out,
                    DequantizeSummary& summary, CheckpointProgress& progress) {
  if (!t.quantized) {
    out.write(t.entry.name, in.bytes(t.entry));
    in.release_pages(t.entry);
    ++summary.copied;
    progress.bytes_done += t.entry.nbytes();
  } else {
    const QuantizedTensorLayout& layout = *t.quantized;
    const QuantizedTensor q = load_quantized_tensor(in, layout);
    Tensor values(ScalarType::float32, layout.shape);
    dequantize_into(q, std::span(values.data_as<float>(), static_cast<std::size_t>(q.numel())));
    append_converted(out, values.floats(), output_type(layout, options.dtype));
    release(in, layout.name);
    release(in, layout.scale_name());
    if (const auto zp = layout.zero_point_name()) release(in, *zp);
    ++summary.dequantized;
    progress.bytes_done += layout.nbytes();
  }
  ++progress.tensors_done;
  progress.tensor = t.entry.name;
  if (options.progress) options.progress(progress);
}

}  // namespace

DequantizeSummary dequantize_checkpoint(const std::filesystem::path& input,
                                        const std::filesystem::path& output,
                                        const DequantizeCheckpointOptions& options) {
  if (options.dtype && *options.dtype != ScalarType::float32 &&
      *options.dtype != ScalarType::float16 && *options.dtype != ScalarType::bfloat16) {
    throw Error("dequantize: dtype = " + to_string(*options.dtype) +
                " (expected float32, float16 or bfloat16, or the original dtype)");
  }
  const SafetensorsFile in = SafetensorsFile::open(input);
  const CheckpointContents contents = read_checkpoint_contents(in);

  std::vector<SafetensorsTensorSpec> specs;
  DequantizeSummary summary;
  summary.input_bytes = in.header().data_offset + in.header().data_size;
  for (const CheckpointTensor& t : contents.tensors) {
    if (t.quantized) {
      specs.push_back({t.entry.name, output_type(*t.quantized, options.dtype), t.quantized->shape});
    } else {
      specs.push_back({t.entry.name, t.entry.type, t.entry.shape});
    }
  }
  SafetensorsWriter out(output, std::move(specs), contents.user_metadata, options.overwrite);

  CheckpointProgress progress;
  progress.tensor_count = contents.tensors.size();
  progress.bytes_total = in.header().data_size;
  try {
    for (const CheckpointTensor& t : contents.tensors) {
      dequantize_one(in, t, options, out, summary, progress);
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
