// `lucidq inspect` and `lucidq dequantize` of GGUF files.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "gguf_commands.hpp"
#include "interrupts.hpp"
#include "lucid/quantization/gguf_quantize.hpp"
#include "output_files.hpp"
#include "print.hpp"
#include "progress.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;
using nlohmann::ordered_json;

ordered_json scalar_json(const Q::GgufScalar& scalar) {
  return std::visit([](const auto& v) { return ordered_json(v); }, scalar);
}

ordered_json value_json(const Q::GgufValue& value) {
  if (!value.is_array()) return scalar_json(value.scalar());
  ordered_json items = ordered_json::array();
  for (const Q::GgufScalar& item : value.items())
    items.push_back(scalar_json(item));
  return items;
}

std::string type_text(const Q::GgufValue& value) {
  return value.is_array() ? "arr[" + std::string(Q::to_string(value.element_type())) + "," +
                                std::to_string(value.items().size()) + "]"
                          : std::string(Q::to_string(value.type()));
}

double bits_per_weight(const Q::GgufTensorInfo& t) {
  const std::int64_t n = t.numel();
  return n == 0 ? 0.0 : 8.0 * static_cast<double>(t.nbytes) / static_cast<double>(n);
}

}  // namespace

void inspect_gguf(const std::string& path, bool json) {
  const Q::GgufFile file = Q::GgufFile::open(path);
  if (json) {
    ordered_json root;
    root["file"] = path;
    root["file_bytes"] = file.file_size();
    root["format"] = "gguf";
    root["version"] = file.header().version;
    root["alignment"] = file.header().alignment;
    root["data_offset"] = file.header().data_offset;
    ordered_json metadata = ordered_json::array();
    for (const auto& [key, value] : file.metadata().entries()) {
      metadata.push_back({{"key", key}, {"type", type_text(value)}, {"value", value_json(value)}});
    }
    root["metadata"] = std::move(metadata);
    ordered_json tensors = ordered_json::array();
    for (const Q::GgufTensorInfo& t : file.tensors()) {
      tensors.push_back({{"name", t.name},
                         {"type", std::string(Q::ggml_type_traits(t.type).name)},
                         {"shape", t.shape()},
                         {"ne", t.ne},
                         {"offset", t.offset},
                         {"bytes", t.nbytes},
                         {"bits_per_weight", bits_per_weight(t)}});
    }
    root["tensors"] = std::move(tensors);
    fmt::print("{}\n", root.dump(2, ' ', false, ordered_json::error_handler_t::replace));
    return;
  }
  fmt::print("{}: GGUF v{}, {} tensor{}, {} metadata entries, alignment {}, {}\n", path,
             file.header().version, file.tensors().size(), file.tensors().size() == 1 ? "" : "s",
             file.metadata().size(), file.header().alignment, Q::format_bytes(file.file_size()));
  for (const auto& [key, value] : file.metadata().entries()) {
    fmt::print("  {} ({}) = {}\n", key, type_text(value), Q::format_gguf_value(value, 8));
  }
  Table table({{"tensor", Align::left},
               {"shape", Align::left},
               {"type", Align::left},
               {"bytes", Align::right},
               {"bits/w", Align::right}});
  std::uint64_t total = 0;
  std::int64_t weights = 0;
  for (const Q::GgufTensorInfo& t : file.tensors()) {
    total += t.nbytes;
    weights += t.numel();
    table.add_row({t.name, Q::to_string(t.shape()), std::string(Q::ggml_type_traits(t.type).name),
                   Q::format_bytes(t.nbytes), fmt::format("{:.3f}", bits_per_weight(t))});
  }
  table.add_rule();
  table.add_row({"total", "", "", Q::format_bytes(total),
                 fmt::format("{:.3f}", weights == 0 ? 0.0
                                                    : 8.0 * static_cast<double>(total) /
                                                          static_cast<double>(weights))});
  fmt::print("\n{}", table.str(""));
}

void dequantize_gguf_file(const std::string& input, const std::string& output, bool force,
                          bool quiet) {
  check_new_output(output, force);
  Q::DequantizeGgufOptions options;
  options.overwrite = force;
  ProgressBar bar(!quiet);
  options.progress = bar.callback();
  const Q::DequantizeSummary summary = [&] {
    const JobOutput job(output);
    return Q::dequantize_gguf(input, output, options);
  }();
  bar.finish();
  if (quiet) return;
  fmt::print("decoded {} tensor{} to float32 (as ggml's to_float), copied {} as they were\n",
             summary.dequantized, summary.dequantized == 1 ? "" : "s", summary.copied);
  fmt::print("wrote {} ({} -> {})\n", output, Q::format_bytes(summary.input_bytes),
             Q::format_bytes(summary.output_bytes));
}

}  // namespace lucidq::cli
