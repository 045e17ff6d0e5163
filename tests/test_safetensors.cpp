// Tests for safetensors reading (samples, validation of bad input) and atomic writing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/safetensors.hpp"
#include "lucid/quantization/scalar_type.hpp"
#include "lucid/quantization/tensor.hpp"

namespace Q = lucid::quantization;
namespace fs = std::filesystem;

namespace {

constexpr Q::ScalarType kAllTypes[] = {
    Q::ScalarType::float32, Q::ScalarType::float16, Q::ScalarType::bfloat16, Q::ScalarType::float64,
    Q::ScalarType::int8,    Q::ScalarType::uint8,   Q::ScalarType::int16,    Q::ScalarType::uint16,
    Q::ScalarType::int32,   Q::ScalarType::uint32,  Q::ScalarType::int64,    Q::ScalarType::uint64,
    Q::ScalarType::boolean,
};

// The 8-byte little-endian length, the header text and the data.
std::string file_bytes(std::string_view header, std::string_view data = {},
                       std::uint64_t declared = UINT64_MAX) {
  std::uint64_t length = declared == UINT64_MAX ? header.size() : declared;
  std::string out(8, '\0');
  for (char& byte : out) {
    byte = static_cast<char>(length & 0xFFu);
    length >>= 8;
  }
  return out + std::string(header) + std::string(data);
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `action`, expects an Error containing every needle, and returns its message.
std::string expect_error(const std::function<void()>& action,
                         std::initializer_list<std::string> needles) {
  try {
    action();
  } catch (const Q::Error& error) {
    const std::string message = error.what();
    for (const std::string& needle : needles) {
      EXPECT_NE(message.find(needle), std::string::npos)
          << "message: " << message << "\nexpected to contain: " << needle;
    }
    return message;
  }
  ADD_FAILURE() << "expected lucid::quantization::Error";
  return {};
}

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("lucidq-safetensors-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write_raw(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  // Expects opening a file made of `header` and `data` to fail with a message naming the
  // file and containing every needle.
  std::string expect_bad(std::string_view header, std::string_view data,
                         std::initializer_list<std::string> needles) {
    const fs::path path = write_raw("bad.safetensors", file_bytes(header, data));
    const std::string message = expect_error([&] { Q::SafetensorsFile::open(path); }, needles);
    EXPECT_NE(message.find("bad.safetensors"), std::string::npos) << message;
    return message;
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& item : fs::directory_iterator(dir_)) {
      names.push_back(item.path().filename().string());
    }
    return names;
  }

  fs::path dir_;
};

// --- the reference implementation's sample files -------------------------------------------

template <class T>
void expect_minus3_to_2(const Q::SafetensorsFile& file, const Q::SafetensorsEntry& entry) {
  ASSERT_EQ(entry.shape, Q::Shape{6}) << entry.name;
  const auto bytes = file.bytes(entry);
  ASSERT_EQ(bytes.size(), 6 * sizeof(T)) << entry.name;
  for (int i = 0; i < 6; ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));  // may be unaligned
    EXPECT_EQ(value, static_cast<T>(i - 3)) << entry.name << "[" << i << "]";
  }
}

