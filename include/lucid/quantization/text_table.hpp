// Plain-text tables: the one renderer behind the checkpoint report and the CLI's tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lucid::quantization {

/// A header row, a dashed rule, then rows (and further rules); columns are separated by two
/// spaces and padded to their widest cell, counted in UTF-8 code points; trailing spaces are
/// trimmed. Not thread-safe.
///
///   TextTable t({{"tensor", TextTable::Align::left}, {"MSE"}});
///   t.add_row({"w", "1.2e-05"});
///   std::string text = t.str();
class TextTable {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::right;
  };

  explicit TextTable(std::vector<Column> columns);
  /// Appends a row. Throws Error when the cell count differs from the column count.
  void add_row(std::vector<std::string> cells);
  /// Appends a dashed rule between row groups.
  void add_rule();
  /// The rendered table, every line prefixed by `indent` and ending in '\n'.
  std::string str(std::string_view indent = {}) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

}  // namespace lucid::quantization
