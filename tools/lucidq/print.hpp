// Plain-text output helpers shared by the lucidq subcommands: headings, wrapped
// prose, number formats, 1-D/2-D tensors and aligned tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lucid/quantization/tensor.hpp"
#include "lucid/quantization/text_table.hpp"

namespace lucidq::cli {

/// Default width of wrapped prose; tables and tensors stay under ~100 columns.
inline constexpr std::size_t text_width = 88;

/// `title` on its own line, underlined with `rule` over its full length.
std::string heading(std::string_view title, char rule = '=');

/// `text` re-flowed into lines of at most `width` columns (longer words are
/// kept whole), each prefixed by `indent`. Blank lines (paragraph breaks) are
/// kept; a line starting with spaces is kept verbatim, so formulas stay put.
std::string wrap(std::string_view text, std::size_t width = text_width,
                 std::string_view indent = "");

/// "-14.0000": fixed point with `decimals` digits.
std::string format_fixed(double value, int decimals = 4);
/// An error figure (MSE, squared error) as the notes print it: 4 decimals,
/// switching to "2.7701e-05" form below 0.01 or above 1e6 so small values keep
/// their digits; exactly 0 prints as "0.0000".
std::string format_error(double value);
/// Decibels with 2 decimals; "inf" for an exact reconstruction.
std::string format_db(double db);
/// A scale with 7 significant digits ("3.578824", "0.02072376").
std::string format_scale(double scale);
/// "1.5587e-02": scientific with `digits` decimals, for columns spanning decades.
std::string format_sci(double value, int digits = 4);
/// "12.5%"
std::string format_percent(double fraction);

/// A rank-1 or rank-2 tensor of preformatted `cells` as nested brackets with
/// right-aligned cells of equal width, every line prefixed by `indent`:
///   [[ -15,  -74,  127],
///    [ -44,   14, -123]]
/// Throws std::invalid_argument when the rank is not 1 or 2 or the cell count
/// differs from the shape's element count.
std::string format_tensor(std::span<const std::string> cells,
                          const lucid::quantization::Shape& shape, std::string_view indent = "  ");
/// Floats with `decimals` digits.
std::string format_tensor(std::span<const float> values, const lucid::quantization::Shape& shape,
                          int decimals = 4, std::string_view indent = "  ");
/// Integer codes.
std::string format_tensor(std::span<const std::int32_t> codes,
                          const lucid::quantization::Shape& shape, std::string_view indent = "  ");

/// Column alignment in a Table.
using Align = lucid::quantization::TextTable::Align;

/// The library's plain-text table (lucid/quantization/text_table.hpp), indented by two spaces
/// unless told otherwise.
class Table : public lucid::quantization::TextTable {
 public:
  using TextTable::TextTable;
  std::string str(std::string_view indent = "  ") const { return TextTable::str(indent); }
};

}  // namespace lucidq::cli