void expect_sample_tensor(const Q::SafetensorsFile& file, const Q::SafetensorsEntry& entry) {
  static const std::map<std::string, Q::ScalarType> kTypeOf = {
      {"B", Q::ScalarType::uint8},   {"H", Q::ScalarType::uint16},  {"I", Q::ScalarType::uint32},
      {"b", Q::ScalarType::int8},    {"d", Q::ScalarType::float64}, {"e", Q::ScalarType::float16},
      {"f", Q::ScalarType::float32}, {"h", Q::ScalarType::int16},   {"i", Q::ScalarType::int32},
  };
  ASSERT_TRUE(kTypeOf.count(entry.name)) << "unexpected tensor " << entry.name;
  ASSERT_EQ(entry.type, kTypeOf.at(entry.name)) << entry.name;
  switch (entry.type) {
    case Q::ScalarType::uint8:
      return expect_minus3_to_2<std::uint8_t>(file, entry);
    case Q::ScalarType::uint16:
      return expect_minus3_to_2<std::uint16_t>(file, entry);
    case Q::ScalarType::uint32:
      return expect_minus3_to_2<std::uint32_t>(file, entry);
    case Q::ScalarType::int8:
      return expect_minus3_to_2<std::int8_t>(file, entry);
    case Q::ScalarType::int16:
      return expect_minus3_to_2<std::int16_t>(file, entry);
    case Q::ScalarType::int32:
      return expect_minus3_to_2<std::int32_t>(file, entry);
    case Q::ScalarType::float32:
      return expect_minus3_to_2<float>(file, entry);
    case Q::ScalarType::float64:
      return expect_minus3_to_2<double>(file, entry);
    case Q::ScalarType::float16: {
      const auto bytes = file.bytes(entry);
      for (int i = 0; i < 6; ++i) {
        std::uint16_t bits;
        std::memcpy(&bits, bytes.data() + 2 * i, 2);
        EXPECT_EQ(Q::float16_to_float(bits), static_cast<float>(i - 3)) << "e[" << i << "]";
      }
      return;
    }
    default:
      FAIL() << "unexpected type for " << entry.name;
  }
}

TEST_F(Safetensors, ReadsEveryReferenceSample) {
  const fs::path samples = fs::path(LUCIDQ_SHARED_DIR) / "testdata" / "safetensors-samples";
  if (!fs::is_directory(samples)) {
    GTEST_SKIP() << "shared test data not found at " << samples
                 << " (the reference safetensors samples live outside the repository)";
  }
  std::vector<std::string> seen;
  for (const auto& item : fs::directory_iterator(samples)) {
    if (item.path().extension() != ".safetensors") continue;
    SCOPED_TRACE(item.path().string());
    seen.push_back(item.path().stem().string());
    const auto file = Q::SafetensorsFile::open(item.path());
    EXPECT_EQ(file.metadata(), (std::map<std::string, std::string>{{"test", "a"}}));
    const std::size_t expected = item.path().stem() == "overall" ? 9 : 1;
    ASSERT_EQ(file.entries().size(), expected);
    if (expected == 1) EXPECT_EQ(file.entries()[0].name, item.path().stem().string());
    for (const auto& entry : file.entries())
      expect_sample_tensor(file, entry);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen,
            (std::vector<std::string>{"B", "H", "I", "b", "d", "e", "f", "h", "i", "overall"}));
}

TEST_F(Safetensors, UnalignedSampleViewsConvertToFloat) {
  // The samples' headers are 81-83 bytes long, so their element data is unaligned: the
  // core's conversions must not dereference typed pointers into the mapping.
  const fs::path path =
      fs::path(LUCIDQ_SHARED_DIR) / "testdata" / "safetensors-samples" / "overall.safetensors";
  if (!fs::exists(path)) GTEST_SKIP() << "shared test data not found at " << path;
  const auto file = Q::SafetensorsFile::open(path);
  for (const char* name : {"d", "e", "f"}) {
    EXPECT_EQ(Q::to_float32(file.view(name), name),
              (std::vector<float>{-3.0f, -2.0f, -1.0f, 0.0f, 1.0f, 2.0f}))
        << name;
  }
}

// --- round trips ----------------------------------------------------------------------------

