// GGUF validation: every malformed header gives a clear error naming the file and the field.
#include <gtest/gtest.h>

#include <cstring>
#include <lucid/quantization/error.hpp>
#include <lucid/quantization/gguf.hpp>

#include "test_support.hpp"

namespace Q = lucid::quantization;

namespace {

// A hand-built GGUF file, field by field (independent of the library's writer).
class Raw {
 public:
  template <class T>
  Raw& put(T value) {
    const auto* p = reinterpret_cast<const std::byte*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
    return *this;
  }
  Raw& str(std::string_view text) {
    put<std::uint64_t>(text.size());
    for (const char c : text)
      bytes.push_back(static_cast<std::byte>(c));
    return *this;
  }
  Raw& header(std::int64_t tensors, std::int64_t kvs, std::uint32_t version = 3) {
    bytes.clear();
    for (const char c : std::string_view("GGUF"))
      bytes.push_back(static_cast<std::byte>(c));
    return put<std::uint32_t>(version).put<std::int64_t>(tensors).put<std::int64_t>(kvs);
  }
  // A tensor info with 1 or 2 dimensions.
  Raw& tensor(std::string_view name, std::vector<std::int64_t> ne, std::uint32_t type,
              std::uint64_t offset) {
    str(name).put<std::uint32_t>(static_cast<std::uint32_t>(ne.size()));
    for (const std::int64_t d : ne)
      put<std::int64_t>(d);
    return put<std::uint32_t>(type).put<std::uint64_t>(offset);
  }
  Raw& pad(std::size_t alignment = 32) {
    while (bytes.size() % alignment != 0)
      bytes.push_back(std::byte{0});
    return *this;
  }
  Raw& data(std::size_t count) {
    bytes.resize(bytes.size() + count, std::byte{0x11});
    return *this;
  }
  std::vector<std::byte> bytes;
};

Q::GgufHeader parse(const Raw& raw) {
  return Q::parse_gguf_header(raw.bytes, "m.gguf");
}

// A valid file: two KV pairs and two F32 tensors of 8 and 4 values.
Raw valid_file() {
  Raw raw;
  raw.header(2, 2);
  raw.str("general.architecture").put<std::uint32_t>(8).str("llama");
  raw.str("k.arr").put<std::uint32_t>(9).put<std::uint32_t>(5).put<std::uint64_t>(2);
  raw.put<std::int32_t>(1).put<std::int32_t>(2);
  raw.tensor("a", {8}, 0, 0).tensor("b", {4}, 0, 32).pad().data(32).data(16).pad();
  return raw;
}

}  // namespace

TEST(GgufErrors, TheValidBaseFileParses) {
  const Q::GgufHeader header = parse(valid_file());
  EXPECT_EQ(header.tensors.size(), 2u);
  EXPECT_EQ(header.data_size, 64u);
}

TEST(GgufErrors, EveryTruncationIsRefused) {
  const Raw raw = valid_file();
  for (std::size_t size = 0; size < raw.bytes.size(); ++size) {
    SCOPED_TRACE(size);
    const std::span<const std::byte> cut(raw.bytes.data(), size);
    EXPECT_THROW(Q::parse_gguf_header(cut, "m.gguf"), Q::Error);
  }
  // The padding after the last tensor must be present, as ggml's data-loading read requires.
  Raw short_by_eight = raw;
  short_by_eight.bytes.resize(raw.bytes.size() - 8);
  EXPECT_ERROR_CONTAINS(parse(short_by_eight),
                        "m.gguf: file is 248 bytes but its 2 tensors need 192 + 64");
  EXPECT_ERROR_CONTAINS(parse(short_by_eight), "truncated");
}

TEST(GgufErrors, BadMagicAndVersions) {
  Raw raw = valid_file();
  raw.bytes[0] = std::byte{'X'};
  EXPECT_ERROR_CONTAINS(parse(raw), "m.gguf: magic \"XGUF\" (expected \"GGUF\"");
  for (const std::uint32_t version : {0u, 1u, 2u, 4u}) {
    Raw v = valid_file();
    std::memcpy(v.bytes.data() + 4, &version, 4);
    EXPECT_ERROR_CONTAINS(parse(v), "GGUF version " + std::to_string(version) + " (expected 3");
  }
  Raw swapped = valid_file();
  const std::uint32_t big_endian_3 = 0x03000000u;
  std::memcpy(swapped.bytes.data() + 4, &big_endian_3, 4);
  EXPECT_ERROR_CONTAINS(parse(swapped), "byte-swapped");
  Raw v2 = valid_file();
  v2.bytes[4] = std::byte{2};
  EXPECT_ERROR_CONTAINS(parse(v2), "versions 1 and 2 are outdated");
}

