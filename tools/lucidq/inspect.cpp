// `lucidq inspect`: the tensors of a safetensors file, lucidq checkpoint or GGUF file (table or
// JSON).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.hpp"
#include "gguf_commands.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/gguf.hpp"
#include "print.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;
using nlohmann::ordered_json;

struct InspectArgs {
  std::string file;
  bool json = false;
};

std::string dtype_name(Q::ScalarType type) {
  return std::string(Q::to_safetensors_name(type));
}

// Bytes the tensor takes in the file (codes, scales and zero points for a quantized one).
std::uint64_t stored_bytes(const Q::CheckpointTensor& t) {
  return t.quantized ? t.quantized->nbytes() : t.entry.nbytes();
}

ordered_json quantization_json(const Q::QuantizedTensorLayout& q) {
  ordered_json out;
  out["scheme"] = Q::to_string(q.settings.qscheme);
  out["dtype"] = q.settings.qdtype.name();
  out["axis"] = q.settings.axis;
  out["group_size"] = q.settings.group_size;
  out["storage"] = Q::to_string(q.settings.qdtype.storage());
  out["original_dtype"] = dtype_name(q.original_type);
  out["scale"] = q.scale_name();
  out["zero_point"] = q.zero_point_name() ? ordered_json(*q.zero_point_name()) : ordered_json();
  return out;
}

void print_json(const Q::SafetensorsFile& file, const Q::CheckpointContents& contents,
                std::uint64_t file_bytes) {
  ordered_json root;
  root["file"] = file.path().string();
  root["file_bytes"] = file_bytes;
  root["format"] =
      contents.format_version ? ordered_json(*contents.format_version) : ordered_json();
  root["metadata"] = contents.user_metadata;
  ordered_json tensors = ordered_json::array();
  for (const Q::CheckpointTensor& t : contents.tensors) {
    ordered_json item;
    item["name"] = t.entry.name;
    item["dtype"] = dtype_name(t.entry.type);
    item["shape"] = t.quantized ? t.quantized->shape : t.entry.shape;
    item["stored_shape"] = t.entry.shape;
    item["bytes"] = stored_bytes(t);
    item["quantization"] = t.quantized ? quantization_json(*t.quantized) : ordered_json();
    tensors.push_back(std::move(item));
  }
  root["tensors"] = std::move(tensors);
  fmt::print("{}\n", root.dump(2, ' ', false, ordered_json::error_handler_t::replace));
}

void print_table(const Q::SafetensorsFile& file, const Q::CheckpointContents& contents,
                 std::uint64_t file_bytes) {
  const std::string kind = contents.format_version
                               ? "lucidq checkpoint (format " + *contents.format_version + ")"
                               : std::string("safetensors file");
  fmt::print("{}: {}, {} tensor{}, {}\n", file.path().string(), kind, contents.tensors.size(),
             contents.tensors.size() == 1 ? "" : "s", Q::format_bytes(file_bytes));
  for (const auto& [key, value] : contents.user_metadata)
    fmt::print("  metadata {} = {}\n", key, value);
  Table table({{"tensor", Align::left},
               {"shape", Align::left},
               {"stored as", Align::left},
               {"bytes", Align::right},
               {"quantization", Align::left}});
  std::uint64_t total = 0;
  for (const Q::CheckpointTensor& t : contents.tensors) {
    total += stored_bytes(t);
    std::string stored = dtype_name(t.entry.type);
    std::string quantization = "-";
    if (t.quantized) {
      const Q::QuantizedTensorLayout& q = *t.quantized;
      stored += " " + Q::to_string(t.entry.shape) +
                (q.zero_point_name() ? " + scale, zero_point" : " + scale");
      quantization = Q::describe(q.settings) + ", from " + dtype_name(q.original_type);
    }
    table.add_row({t.entry.name, Q::to_string(t.quantized ? t.quantized->shape : t.entry.shape),
                   stored, Q::format_bytes(stored_bytes(t)), quantization});
  }
  table.add_rule();
  table.add_row({"total", "", "", Q::format_bytes(total), ""});
  fmt::print("\n{}", table.str(""));
}

void run_inspect(const InspectArgs& a) {
  if (Q::is_gguf_path(a.file)) {
    inspect_gguf(a.file, a.json);
    return;
  }
  const auto file = Q::SafetensorsFile::open(a.file);
  const Q::CheckpointContents contents = Q::read_checkpoint_contents(file);
  const std::uint64_t file_bytes = file.header().data_offset + file.header().data_size;
  if (a.json) {
    print_json(file, contents, file_bytes);
  } else {
    print_table(file, contents, file_bytes);
  }
}

constexpr const char* footer =
    "Lists each tensor with its shape, how it is stored and its size; a quantized tensor W is\n"
    "shown once, its W.scale and W.zero_point counted in its size. The file is fully\n"
    "validated first (header, offsets, lucidq metadata). A GGUF file (llama.cpp) shows its\n"
    "metadata with types and its tensors with ggml types and bits per weight.\n"
    "\n"
    "Examples:\n"
    "  lucidq inspect model.q8.safetensors\n"
    "  lucidq inspect model.q8.safetensors --json | jq '.tensors[].quantization'";

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd =
      app.add_subcommand("inspect", "List the tensors of a safetensors, lucidq or GGUF file");
  cmd->footer(footer);
  cmd->add_option("file", args->file, "The file to inspect")->required()->type_name("FILE");
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->callback([args] { run_inspect(*args); });
}

}  // namespace lucidq::cli