TEST_F(Safetensors, RoundTripsEveryTypeAndShape) {
  const std::vector<Q::Shape> shapes = {{}, {0, 3}, {5}, {2, 3}, {3, 0}, {1, 1, 7}};
  std::vector<std::vector<std::byte>> storage;
  std::vector<std::pair<std::string, Q::TensorView>> tensors;
  for (const Q::ScalarType type : kAllTypes) {
    for (std::size_t s = 0; s < shapes.size(); ++s) {
      std::int64_t count = 1;
      for (const auto dim : shapes[s])
        count *= dim;
      std::vector<std::byte> bytes(static_cast<std::size_t>(count) * Q::element_size(type));
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        bytes[i] =
            static_cast<std::byte>((i * 37 + s * 11 + static_cast<std::size_t>(type)) & 0xFF);
      }
      storage.push_back(std::move(bytes));
      tensors.emplace_back(std::string(Q::to_safetensors_name(type)) + "/" + std::to_string(s),
                           Q::TensorView(storage.back().data(), type, shapes[s]));
    }
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "é ü ✓"}};
  const fs::path path = dir_ / "all.safetensors";
  Q::write_safetensors(path, tensors, metadata);

  const auto file = Q::SafetensorsFile::open(path);
  EXPECT_EQ(file.metadata(), metadata);
  EXPECT_EQ(file.header().data_offset % 8, 0u) << "data must start 8-byte aligned";
  ASSERT_EQ(file.entries().size(), tensors.size());
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, view] = tensors[i];
    const Q::SafetensorsEntry* entry = file.find(name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_EQ(entry->type, view.type) << name;
    EXPECT_EQ(entry->shape, view.shape) << name;
    EXPECT_EQ(entry->begin, offset) << name << ": tensors are written in the order given";
    offset = entry->end;
    const Q::TensorView read = file.view(name);
    EXPECT_EQ(read.type, view.type);
    EXPECT_EQ(read.shape, view.shape);
    const auto bytes = file.bytes(*entry);
    ASSERT_EQ(bytes.size(), storage[i].size()) << name;
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), storage[i].begin())) << name;
  }
}

TEST_F(Safetensors, WritesTheCanonicalLayout) {
  const float values[] = {1.0f, -2.0f};
  const fs::path path = dir_ / "w.safetensors";
  Q::write_safetensors(path, {{"w", Q::TensorView(values)}}, {{"k", "v"}});
  const std::string json =
      R"({"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  std::string data(8, '\0');
  std::memcpy(data.data(), values, 8);
  EXPECT_EQ(read_all(path), file_bytes(padded, data));
}

TEST_F(Safetensors, EmptyFileWithoutTensorsRoundTrips) {
  const fs::path path = dir_ / "empty.safetensors";
  Q::write_safetensors(path, {});
  const auto file = Q::SafetensorsFile::open(path);
  EXPECT_TRUE(file.entries().empty());
  EXPECT_TRUE(file.metadata().empty());
  EXPECT_EQ(file.header().data_size, 0u);
}

TEST_F(Safetensors, ParsesFromMemoryWithTheDisplayName) {
  const std::string bytes = file_bytes(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                                       std::string("\x01\x02", 2));
  const auto header = Q::parse_safetensors_header(std::as_bytes(std::span(bytes)), "mem");
  ASSERT_EQ(header.entries.size(), 1u);
  EXPECT_EQ(header.entries[0].type, Q::ScalarType::uint8);
  EXPECT_EQ(header.data_size, 2u);
  expect_error(
      [&] { Q::parse_safetensors_header(std::as_bytes(std::span(bytes)).first(4), "mem"); },
      {"mem: "});
}

TEST_F(Safetensors, MissingTensorAndMissingFileNameTheFile) {
  const fs::path path = dir_ / "one.safetensors";
  Q::write_safetensors(path, {{"a", Q::TensorView(nullptr, Q::ScalarType::int8, {0})}});
  const auto file = Q::SafetensorsFile::open(path);
  EXPECT_EQ(file.find("zz"), nullptr);
  expect_error([&] { file.view("zz"); }, {"one.safetensors", "\"zz\"", "\"a\""});
  expect_error([&] { Q::SafetensorsFile::open(dir_ / "nope.safetensors"); },
               {"nope.safetensors", "cannot open"});
  expect_error([&] { Q::SafetensorsFile::open(dir_); }, {dir_.string(), "not a regular file"});
  const fs::path fifo = dir_ / "fifo.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error([&] { Q::SafetensorsFile::open(fifo); }, {"fifo.safetensors", "not a regular file"});
}

TEST_F(Safetensors, DtypeNamesMapBothWays) {
  for (const Q::ScalarType type : kAllTypes) {
    EXPECT_EQ(Q::scalar_type_from_safetensors_name(Q::to_safetensors_name(type)), type);
  }
  EXPECT_EQ(Q::to_safetensors_name(Q::ScalarType::boolean), "BOOL");
  EXPECT_EQ(Q::to_safetensors_name(Q::ScalarType::bfloat16), "BF16");
  EXPECT_FALSE(Q::scalar_type_from_safetensors_name("F8_E4M3").has_value());
  EXPECT_FALSE(Q::scalar_type_from_safetensors_name("f32").has_value());
}

