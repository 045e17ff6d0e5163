// Tests for pack_codes / unpack_codes: bit layout, sign extension, odd lengths, errors.
#include <gtest/gtest.h>

#include <random>

#include "lucid/quantization/pack.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;

TEST(Pack, Int4LayoutIsLowNibbleFirst) {
  const std::vector<std::int32_t> codes{1, -1, 7, -8, 3};
  const std::vector<std::uint8_t> bytes = Q::pack_codes(codes, Q::qint4);
  ASSERT_EQ(bytes.size(), 3u);
  EXPECT_EQ(bytes[0], 0xF1);  // element 0 = 1 in the low nibble, element 1 = -1 (0xF) high
  EXPECT_EQ(bytes[1], 0x87);  // 7 low, -8 (0x8) high
  EXPECT_EQ(bytes[2], 0x03);  // last element alone, unused high nibble zero
  EXPECT_EQ(Q::unpack_codes(bytes, 5, Q::qint4), codes);
}

TEST(Pack, Uint2LayoutIsLowBitsFirst) {
  const std::vector<std::int32_t> codes{3, 0, 1, 2, 1};
  const std::vector<std::uint8_t> bytes = Q::pack_codes(codes, Q::quint2);
  ASSERT_EQ(bytes.size(), 2u);
  EXPECT_EQ(bytes[0], 0b10'01'00'11);
  EXPECT_EQ(bytes[1], 0b01);
  EXPECT_EQ(Q::unpack_codes(bytes, 5, Q::quint2), codes);
}

TEST(Pack, RoundTripsEveryDtypeOnOddLengths) {
  const auto seed = Q::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (const Q::QDtype& dtype : {Q::qint2, Q::quint2, Q::qint4, Q::quint4, Q::qint8, Q::quint8,
                                 Q::qint16, Q::qint32, Q::qint8.narrow_range()}) {
    for (std::size_t n : {0u, 1u, 2u, 3u, 5u, 7u, 31u, 33u, 257u}) {
      SCOPED_TRACE(dtype.name() + " n=" + std::to_string(n));
      std::uniform_int_distribution<std::int64_t> pick(dtype.quant_min(), dtype.quant_max());
      std::vector<std::int32_t> codes(n);
      for (auto& c : codes)
        c = static_cast<std::int32_t>(pick(rng));
      if (n > 1) {
        codes[0] = static_cast<std::int32_t>(dtype.quant_min());
        codes[n - 1] = static_cast<std::int32_t>(dtype.quant_max());
      }
      const auto bytes = Q::pack_codes(codes, dtype);
      EXPECT_EQ(static_cast<std::int64_t>(bytes.size()),
                dtype.storage_bytes(static_cast<std::int64_t>(n)));
      EXPECT_EQ(Q::unpack_codes(bytes, static_cast<std::int64_t>(n), dtype), codes);
    }
  }
}

TEST(Pack, WideStorageIsLittleEndian) {
  const std::vector<std::int32_t> codes{-2, 258};
  EXPECT_EQ(Q::pack_codes(codes, Q::qint16), (std::vector<std::uint8_t>{0xFE, 0xFF, 0x02, 0x01}));
}

TEST(Pack, Errors) {
  const std::vector<std::int32_t> out_of_range{0, 8};
  EXPECT_ERROR_CONTAINS(Q::pack_codes(out_of_range, Q::qint4), "codes[1] = 8 is outside qint4");
  const std::vector<std::int32_t> narrow_bad{-128};
  EXPECT_ERROR_CONTAINS(Q::pack_codes(narrow_bad, Q::qint8.narrow_range()), "qint8[-127,127]");
  const std::vector<std::uint8_t> two_bytes{0, 0};
  EXPECT_ERROR_CONTAINS(Q::unpack_codes(two_bytes, 5, Q::qint4),
                        "holds 2 bytes but 5 qint4 codes need 3");
  EXPECT_ERROR_CONTAINS(Q::unpack_codes(two_bytes, -1, Q::qint8), "count = -1");
}
