// The checkpoint quantization report: totals, the plain-text table and the JSON form.
#include "lucid/quantization/checkpoint_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "lucid/quantization/safetensors.hpp"
#include "lucid/quantization/text_table.hpp"
#include "support/atomic_file.hpp"

namespace lucid::quantization {
namespace {

std::string printf_text(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string scheme_text(const TensorReport& t) {
  if (!t.settings) return "kept: " + t.reason;
  const QuantSettings& s = *t.settings;
  std::string text = to_string(s.qscheme);
  if (s.group_size > 0) text += " g" + std::to_string(s.group_size);
  if (is_per_channel(s.qscheme)) text += " axis " + std::to_string(s.axis);
  if (!t.method.empty()) text += " (" + t.method + ")";
  return text;
}

std::string sqnr_text(double db) {
  return std::isinf(db) ? std::string("inf") : printf_text("%.2f", db);
}

nlohmann::ordered_json finite_or_null(double value) {
  return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

std::string ggml_name(GgmlType type) {
  return std::string(ggml_type_traits(type).name);
}

std::string input_type_text(const TensorReport& t) {
  return t.input_ggml_type ? ggml_name(*t.input_ggml_type)
                           : std::string(to_safetensors_name(t.dtype));
}

double bits_per_weight(const TensorReport& t) {
  std::int64_t count = 1;
  for (const std::int64_t d : t.shape)
    count *= d;
  return count == 0 ? 0.0 : 8.0 * static_cast<double>(t.bytes_after) / static_cast<double>(count);
}

std::string format_totals(const CheckpointReport& report) {
  return printf_text("compression %.2fx", report.compression_ratio()) +
         "  (files: " + format_bytes(report.input_file_bytes) + " -> " +
         format_bytes(report.output_file_bytes) + printf_text(", %.2f s)\n", report.seconds);
}

// The GGUF job's table: ggml types, the deciding rule, bits per weight and the errors.
std::string format_gguf_report(const CheckpointReport& report) {
  using Align = TextTable::Align;
  TextTable table({{"tensor", Align::left},
                   {"shape", Align::left},
                   {"type", Align::left},
                   {"why", Align::left},
                   {"before"},
                   {"after"},
                   {"bits/w"},
                   {"MSE"},
                   {"SQNR dB"},
                   {"max |err|"},
                   {"non-finite"}});
  std::int64_t weights = 0;
  for (const TensorReport& t : report.tensors) {
    std::int64_t count = 1;
    for (const std::int64_t d : t.shape)
      count *= d;
    weights += count;
    const std::string from = input_type_text(t);
    const std::string bits = printf_text("%.3f", bits_per_weight(t));
    const std::string nonfinite = std::to_string(t.metrics.nonfinite_count);
    if (!t.ggml_type) {
      table.add_row({t.name, to_string(t.shape), from, t.reason, format_bytes(t.bytes_before),
                     format_bytes(t.bytes_after), bits, "", "", "", nonfinite});
      continue;
    }
    const ErrorMetrics& m = t.metrics;
    table.add_row({t.name, to_string(t.shape), from + " -> " + ggml_name(*t.ggml_type), t.reason,
                   format_bytes(t.bytes_before), format_bytes(t.bytes_after), bits,
                   printf_text("%.3e", m.mse), sqnr_text(m.sqnr_db),
                   printf_text("%.3e", m.max_abs_error), nonfinite});
  }
  table.add_rule();
  const double total_bits =
      weights == 0 ? 0.0
                   : 8.0 * static_cast<double>(report.bytes_after()) / static_cast<double>(weights);
  table.add_row({"total", "",
                 std::to_string(report.quantized_count()) + " of " +
                     std::to_string(report.tensors.size()) + " re-encoded",
                 "", format_bytes(report.bytes_before()), format_bytes(report.bytes_after()),
                 printf_text("%.3f", total_bits), "", "", "",
                 std::to_string(report.nonfinite_count())});
  return table.str() + format_totals(report);
}

}  // namespace

std::string format_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  const char* format = value < 10 ? "%.2f" : value < 100 ? "%.1f" : "%.0f";
  return printf_text(format, value) + " " + units[unit];
}

std::uint64_t CheckpointReport::bytes_before() const {
  std::uint64_t total = 0;
  for (const TensorReport& t : tensors)
    total += t.bytes_before;
  return total;
}

std::uint64_t CheckpointReport::bytes_after() const {
  std::uint64_t total = 0;
  for (const TensorReport& t : tensors)
    total += t.bytes_after;
  return total;
}

double CheckpointReport::compression_ratio() const {
  const std::uint64_t after = bytes_after();
  if (after == 0) return 1.0;
  return static_cast<double>(bytes_before()) / static_cast<double>(after);
}

std::size_t CheckpointReport::quantized_count() const {
  return static_cast<std::size_t>(
      std::count_if(tensors.begin(), tensors.end(),
                    [](const TensorReport& t) { return t.settings || t.ggml_type; }));
}

std::int64_t CheckpointReport::nonfinite_count() const {
  std::int64_t total = 0;
  for (const TensorReport& t : tensors)
    total += t.metrics.nonfinite_count;
  return total;
}

std::string format_report(const CheckpointReport& report) {
  const bool gguf = std::any_of(report.tensors.begin(), report.tensors.end(),
                                [](const auto& t) { return t.input_ggml_type.has_value(); });
  if (gguf) return format_gguf_report(report);
  using Align = TextTable::Align;
  const bool with_proxy = std::any_of(report.tensors.begin(), report.tensors.end(),
                                      [](const TensorReport& t) { return t.output_error_proxy; });
  std::vector<TextTable::Column> columns{{"tensor", Align::left},
                                         {"shape", Align::left},
                                         {"scheme", Align::left},
                                         {"dtype", Align::left},
                                         {"before"},
                                         {"after"},
                                         {"MSE"},
                                         {"SQNR dB"},
                                         {"max |err|"},
                                         {"saturated"},
                                         {"non-finite"}};
  if (with_proxy) columns.insert(columns.begin() + 7, {"tr(dW H dW^T)"});
  TextTable table(columns);
  const auto add = [&](std::vector<std::string> cells, const std::string& proxy) {
    if (with_proxy) cells.insert(cells.begin() + 7, proxy);
    table.add_row(std::move(cells));
  };
  for (const TensorReport& t : report.tensors) {
    const std::string dtype(to_safetensors_name(t.dtype));
    const std::string before = format_bytes(t.bytes_before);
    const std::string after = format_bytes(t.bytes_after);
    const std::string nonfinite = std::to_string(t.metrics.nonfinite_count);
    if (!t.settings) {
      add({t.name, to_string(t.shape), scheme_text(t), dtype, before, after, "", "", "", "",
           is_floating_point(t.dtype) ? nonfinite : ""},
          "");
      continue;
    }
    const ErrorMetrics& m = t.metrics;
    add({t.name, to_string(t.shape), scheme_text(t), dtype + " -> " + t.settings->qdtype.name(),
         before, after, printf_text("%.3e", m.mse), sqnr_text(m.sqnr_db),
         printf_text("%.3e", m.max_abs_error), printf_text("%.2f%%", 100 * m.fraction_saturated),
         nonfinite},
        t.output_error_proxy ? printf_text("%.3e", *t.output_error_proxy) : "");
  }
  table.add_rule();
  add({"total", "",
       std::to_string(report.quantized_count()) + " of " + std::to_string(report.tensors.size()) +
           " tensors quantized",
       "", format_bytes(report.bytes_before()), format_bytes(report.bytes_after()), "", "", "", "",
       std::to_string(report.nonfinite_count())},
      "");
  return table.str() + format_totals(report);
}

std::string report_to_json(const CheckpointReport& report) {
  using nlohmann::ordered_json;
  ordered_json tensors = ordered_json::array();
  for (const TensorReport& t : report.tensors) {
    ordered_json item;
    item["name"] = t.name;
    item["shape"] = t.shape;
    item["dtype"] = input_type_text(t);
    item["action"] = t.settings || t.ggml_type ? "quantized" : "kept";
    if (t.ggml_type) {
      item["ggml_type"] = ggml_name(*t.ggml_type);
    }
    if (t.input_ggml_type) item["bits_per_weight"] = bits_per_weight(t);
    item["reason"] = t.reason;
    if (t.settings) {
      item["scheme"] = to_string(t.settings->qscheme);
      item["qdtype"] = t.settings->qdtype.name();
      item["axis"] = t.settings->axis;
      item["group_size"] = t.settings->group_size;
    }
    item["bytes_before"] = t.bytes_before;
    item["bytes_after"] = t.bytes_after;
    if (t.settings || t.ggml_type) {
      const ErrorMetrics& m = t.metrics;
      item["mse"] = m.mse;
      item["rmse"] = m.rmse;
      item["sqnr_db"] = finite_or_null(m.sqnr_db);
      item["max_abs_error"] = m.max_abs_error;
      item["cosine_similarity"] = m.cosine_similarity;
      item["fraction_saturated"] = m.fraction_saturated;
      if (!t.method.empty()) item["method"] = t.method;
      if (t.output_error_proxy) item["output_error_proxy"] = *t.output_error_proxy;
    }
    item["nonfinite_count"] = t.metrics.nonfinite_count;
    tensors.push_back(std::move(item));
  }
  ordered_json root;
  root["lucidq_report"] = 1;
  root["input"] = report.input;
  root["output"] = report.output;
  root["seconds"] = report.seconds;
  root["tensors"] = std::move(tensors);
  root["totals"] = {{"tensors", report.tensors.size()},
                    {"quantized", report.quantized_count()},
                    {"bytes_before", report.bytes_before()},
                    {"bytes_after", report.bytes_after()},
                    {"compression_ratio", report.compression_ratio()},
                    {"nonfinite_count", report.nonfinite_count()},
                    {"input_file_bytes", report.input_file_bytes},
                    {"output_file_bytes", report.output_file_bytes}};
  return root.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

void write_report_json(const CheckpointReport& report, const std::filesystem::path& path,
                       bool overwrite) {
  detail::write_file_atomically(path, report_to_json(report), overwrite);
}

}  // namespace lucid::quantization