// --- bad input: one test per rule -----------------------------------------------------------

TEST_F(Safetensors, RejectsTruncatedFile) {
  const fs::path path = write_raw("short.safetensors", std::string("\x05\0\0\0\0", 5));
  expect_error([&] { Q::SafetensorsFile::open(path); },
               {"short.safetensors", "file is 5 bytes", "expected at least 8"});
  const fs::path empty = write_raw("empty.safetensors", "");
  expect_error([&] { Q::SafetensorsFile::open(empty); }, {"empty.safetensors", "0 bytes"});
}

TEST_F(Safetensors, RejectsHeaderLengthPastTheEnd) {
  const fs::path path = write_raw("bad.safetensors", file_bytes("{}", "", 100));
  expect_error([&] { Q::SafetensorsFile::open(path); },
               {"bad.safetensors", "header length 100", "past the end", "expected at most 2"});
}

TEST_F(Safetensors, RejectsHeaderOver100MB) {
  const fs::path path = write_raw("bad.safetensors", file_bytes("{}", "", 100'000'001));
  expect_error([&] { Q::SafetensorsFile::open(path); }, {"bad.safetensors", "100000001", "100 MB"});
}

TEST_F(Safetensors, RejectsInvalidJson) {
  expect_bad(R"({"w": {"dtype": "F32",)", "", {"not valid JSON"});
  expect_bad(R"({"w": 1} trailing)", "", {"not valid JSON"});
}

TEST_F(Safetensors, RejectsInvalidUtf8) {
  expect_bad("{\"w\xff\":{}}", "", {"not valid UTF-8", "0xFF", "offset 3"});
  expect_bad("{\"\xed\xa0\x80\":{}}", "", {"not valid UTF-8"});  // an encoded surrogate
  expect_bad("{\"\xc0\xaf\":{}}", "", {"not valid UTF-8"});      // an overlong '/'
}

TEST_F(Safetensors, RejectsHeaderThatIsNotAnObject) {
  expect_bad("[1, 2]", "", {"header is a JSON array", "expected an object"});
  expect_bad("\"text\"", "", {"header is a JSON string"});
}

TEST_F(Safetensors, RejectsUnknownDtype) {
  expect_bad(R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "ab",
             {"tensor \"w\"", "unknown dtype \"F8_E4M3\"", "expected one of F64, F32"});
  expect_bad(R"({"w":{"dtype":7,"shape":[2],"data_offsets":[0,2]}})", "ab",
             {"tensor \"w\"", "dtype is number 7"});
  expect_bad(R"({"w":{"shape":[2],"data_offsets":[0,2]}})", "ab",
             {"tensor \"w\"", "missing \"dtype\""});
}

TEST_F(Safetensors, RejectsSizeThatDisagreesWithOffsets) {
  const std::string message = expect_bad(
      R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(12, '\0'), {});
  EXPECT_NE(message.find(": tensor \"w\": data_offsets [0, 12] hold 12 bytes but F32 [2, 2] "
                         "needs 16"),
            std::string::npos)
      << message;
}

TEST_F(Safetensors, RejectsOverlappingOffsets) {
  expect_bad(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
             R"("b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})",
             std::string(12, '\0'), {"tensor \"b\"", "overlap tensor \"a\"", "begin at 8"});
  expect_bad(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
             R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
             std::string(4, '\0'), {"tensor \"b\"", "overlap"});
}

TEST_F(Safetensors, RejectsHoles) {
  expect_bad(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
             R"("b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})",
             std::string(12, '\0'), {"tensor \"b\"", "hole of 4 bytes", "tensor \"a\""});
  expect_bad(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})", std::string(6, '\0'),
             {"tensor \"a\"", "hole of 2 bytes after the start"});
  expect_bad(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", std::string(6, '\0'),
             {"holds 6 bytes", "cover only 4"});
}

