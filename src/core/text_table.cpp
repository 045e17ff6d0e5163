// TextTable: plain-text tables padded to their widest cells.
#include "lucid/quantization/text_table.hpp"

#include <algorithm>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

// Display width of UTF-8 text: its code points (names may hold non-ASCII characters).
std::size_t width_of(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0u) != 0x80u;
  }));
}

}  // namespace

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) {
    throw Error("TextTable::add_row: " + std::to_string(cells.size()) + " cells (expected " +
                std::to_string(columns_.size()) + ")");
  }
  rows_.push_back(std::move(cells));
}

void TextTable::add_rule() {
  rows_.emplace_back();
}

std::string TextTable::str(std::string_view indent) const {
  std::vector<std::size_t> widths(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = width_of(columns_[c].header);
    for (const auto& row : rows_) {
      if (!row.empty()) widths[c] = std::max(widths[c], width_of(row[c]));
    }
  }
  std::size_t total = 0;
  for (const std::size_t w : widths)
    total += w;
  total += 2 * (widths.empty() ? 0 : widths.size() - 1);
  auto render = [&](auto cell_of) {
    std::string line(indent);
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) line.append("  ");
      const std::string& cell = cell_of(c);
      const std::string pad(widths[c] - width_of(cell), ' ');
      line += columns_[c].align == Align::right ? pad + cell : cell + pad;
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    return line + "\n";
  };
  const std::string rule = std::string(indent) + std::string(total, '-') + "\n";
  std::string out = render([&](std::size_t c) -> const std::string& { return columns_[c].header; });
  out.append(rule);
  for (const auto& row : rows_) {
    if (row.empty()) {
      out.append(rule);
      continue;
    }
    out.append(render([&](std::size_t c) -> const std::string& { return row[c]; }));
  }
  return out;
}

}  // namespace lucid::quantization
