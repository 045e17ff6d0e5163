// Hostile files and faults: deep JSON nesting (also on a 256 KiB thread stack), FIFOs, the
// safetensors header rule, inputs that shrink while mapped, unfinished outputs removed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/checkpoint_algorithms.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf.hpp"
#include "lucid/quantization/gguf_quantize.hpp"
#include "lucid/quantization/imatrix.hpp"
#include "lucid/quantization/recipe.hpp"
#include "lucid/quantization/safetensors.hpp"
#include "lucid/quantization/unfinished_outputs.hpp"
#include "test_support.hpp"

namespace Q = lucid::quantization;
namespace fs = std::filesystem;

namespace {

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("lucidq-hostile-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The names in the test folder, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

// Runs `body` on a thread whose stack is 256 KiB (a small worker or embedding host's
// stack) and returns the message of the Error it throws ("" when it throws none).
std::string error_on_small_stack(const std::function<void()>& body) {
  struct Call {
    const std::function<void()>* body;
    std::string message;
    bool other = false;
  } call{&body, {}};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t thread;
  const auto run = [](void* arg) -> void* {
    auto* c = static_cast<Call*>(arg);
    try {
      (*c->body)();
    } catch (const Q::Error& e) {
      c->message = e.what();
    } catch (...) {
      c->other = true;
    }
    return nullptr;
  };
  EXPECT_EQ(pthread_create(&thread, &attr, run, &call), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_FALSE(call.other) << "an exception other than lucid::quantization::Error";
  return call.message;
}

std::string nested_arrays(std::size_t levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

// A safetensors file's bytes: the 8-byte length of `header`, `header`, then `data` bytes.
std::vector<std::byte> safetensors_bytes(const std::string& header, std::size_t data = 0) {
  std::vector<std::byte> bytes(8 + header.size() + data, std::byte{0});
  const std::uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<std::byte>((length >> (8 * i)) & 0xFF);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

// Calls `body`, which must return without blocking on the FIFO `fifo` for 10 s; a reader
// that blocks is released by opening the FIFO's writing end, and the test fails.
void without_blocking(const fs::path& fifo, const std::function<void()>& body) {
  auto done = std::async(std::launch::async, body);
  if (done.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    ADD_FAILURE() << "blocked on the FIFO " << fifo;
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  done.get();
}

// A float32 checkpoint of `count` tensors of 256 x 1024 (1 MiB each).
void write_float_checkpoint(const fs::path& path, int count) {
  std::vector<float> values(256 * 1024);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 251) * 0.01f - 1.0f;
  std::vector<std::pair<std::string, Q::TensorView>> tensors;
  for (int t = 0; t < count; ++t) {
    tensors.emplace_back("layer" + std::to_string(t) + ".weight",
                         Q::TensorView(values.data(), Q::ScalarType::float32, {256, 1024}));
  }
  Q::write_safetensors(path, tensors);
}

// A progress callback that truncates `path` to 4 KiB after the first tensor.
Q::ProgressCallback truncate_after_first(const fs::path& path) {
  return [path](const Q::CheckpointProgress& p) {
    if (p.tensors_done == 1) fs::resize_file(path, 4096);
  };
}

}  // namespace

// --- deep nesting ---------------------------------------------------------------------------

TEST(DeepNesting, SafetensorsHeaderOfAMillionLevelsIsRefusedOnASmallStack) {
  for (const std::string& header :
       {"{\"a\":" + nested_arrays(1'000'000) + "}", nested_arrays(1'000'000),
        "{\"__metadata__\":" + nested_arrays(1'000'000) + "}"}) {
    const std::vector<std::byte> bytes = safetensors_bytes(header);
    const std::string message =
        error_on_small_stack([&] { Q::parse_safetensors_header(bytes, "deep.safetensors"); });
    EXPECT_NE(message.find("deep.safetensors: header nests arrays or objects more than 127"),
              std::string::npos)
        << message.substr(0, 300);
    EXPECT_LT(message.size(), 300u);
  }
}

TEST(DeepNesting, ValuesBelowTheLimitAreQuotedShortly) {
  const std::string header = "{\"a\":" + nested_arrays(120) + "}";
  const std::string message = error_on_small_stack(
      [&] { Q::parse_safetensors_header(safetensors_bytes(header), "deep.safetensors"); });
  EXPECT_NE(message.find("tensor \"a\": entry is array [[[[[...]]]]]"), std::string::npos)
      << message;
  EXPECT_LT(message.size(), 200u);
}

TEST(DeepNesting, RecipeValueOfAMillionLevelsIsQuotedShortlyOnASmallStack) {
  const std::string text = "{\"rules\": [" + nested_arrays(1'000'000) + "]}";
  const std::string message = error_on_small_stack([&] { Q::parse_recipe(text, "r.json"); });
  EXPECT_NE(message.find("r.json"), std::string::npos) << message.substr(0, 300);
  EXPECT_NE(message.find("[[[["), std::string::npos) << message.substr(0, 300);
  EXPECT_LT(message.size(), 300u);
}

// --- the safetensors header rule ------------------------------------------------------------

TEST(SafetensorsHeaderRule, JsonWhitespacePadsButNulAndByteOrderMarkAreRefused) {
  const std::string entry = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  EXPECT_EQ(Q::parse_safetensors_header(safetensors_bytes(entry + "    ", 2), "m").entries.size(),
            1u);
  EXPECT_EQ(Q::parse_safetensors_header(safetensors_bytes(" \t\r\n" + entry + "\n\t ", 2), "m")
                .entries.size(),
            1u);
  EXPECT_ERROR_CONTAINS(
      Q::parse_safetensors_header(safetensors_bytes(entry + std::string(4, '\0'), 2), "m"),
      "m: header holds a NUL byte at header offset " + std::to_string(entry.size()));
  EXPECT_ERROR_CONTAINS(
      Q::parse_safetensors_header(safetensors_bytes(entry + std::string("\0garbage", 8), 2), "m"),
      "NUL byte");
  EXPECT_ERROR_CONTAINS(
      Q::parse_safetensors_header(safetensors_bytes("\xEF\xBB\xBF" + entry, 2), "m"),
      "m: header starts with a UTF-8 byte-order mark");
  EXPECT_ERROR_CONTAINS(Q::parse_safetensors_header(safetensors_bytes(entry + " x", 2), "m"),
                        "header is not valid JSON");
}

// --- FIFOs and other non-regular inputs -----------------------------------------------------

TEST_F(HostileFiles, AFifoIsRefusedAtOnceByEveryReader) {
  const fs::path fifo = dir_ / "model.bin";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string kind = "is not a regular file (it is a FIFO";
  without_blocking(fifo, [&] { EXPECT_FALSE(Q::is_gguf_path(fifo)); });
  without_blocking(fifo, [&] {
    EXPECT_ERROR_CONTAINS(Q::statistics_file_kind(fifo), "model.bin: " + kind);
    EXPECT_ERROR_CONTAINS(Q::load_imatrix(fifo), "model.bin: " + kind);
    EXPECT_ERROR_CONTAINS(Q::GgufFile::open(fifo), "model.bin: " + kind);
    EXPECT_ERROR_CONTAINS(Q::SafetensorsFile::open(fifo), "model.bin: " + kind);
    EXPECT_ERROR_CONTAINS(Q::quantize_checkpoint(fifo, dir_ / "q.safetensors", {}), kind);
    EXPECT_ERROR_CONTAINS(Q::quantize_gguf(fifo, dir_ / "q.gguf", {}), kind);
    EXPECT_ERROR_CONTAINS(Q::dequantize_checkpoint(fifo, dir_ / "d.safetensors", {}), kind);
    EXPECT_ERROR_CONTAINS(Q::dequantize_gguf(fifo, dir_ / "d.safetensors", {}), kind);
  });
  EXPECT_ERROR_CONTAINS(Q::SafetensorsFile::open(dir_), "(it is a directory; expected");
  EXPECT_EQ(listing(), std::vector<std::string>{"model.bin"});
}

// --- inputs that shrink while mapped --------------------------------------------------------

TEST_F(HostileFiles, AMappedFileThatShrinksReadsAsZerosFromAWorkerThreadAndIsReported) {
  const fs::path path = dir_ / "m.safetensors";
  write_float_checkpoint(path, 8);
  const Q::SafetensorsFile file = Q::SafetensorsFile::open(path);
  file.check_intact();
  fs::resize_file(path, 4096);
  double sum = 0;
  std::thread reader([&] {  // would die of SIGBUS unguarded
    for (const Q::SafetensorsEntry& entry : file.entries()) {
      const auto bytes = file.bytes(entry);
      for (std::size_t i = 0; i < bytes.size(); i += 512)
        sum += static_cast<double>(bytes[i]);
    }
  });
  reader.join();
  EXPECT_GE(sum, 0.0);
  EXPECT_ERROR_CONTAINS(file.check_intact(),
                        path.string() + ": the file shrank while it was being read (" +
                            std::to_string(file.header().data_offset + file.header().data_size) +
                            " bytes when it was opened, 4096 now");
}

TEST_F(HostileFiles, JobsOnAShrinkingInputFailCleanlyAndLeaveNothing) {
  const fs::path input = dir_ / "in.safetensors";
  write_float_checkpoint(input, 6);
  Q::QuantizeCheckpointOptions quantize;
  quantize.progress = truncate_after_first(input);
  EXPECT_ERROR_CONTAINS(Q::quantize_checkpoint(input, dir_ / "q.safetensors", quantize),
                        input.string() + ": the file shrank while it was being read");
  EXPECT_EQ(listing(), std::vector<std::string>{"in.safetensors"});

  write_float_checkpoint(dir_ / "in2.safetensors", 6);
  Q::GgufQuantizeOptions gguf;
  gguf.mixture.file_type = Q::LlamaFileType::Q8_0;
  gguf.progress = truncate_after_first(dir_ / "in2.safetensors");
  EXPECT_ERROR_CONTAINS(Q::quantize_gguf(dir_ / "in2.safetensors", dir_ / "q.gguf", gguf),
                        "in2.safetensors: the file shrank while it was being read");

  write_float_checkpoint(dir_ / "in3.safetensors", 6);
  Q::quantize_checkpoint(dir_ / "in3.safetensors", dir_ / "q3.safetensors", {});
  Q::DequantizeCheckpointOptions dequantize;
  dequantize.progress = truncate_after_first(dir_ / "q3.safetensors");
  EXPECT_ERROR_CONTAINS(
      Q::dequantize_checkpoint(dir_ / "q3.safetensors", dir_ / "d.safetensors", dequantize),
      "q3.safetensors: the file shrank while it was being read");
  EXPECT_EQ(listing(), (std::vector<std::string>{"in.safetensors", "in2.safetensors",
                                                 "in3.safetensors", "q3.safetensors"}));
}

// --- unfinished outputs ---------------------------------------------------------------------

TEST_F(HostileFiles, RemoveUnfinishedOutputsUnlinksTheTemporaryFilesOnly) {
  Q::write_safetensors(dir_ / "done.safetensors", {});
  Q::SafetensorsWriter writer(dir_ / "out.safetensors", {{"a", Q::ScalarType::uint8, {4}}});
  ASSERT_EQ(listing().size(), 2u);  // done.safetensors and the temporary file
  EXPECT_NE(listing()[0].find(".out.safetensors.tmp-"), std::string::npos) << listing()[0];
  EXPECT_EQ(Q::remove_unfinished_outputs(), 1);
  EXPECT_EQ(listing(), std::vector<std::string>{"done.safetensors"});
  EXPECT_EQ(Q::remove_unfinished_outputs(), 0);
}