TEST_F(Safetensors, AcceptsOutOfOrderListingThatTilesExactly) {
  const std::string header = R"({"z":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("a":{"dtype":"U16","shape":[1],"data_offsets":[4,6]},)"
                             R"("empty":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},)"
                             R"("m":{"dtype":"I8","shape":[2],"data_offsets":[2,4]}})";
  const fs::path path = write_raw("ok.safetensors", file_bytes(header, "abcdef"));
  const auto file = Q::SafetensorsFile::open(path);
  std::vector<std::string> order;
  for (const auto& entry : file.entries())
    order.push_back(entry.name);
  EXPECT_EQ(order, (std::vector<std::string>{"z", "empty", "m", "a"}));
  const auto bytes = file.bytes(*file.find("a"));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "ef");
}

TEST_F(Safetensors, RejectsDuplicateNames) {
  expect_bad(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
             R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
             "ab", {"tensor \"w\"", "appears twice"});
  expect_bad(R"({"w":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})", "a",
             {"tensor \"w\"", "key \"dtype\" appears twice"});
  expect_bad(R"({"__metadata__":{"k":"1","k":"2"}})", "", {"__metadata__", "\"k\" appears twice"});
  expect_bad(R"({"__metadata__":{},"__metadata__":{}})", "", {"\"__metadata__\" appears twice"});
}

TEST_F(Safetensors, RejectsOffsetsPastTheEnd) {
  expect_bad(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(4, '\0'),
             {"tensor \"w\"", "data_offsets [0, 8] run past the end", "holds 4 bytes"});
  expect_bad(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[9,9]}})", "",
             {"tensor \"w\"", "past the end"});
  expect_bad(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[4,2]}})", "",
             {"tensor \"w\"", "end before they begin"});
  expect_bad(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0]}})", "ab",
             {"tensor \"w\"", "data_offsets is array [0]", "[begin, end]"});
  expect_bad(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,-2]}})", "ab",
             {"tensor \"w\"", "data_offsets is array"});
}

TEST_F(Safetensors, RejectsShapeProductOverflow) {
  expect_bad(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "",
             {"tensor \"w\"", "more elements than 2^63 - 1"});
  expect_bad(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}})", "",
             {"tensor \"w\"", "more than 2^64 bytes"});
  expect_bad(R"({"w":{"dtype":"U8","shape":[18446744073709551615,0],"data_offsets":[0,0]}})", "",
             {"tensor \"w\"", "expected at most 2^63 - 1"});
  expect_bad(R"({"w":{"dtype":"U8","shape":[1e30],"data_offsets":[0,0]}})", "",
             {"tensor \"w\"", "expected non-negative integers"});
}

TEST_F(Safetensors, RejectsNegativeDimensions) {
  expect_bad(R"({"w":{"dtype":"U8","shape":[2,-1],"data_offsets":[0,0]}})", "",
             {"tensor \"w\"", "negative dimension -1"});
  expect_bad(R"({"w":{"dtype":"U8","shape":[2.5],"data_offsets":[0,0]}})", "",
             {"tensor \"w\"", "number 2.5"});
  expect_bad(R"({"w":{"dtype":"U8","shape":3,"data_offsets":[0,3]}})", "abc",
             {"tensor \"w\"", "shape is number 3"});
}

TEST_F(Safetensors, RejectsMetadataThatIsNotAStringMap) {
  expect_bad(R"({"__metadata__":{"k":1}})", "",
             {"__metadata__", "\"k\"", "number 1", "expected a string"});
  expect_bad(R"({"__metadata__":["a"]})", "", {"__metadata__ is array"});
  expect_bad(R"({"__metadata__":{"k":{"nested":"x"}}})", "", {"__metadata__", "object"});
}

TEST_F(Safetensors, RejectsEntryThatIsNotAnObject) {
  expect_bad(R"({"w":[1,2]})", "", {"tensor \"w\"", "entry is array"});
}

// --- writer ---------------------------------------------------------------------------------