TEST(GgufErrors, CountsThatOverflowOrDoNotFit) {
  for (const std::int64_t count :
       {std::int64_t{-1}, std::int64_t{1} << 62, std::numeric_limits<std::int64_t>::max()}) {
    Raw tensors = valid_file();
    std::memcpy(tensors.bytes.data() + 8, &count, 8);
    EXPECT_ERROR_CONTAINS(parse(tensors), "tensor count " + std::to_string(count));
    Raw kvs = valid_file();
    std::memcpy(kvs.bytes.data() + 16, &count, 8);
    EXPECT_ERROR_CONTAINS(parse(kvs), "metadata count " + std::to_string(count));
  }
  Raw elements;
  elements.header(1, 0).tensor("t", {std::int64_t{1} << 32, std::int64_t{1} << 32}, 0, 0).pad();
  EXPECT_ERROR_CONTAINS(parse(elements), "tensor \"t\": dimensions [4294967296, 4294967296] hold");
  Raw bytes;
  bytes.header(1, 0).tensor("t", {std::int64_t{1} << 61, 2}, 0, 0).pad();
  EXPECT_ERROR_CONTAINS(parse(bytes), "need more than 2^63 - 1 bytes");
  Raw array;
  array.header(0, 1).str("k").put<std::uint32_t>(9).put<std::uint32_t>(4);
  array.put<std::uint64_t>(std::uint64_t{1} << 62);
  EXPECT_ERROR_CONTAINS(parse(array), "key \"k\": array of 4611686018427387904 u32 items");
  Raw negative;
  negative.header(1, 0).tensor("t", {-32}, 0, 0).pad();
  EXPECT_ERROR_CONTAINS(parse(negative), "tensor \"t\": dimension 0 is -32 (expected >= 0)");
}

TEST(GgufErrors, OffsetsMisalignedOverlappingOrWithGaps) {
  Raw misaligned;
  misaligned.header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {4}, 0, 40).pad().data(96);
  EXPECT_ERROR_CONTAINS(parse(misaligned),
                        "m.gguf: tensor \"b\": offset 40 (expected 32: it is not a multiple of "
                        "the alignment 32");
  Raw overlap;
  overlap.header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {4}, 0, 0).pad().data(64);
  EXPECT_ERROR_CONTAINS(parse(overlap), "tensor \"b\": offset 0 (expected 32: it overlaps");
  Raw gap;
  gap.header(2, 0).tensor("a", {8}, 0, 0).tensor("b", {4}, 0, 64).pad().data(128);
  EXPECT_ERROR_CONTAINS(parse(gap), "offset 64 (expected 32: there is a gap");
  Raw first;
  first.header(1, 0).tensor("a", {8}, 0, 32).pad().data(64);
  EXPECT_ERROR_CONTAINS(parse(first), "tensor \"a\": offset 32 (expected 0");
}

