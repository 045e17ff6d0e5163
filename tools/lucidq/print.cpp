// Plain-text output helpers shared by the lucidq subcommands (see print.hpp).
#include "print.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lucidq::cli {
namespace {

std::string pad(std::string_view text, std::size_t width, Align align) {
  const std::size_t fill = width > text.size() ? width - text.size() : 0;
  return align == Align::left ? std::string(text) + std::string(fill, ' ')
                              : std::string(fill, ' ') + std::string(text);
}

// Appends the words of one paragraph line by line.
void wrap_paragraph(std::string_view paragraph, std::size_t width, std::string_view indent,
                    std::string& out) {
  std::string line;
  std::size_t pos = 0;
  while (pos < paragraph.size()) {
    const std::size_t start = paragraph.find_first_not_of(" \n", pos);
    if (start == std::string_view::npos) break;
    std::size_t end = paragraph.find_first_of(" \n", start);
    if (end == std::string_view::npos) end = paragraph.size();
    const std::string_view word = paragraph.substr(start, end - start);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out.append(indent).append(line).append("\n");
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line.append(word);
    pos = end;
  }
  if (!line.empty()) out.append(indent).append(line).append("\n");
}

}  // namespace

std::string heading(std::string_view title, char rule) {
  return fmt::format("{}\n{}\n", title, std::string(title.size(), rule));
}

std::string wrap(std::string_view text, std::size_t width, std::string_view indent) {
  std::string out;
  std::string paragraph;
  auto flush = [&] {
    wrap_paragraph(paragraph, width, indent, out);
    paragraph.clear();
  };
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (line.find_first_not_of(' ') == std::string_view::npos) {
      flush();
      if (end < text.size()) out.append("\n");
    } else if (line.front() == ' ') {
      flush();
      out.append(indent).append(line).append("\n");
    } else {
      if (!paragraph.empty()) paragraph += ' ';
      paragraph.append(line);
    }
    pos = end + 1;
  }
  flush();
  return out;
}

std::string format_fixed(double value, int decimals) {
  return fmt::format("{:.{}f}", value, decimals);
}

std::string format_error(double value) {
  if (value == 0) return "0.0000";
  const double magnitude = std::abs(value);
  if (magnitude >= 0.01 && magnitude < 1e6) return fmt::format("{:.4f}", value);
  return fmt::format("{:.4e}", value);
}

std::string format_db(double db) {
  if (std::isinf(db)) return db > 0 ? "inf" : "-inf";
  return fmt::format("{:.2f}", db);
}

std::string format_scale(double scale) {
  return fmt::format("{:.7g}", scale);
}

std::string format_sci(double value, int digits) {
  return fmt::format("{:.{}e}", value, digits);
}

std::string format_percent(double fraction) {
  return fmt::format("{:.1f}%", 100.0 * fraction);
}

std::string format_tensor(std::span<const std::string> cells,
                          const lucid::quantization::Shape& shape, std::string_view indent) {
  if (shape.size() != 1 && shape.size() != 2) {
    throw std::invalid_argument(
        fmt::format("format_tensor: rank {} (expected 1 or 2)", shape.size()));
  }
  const auto numel = static_cast<std::size_t>(lucid::quantization::shape_numel(shape));
  if (cells.size() != numel) {
    throw std::invalid_argument(fmt::format("format_tensor: {} cells for shape {} (expected {})",
                                            cells.size(), lucid::quantization::to_string(shape),
                                            numel));
  }
  std::size_t width = 0;
  for (const std::string& cell : cells)
    width = std::max(width, cell.size());
  const bool matrix = shape.size() == 2;
  const auto rows = matrix ? static_cast<std::size_t>(shape[0]) : std::size_t{1};
  const auto cols = static_cast<std::size_t>(shape.back());
  std::string out;
  for (std::size_t r = 0; r < rows; ++r) {
    out.append(indent);
    if (matrix) out.append(r == 0 ? "[" : " ");
    out.append("[");
    for (std::size_t c = 0; c < cols; ++c) {
      if (c > 0) out.append(", ");
      out.append(pad(cells[r * cols + c], width, Align::right));
    }
    out.append("]");
    if (matrix) out.append(r + 1 == rows ? "]" : ",");
    out.append("\n");
  }
  if (rows == 0) out.append(indent).append("[]\n");  // a matrix with no rows
  return out;
}

std::string format_tensor(std::span<const float> values, const lucid::quantization::Shape& shape,
                          int decimals, std::string_view indent) {
  std::vector<std::string> cells;
  cells.reserve(values.size());
  for (const float v : values)
    cells.push_back(format_fixed(v, decimals));
  return format_tensor(cells, shape, indent);
}

std::string format_tensor(std::span<const std::int32_t> codes,
                          const lucid::quantization::Shape& shape, std::string_view indent) {
  std::vector<std::string> cells;
  cells.reserve(codes.size());
  for (const std::int32_t c : codes)
    cells.push_back(fmt::format("{}", c));
  return format_tensor(cells, shape, indent);
}

}  // namespace lucidq::cli