TEST_F(Safetensors, StreamsTensorsOneAtATime) {
  const fs::path path = dir_ / "stream.safetensors";
  const std::vector<std::byte> a(6, std::byte{1});
  const std::vector<std::byte> b(8, std::byte{2});
  {
    Q::SafetensorsWriter writer(path,
                                {{"a", Q::ScalarType::int16, {3}},
                                 {"z", Q::ScalarType::float32, {0}},
                                 {"b", Q::ScalarType::float64, {1}}},
                                {{"k", "v"}});
    EXPECT_EQ(writer.next_tensor(), "a");
    writer.write("a", a);
    EXPECT_FALSE(fs::exists(path)) << "nothing appears before commit";
    writer.write("z", std::span<const std::byte>());
    EXPECT_EQ(writer.next_tensor(), "b");
    writer.append(std::span(b).first(3));  // b in two pieces
    EXPECT_EQ(writer.next_tensor(), "b");
    writer.append(std::span(b).subspan(3));
    EXPECT_EQ(writer.next_tensor(), std::nullopt);
    writer.commit();
  }
  const auto file = Q::SafetensorsFile::open(path);
  ASSERT_EQ(file.entries().size(), 3u);
  EXPECT_EQ(file.bytes(*file.find("b")).size(), 8u);
  EXPECT_EQ(file.bytes(*file.find("b"))[7], std::byte{2});
  EXPECT_EQ(listing(), std::vector<std::string>{"stream.safetensors"}) << "no temporary left";
}

TEST_F(Safetensors, WriterDoesNotReplaceAnExistingFile) {
  const fs::path path = write_raw("out.safetensors", "precious");
  const std::int8_t values[] = {1};
  const std::vector<std::pair<std::string, Q::TensorView>> tensors = {
      {"w", Q::TensorView(values, Q::ScalarType::int8, {1})}};
  expect_error(
      [&] { Q::write_safetensors(path, tensors); },
      {"out.safetensors", "already exists (expected a new path, or the overwrite option)"});
  EXPECT_EQ(read_all(path), "precious");
  EXPECT_EQ(listing(), std::vector<std::string>{"out.safetensors"});

  Q::write_safetensors(path, tensors, {}, /*overwrite=*/true);
  EXPECT_EQ(Q::SafetensorsFile::open(path).entries().size(), 1u);
  EXPECT_EQ(listing(), std::vector<std::string>{"out.safetensors"});
}

TEST_F(Safetensors, WriterDoesNotReplaceAFileThatAppearsBeforeCommit) {
  const fs::path path = dir_ / "race.safetensors";
  Q::SafetensorsWriter writer(path, {});
  write_raw("race.safetensors", "someone else's");
  expect_error([&] { writer.commit(); }, {"race.safetensors", "already exists"});
  EXPECT_EQ(read_all(path), "someone else's");
  EXPECT_EQ(listing(), std::vector<std::string>{"race.safetensors"});
}

TEST_F(Safetensors, FailedWriteLeavesNoTemporaryAndNoOutput) {
  const fs::path path = dir_ / "fail.safetensors";
  {
    Q::SafetensorsWriter writer(path, {{"a", Q::ScalarType::float32, {2}}});
    EXPECT_EQ(listing().size(), 1u) << "the temporary file exists while writing";
    EXPECT_EQ(listing()[0].rfind(".fail.safetensors.tmp-", 0), 0u) << listing()[0];
    const std::vector<std::byte> short_data(7);
    expect_error([&] { writer.write("a", short_data); },
                 {"fail.safetensors", "tensor \"a\"", "7 bytes given", "F32 [2] needs 8"});
    EXPECT_TRUE(listing().empty()) << "the error removed the temporary file";
    expect_error([&] { writer.commit(); }, {"abandoned"});
  }
  {
    Q::SafetensorsWriter writer(path, {{"a", Q::ScalarType::uint8, {1}}});
    // Destroyed without commit.
  }
  EXPECT_TRUE(listing().empty());
}

TEST_F(Safetensors, CommitWithoutAllTensorsIsAnError) {
  const fs::path path = dir_ / "part.safetensors";
  {
    Q::SafetensorsWriter writer(
        path, {{"a", Q::ScalarType::uint8, {2}}, {"b", Q::ScalarType::uint8, {2}}});
    writer.write("a", std::vector<std::byte>(2));
    expect_error([&] { writer.commit(); },
                 {"part.safetensors", "2 of 4 data bytes", "tensor \"b\" is next"});
  }
  EXPECT_TRUE(listing().empty());
}

