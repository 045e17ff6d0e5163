// TextTable: padding to the widest cell in code points, alignment, rules, indent, bad rows.
#include <gtest/gtest.h>

#include "lucid/quantization/text_table.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

TEST(TextTable, PadsToTheWidestCellInCodePoints) {
  Q::TextTable t({{"name", Q::TextTable::Align::left}, {"n"}});
  t.add_row({"w\xc3\xa9ight", "7"});  // "wéight": 6 code points, 7 bytes
  t.add_rule();
  t.add_row({"b", "12"});
  EXPECT_EQ(t.str(),
            "name     n\n"
            "----------\n"
            "w\xc3\xa9ight   7\n"
            "----------\n"
            "b       12\n");
  EXPECT_EQ(t.str("  ").substr(0, 12), "  name     n");
}

TEST(TextTable, RowsWithAnotherCellCountAreErrors) {
  Q::TextTable t({{"a"}, {"b"}});
  EXPECT_ERROR_CONTAINS(t.add_row({"1"}), "TextTable::add_row: 1 cells (expected 2)");
}
