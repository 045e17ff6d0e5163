// The checkpoint quantization report: totals, the plain-text table and the JSON form.
#include "lucid/quantization/checkpoint_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "lucid/quantization/safetensors.hpp"
#include "support/atomic_file.hpp"

namespace lucid::quantization {
namespace {

std::string printf_text(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// Display width of UTF-8 text: its code points (names may hold non-ASCII characters).
std::size_t width_of(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0u) != 0x80u;
  }));
}

// Columns padded to their widest cell, separated by two spaces; numbers right-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::pair<std::string, bool>> columns)  // (header, right-aligned)
      : columns_(std::move(columns)) {
    std::vector<std::string> header;
    for (const auto& column : columns_)
      header.push_back(column.first);
    rows_.push_back(std::move(header));
    rows_.emplace_back();  // a rule under the header
  }
  void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void rule() { rows_.emplace_back(); }

  std::string str() const {
    std::vector<std::size_t> widths(columns_.size(), 0);
    for (const auto& row : rows_) {
      for (std::size_t c = 0; c < row.size(); ++c)
        widths[c] = std::max(widths[c], width_of(row[c]));
    }
    std::size_t total = 0;
    for (const std::size_t w : widths)
      total += w + 2;
    std::string out;
    for (const auto& row : rows_) {
      std::string line;
      if (row.empty()) line.assign(total - 2, '-');
      for (std::size_t c = 0; c < row.size(); ++c) {
        const std::string pad(widths[c] - width_of(row[c]), ' ');
        line += columns_[c].second ? pad + row[c] : row[c] + pad;
        if (c + 1 < row.size()) line += "  ";
      }
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::pair<std::string, bool>> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

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
                    [](const TensorReport& t) { return t.settings.has_value(); }));
}

std::int64_t CheckpointReport::nonfinite_count() const {
  std::int64_t total = 0;
  for (const TensorReport& t : tensors)
    total += t.metrics.nonfinite_count;
  return total;
}

std::string format_report(const CheckpointReport& report) {
  const bool with_proxy = std::any_of(report.tensors.begin(), report.tensors.end(),
                                      [](const TensorReport& t) { return t.output_error_proxy; });
  std::vector<std::pair<std::string, bool>> columns{
      {"tensor", false},   {"shape", false},    {"scheme", false},   {"dtype", false},
      {"before", true},    {"after", true},     {"MSE", true},       {"SQNR dB", true},
      {"max |err|", true}, {"saturated", true}, {"non-finite", true}};
  if (with_proxy) columns.insert(columns.begin() + 7, {"tr(dW H dW^T)", true});
  TextTable table(columns);
  const auto add = [&](std::vector<std::string> cells, const std::string& proxy) {
    if (with_proxy) cells.insert(cells.begin() + 7, proxy);
    table.add(std::move(cells));
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
  table.rule();
  add({"total", "",
       std::to_string(report.quantized_count()) + " of " + std::to_string(report.tensors.size()) +
           " tensors quantized",
       "", format_bytes(report.bytes_before()), format_bytes(report.bytes_after()), "", "", "", "",
       std::to_string(report.nonfinite_count())},
      "");
  std::string out = table.str();
  out += printf_text("compression %.2fx", report.compression_ratio()) +
         "  (files: " + format_bytes(report.input_file_bytes) + " -> " +
         format_bytes(report.output_file_bytes) + printf_text(", %.2f s)\n", report.seconds);
  return out;
}

std::string report_to_json(const CheckpointReport& report) {
  using nlohmann::ordered_json;
  ordered_json tensors = ordered_json::array();
  for (const TensorReport& t : report.tensors) {
    ordered_json item;
    item["name"] = t.name;
    item["shape"] = t.shape;
    item["dtype"] = std::string(to_safetensors_name(t.dtype));
    item["action"] = t.settings ? "quantized" : "kept";
    item["reason"] = t.reason;
    if (t.settings) {
      item["scheme"] = to_string(t.settings->qscheme);
      item["qdtype"] = t.settings->qdtype.name();
      item["axis"] = t.settings->axis;
      item["group_size"] = t.settings->group_size;
    }
    item["bytes_before"] = t.bytes_before;
    item["bytes_after"] = t.bytes_after;
    if (t.settings) {
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