TEST_F(Safetensors, WriterChecksOrderNamesAndViews) {
  const fs::path path = dir_ / "order.safetensors";
  const auto make = [&] {
    return Q::SafetensorsWriter(
        path, {{"a", Q::ScalarType::uint8, {1}}, {"b", Q::ScalarType::uint8, {1}}});
  };
  const std::vector<std::byte> one(1);
  {
    auto writer = make();
    expect_error([&] { writer.write("b", one); },
                 {"order.safetensors", "tensor \"b\"", "before tensor \"a\""});
  }
  {
    auto writer = make();
    writer.write("a", one);
    expect_error([&] { writer.write("a", one); }, {"tensor \"a\"", "already written"});
  }
  {
    auto writer = make();
    expect_error([&] { writer.write("x", one); }, {"tensor \"x\"", "not among the 2 tensors"});
  }
  {
    auto writer = make();
    const std::int8_t value = 1;
    expect_error([&] { writer.write("a", Q::TensorView(&value, Q::ScalarType::int8, {1})); },
                 {"tensor \"a\"", "I8 [1]", "expected U8 [1]"});
  }
  {
    auto writer = make();
    expect_error([&] { writer.append(std::vector<std::byte>(3)); }, {"past the", "2 bytes remain"});
  }
  EXPECT_TRUE(listing().empty());
}

TEST_F(Safetensors, WriterRejectsBadSpecs) {
  const fs::path path = dir_ / "spec.safetensors";
  expect_error(
      [&] {
        Q::SafetensorsWriter(path,
                             {{"a", Q::ScalarType::uint8, {1}}, {"a", Q::ScalarType::uint8, {1}}});
      },
      {"spec.safetensors", "tensor \"a\"", "given twice"});
  expect_error(
      [&] {
        Q::SafetensorsWriter(path, {{"__metadata__", Q::ScalarType::uint8, {1}}});
      },
      {"spec.safetensors", "reserved"});
  expect_error(
      [&] {
        Q::SafetensorsWriter(path, {{"n", Q::ScalarType::uint8, {2, -3}}});
      },
      {"spec.safetensors", "tensor \"n\"", "negative dimension -3"});
  expect_error(
      [&] {
        Q::SafetensorsWriter(path, {{"bad\xff", Q::ScalarType::uint8, {1}}});
      },
      {"spec.safetensors", "not valid UTF-8"});
  expect_error(
      [&] {
        Q::SafetensorsWriter(path, {}, {{"k", "\xc3"}});
      },
      {"spec.safetensors", "__metadata__ value", "not valid UTF-8"});
  expect_error(
      [&] {
        Q::write_safetensors(path, {{"v", Q::TensorView(nullptr, Q::ScalarType::uint8, {2})}});
      },
      {"tensor \"v\"", "no data"});
  expect_error([&] { Q::write_safetensors(dir_ / "missing-dir" / "x.safetensors", {}); },
               {"x.safetensors", "cannot create a temporary file"});
  expect_error([&] { Q::write_safetensors(dir_, {}, {}, true); }, {"is a directory"});
  EXPECT_TRUE(listing().empty());
}

TEST_F(Safetensors, NewFilesGetTheUmaskMode) {
  const mode_t mask = ::umask(022);
  ::umask(mask);
  const fs::path path = dir_ / "mode.safetensors";
  Q::write_safetensors(path, {});
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0666 & ~mask);
}

TEST_F(Safetensors, FileAndViewsSurviveAMove) {
  const std::uint16_t values[] = {7, 8, 9};
  const fs::path path = dir_ / "move.safetensors";
  Q::write_safetensors(path, {{"v", Q::TensorView(values, Q::ScalarType::uint16, {3})}});
  auto first = Q::SafetensorsFile::open(path);
  const Q::TensorView view = first.view("v");
  Q::SafetensorsFile second = std::move(first);
  std::uint16_t last;
  std::memcpy(&last, static_cast<const std::byte*>(view.data) + 4, 2);
  EXPECT_EQ(last, 9);
  EXPECT_EQ(second.view("v").data, view.data);
}

}  // namespace
