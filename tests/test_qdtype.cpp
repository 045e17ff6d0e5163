// Tests for QDtype: constants, custom and narrow ranges, names, storage.
#include <gtest/gtest.h>

#include "lucid/quantization/qdtype.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

TEST(QDtype, BuiltInConstants) {
  struct Row {
    Q::QDtype dtype;
    const char* name;
    int bits;
    bool is_signed;
    std::int64_t qmin, qmax;
    Q::Storage storage;
  };
  const Row rows[] = {
      {Q::qint8, "qint8", 8, true, -128, 127, Q::Storage::int8},
      {Q::quint8, "quint8", 8, false, 0, 255, Q::Storage::uint8},
      {Q::qint4, "qint4", 4, true, -8, 7, Q::Storage::packed4},
      {Q::quint4, "quint4", 4, false, 0, 15, Q::Storage::packed4},
      {Q::qint2, "qint2", 2, true, -2, 1, Q::Storage::packed2},
      {Q::quint2, "quint2", 2, false, 0, 3, Q::Storage::packed2},
      {Q::qint16, "qint16", 16, true, -32768, 32767, Q::Storage::int16},
      {Q::qint32, "qint32", 32, true, -2147483648LL, 2147483647LL, Q::Storage::int32},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.dtype.name(), r.name);
    EXPECT_EQ(r.dtype.bits(), r.bits);
    EXPECT_EQ(r.dtype.is_signed(), r.is_signed);
    EXPECT_EQ(r.dtype.quant_min(), r.qmin);
    EXPECT_EQ(r.dtype.quant_max(), r.qmax);
    EXPECT_EQ(r.dtype.storage(), r.storage);
    EXPECT_FALSE(r.dtype.has_custom_range());
    EXPECT_EQ(Q::qdtype_from_string(r.name), r.dtype);
  }
}

TEST(QDtype, NarrowRange) {
  const Q::QDtype narrow = Q::qint8.narrow_range();
  EXPECT_EQ(narrow.quant_min(), -127);
  EXPECT_EQ(narrow.quant_max(), 127);
  EXPECT_TRUE(narrow.has_custom_range());
  EXPECT_EQ(narrow.name(), "qint8[-127,127]");
  EXPECT_EQ(narrow.storage(), Q::Storage::int8);
  EXPECT_EQ(Q::qdtype_from_string("qint8[-127,127]"), narrow);
  EXPECT_EQ(Q::qint4.narrow_range().quant_min(), -7);
  EXPECT_EQ(Q::quint8.narrow_range().quant_max(), 254);
}

TEST(QDtype, SymmetricZeroPoint) {
  EXPECT_EQ(Q::qint8.symmetric_zero_point(), 0);
  EXPECT_EQ(Q::quint8.symmetric_zero_point(), 128);
  EXPECT_EQ(Q::quint4.symmetric_zero_point(), 8);
  EXPECT_EQ(Q::quint8.with_range(0, 127).symmetric_zero_point(),
            63);  // PyTorch's custom-range rule
  EXPECT_EQ(Q::quint8.narrow_range().symmetric_zero_point(), 127);
}

TEST(QDtype, CustomRangeValidation) {
  EXPECT_EQ(Q::qint8.with_range(-100, 100).quant_max(), 100);
  EXPECT_ERROR_CONTAINS(Q::qint8.with_range(5, 5), "is empty");
  EXPECT_ERROR_CONTAINS(Q::qint8.with_range(10, -10), "is empty");
  EXPECT_ERROR_CONTAINS(Q::qint8.with_range(1, 100), "cannot hold 0");
  EXPECT_ERROR_CONTAINS(Q::quint8.with_range(-1, 100), "does not fit 8 bits");
  EXPECT_ERROR_CONTAINS(Q::qint4.with_range(-9, 7), "[-8, 7]");
  EXPECT_ERROR_CONTAINS(Q::QDtype::full_range(3, true), "bits = 3");
  EXPECT_ERROR_CONTAINS(Q::QDtype::full_range(32, false), "32 only signed");
}

TEST(QDtype, ParsingAcceptsShortNamesAndRejectsJunk) {
  EXPECT_EQ(Q::qdtype_from_string("int8"), Q::qint8);
  EXPECT_EQ(Q::qdtype_from_string("uint4"), Q::quint4);
  EXPECT_EQ(Q::qdtype_from_string("int2"), Q::qint2);
  for (const char* bad : {"int3", "qint8[", "qint8[1]", "qint8[a,b]", "float8", "", "uint32"}) {
    EXPECT_ERROR_CONTAINS(Q::qdtype_from_string(bad), std::string("\"") + bad + "\"");
  }
  EXPECT_ERROR_CONTAINS(Q::qdtype_from_string("qint8[1,100]"), "cannot hold 0");
}

TEST(QDtype, StorageBytes) {
  EXPECT_EQ(Q::qint4.storage_bytes(0), 0);
  EXPECT_EQ(Q::qint4.storage_bytes(1), 1);
  EXPECT_EQ(Q::qint4.storage_bytes(7), 4);
  EXPECT_EQ(Q::quint2.storage_bytes(5), 2);
  EXPECT_EQ(Q::quint2.storage_bytes(8), 2);
  EXPECT_EQ(Q::qint16.storage_bytes(3), 6);
  EXPECT_EQ(Q::qint32.storage_bytes(3), 12);
  EXPECT_ERROR_CONTAINS(Q::qint4.storage_bytes(-1), "count = -1");
}