TEST(GgufErrors, NamesKeysAndTypes) {
  Raw long_name;
  long_name.header(1, 0).tensor(std::string(64, 'n'), {8}, 0, 0).pad().data(32);
  EXPECT_ERROR_CONTAINS(parse(long_name), "name of 64 bytes is too long (expected at most 63");
  Raw longest;
  longest.header(1, 0).tensor(std::string(63, 'n'), {8}, 0, 0).pad().data(32);
  EXPECT_NO_THROW(parse(longest));
  Raw unknown_type;
  unknown_type.header(1, 0).tensor("t", {32}, 4, 0).pad().data(32);
  EXPECT_ERROR_CONTAINS(parse(unknown_type), "tensor \"t\": ggml type id 4 is unknown or removed");
  Raw far_type;
  far_type.header(1, 0).tensor("t", {32}, 999, 0).pad().data(32);
  EXPECT_ERROR_CONTAINS(parse(far_type), "ggml type id 999");
  Raw block;
  block.header(1, 0).tensor("t", {96}, 12, 0).pad().data(1024);
  EXPECT_ERROR_CONTAINS(parse(block), "row length 96 is not a multiple of q4_K's block size 256");
  Raw dims;
  dims.header(1, 0).str("t").put<std::uint32_t>(5).data(64);
  EXPECT_ERROR_CONTAINS(parse(dims), "tensor \"t\": 5 dimensions (expected 1 to 4");
  Raw dup_tensor;
  dup_tensor.header(2, 0).tensor("a", {8}, 0, 0).tensor("a", {8}, 0, 32).pad().data(64);
  EXPECT_ERROR_CONTAINS(parse(dup_tensor), "tensor \"a\": appears twice");
  Raw not_utf8;
  not_utf8.header(1, 0).tensor("blk.\xFF.w", {8}, 0, 0).pad().data(32);
  EXPECT_ERROR_CONTAINS(
      parse(not_utf8),
      "m.gguf: tensor \"blk.\xEF\xBF\xBD.w\": name is not valid UTF-8 (byte 0xFF at "
      "offset 4");
  Raw dup_key;
  dup_key.header(0, 2).str("k").put<std::uint32_t>(0).put<std::uint8_t>(1);
  dup_key.str("k").put<std::uint32_t>(0).put<std::uint8_t>(2);
  EXPECT_ERROR_CONTAINS(parse(dup_key), "key \"k\": appears twice");
  Raw empty_key;
  empty_key.header(0, 1).str("").put<std::uint32_t>(0).put<std::uint8_t>(1);
  EXPECT_ERROR_CONTAINS(parse(empty_key), "metadata entry 0: empty key");
  Raw value_type;
  value_type.header(0, 1).str("k").put<std::uint32_t>(13).put<std::uint8_t>(1);
  EXPECT_ERROR_CONTAINS(parse(value_type), "key \"k\": value type 13 at byte 33 is unknown");
  Raw nested;
  nested.header(0, 1).str("k").put<std::uint32_t>(9).put<std::uint32_t>(9).put<std::uint64_t>(0);
  EXPECT_ERROR_CONTAINS(parse(nested), "key \"k\": array of arrays");
  Raw boolean;
  boolean.header(0, 1).str("k").put<std::uint32_t>(7).put<std::uint8_t>(2);
  EXPECT_ERROR_CONTAINS(parse(boolean), "key \"k\": bool byte 2");
  Raw alignment;
  alignment.header(0, 1).str("general.alignment").put<std::uint32_t>(4).put<std::uint32_t>(24);
  EXPECT_ERROR_CONTAINS(parse(alignment), "\"general.alignment\": 24 (expected a power of two");
  Raw alignment_type;
  alignment_type.header(0, 1).str("general.alignment").put<std::uint32_t>(5).put<std::int32_t>(32);
  EXPECT_ERROR_CONTAINS(parse(alignment_type), "\"general.alignment\": is a i32 (expected u32)");
}

TEST(GgufErrors, StringLengthsPastTheEnd) {
  Raw key;
  key.header(0, 1).put<std::uint64_t>(1000).data(10);
  EXPECT_ERROR_CONTAINS(parse(key),
                        "metadata entry 0: key length 1000 at byte 24 runs past the end");
  Raw value;
  value.header(0, 1).str("k").put<std::uint32_t>(8).put<std::uint64_t>(50).data(5);
  EXPECT_ERROR_CONTAINS(parse(value), "key \"k\": string length 50");
  Raw huge;
  huge.header(0, 1).str("k").put<std::uint32_t>(8).put<std::uint64_t>(~std::uint64_t{0});
  EXPECT_ERROR_CONTAINS(parse(huge), "exceeds the limit of 1 GiB");
  Raw item;
  item.header(0, 1).str("k").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(2);
  item.str("ok").put<std::uint64_t>(99);
  EXPECT_ERROR_CONTAINS(parse(item), "key \"k\": item 1: string length 99");
  Raw name;
  name.header(1, 0).put<std::uint64_t>(77).data(40);
  EXPECT_ERROR_CONTAINS(parse(name), "tensor info 0: name length 77");
}

TEST(GgufErrors, ZeroTensorsNeedNoPadding) {
  Raw raw;
  raw.header(0, 1).str("k").put<std::uint32_t>(0).put<std::uint8_t>(1);
  const Q::GgufHeader header = parse(raw);
  EXPECT_EQ(header.data_offset, raw.bytes.size());
  EXPECT_EQ(header.data_size, 0u);
}
