// Google Benchmark of lucidq's ggml block quantizers and decoders against memcpy, on one thread
// by default: bytes_per_second counts the float32 side (input of quantize, output of decode).
//
//   bench_ggml [--size=256M] [--threads=1] [--types=q8_0,q4_K,...] [google-benchmark flags]
//
// bench/ggml_compare.py runs it and prints the table (ratios to memcpy, the 1 GB/s target).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lucid/quantization.hpp"

namespace Q = lucid::quantization;

namespace {

std::vector<float> weights_like(std::size_t count) {
  std::vector<float> v(count);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (auto& x : v)
    x = normal(rng);
  return v;
}

constexpr std::int64_t row_length = 4096;

void bench_memcpy(benchmark::State& state, std::int64_t bytes) {
  std::vector<char> src(static_cast<std::size_t>(bytes), 1);
  std::vector<char> dst(static_cast<std::size_t>(bytes), 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

void bench_quantize(benchmark::State& state, Q::GgmlType type, std::int64_t bytes, bool imatrix) {
  const std::int64_t rows = bytes / 4 / row_length;
  const auto x = weights_like(static_cast<std::size_t>(rows * row_length));
  std::vector<float> importance(row_length);
  for (std::int64_t c = 0; c < row_length; ++c)
    importance[static_cast<std::size_t>(c)] = 1.0f + static_cast<float>(c % 7);
  std::vector<unsigned char> out(
      static_cast<std::size_t>(rows * Q::ggml_row_size(type, row_length)), 0);
  for (auto _ : state) {
    Q::ggml_quantize_rows(type, x.data(), out.data(), rows, row_length,
                          imatrix ? importance.data() : nullptr);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * row_length * 4);
}

void bench_dequantize(benchmark::State& state, Q::GgmlType type, std::int64_t bytes) {
  const std::int64_t rows = bytes / 4 / row_length;
  const auto x = weights_like(static_cast<std::size_t>(rows * row_length));
  std::vector<unsigned char> q(static_cast<std::size_t>(rows * Q::ggml_row_size(type, row_length)));
  Q::ggml_quantize_rows(type, x.data(), q.data(), rows, row_length, nullptr);
  std::vector<float> out(x.size(), 0.0f);
  for (auto _ : state) {
    Q::ggml_dequantize_rows(type, q.data(), out.data(), rows, row_length);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * row_length * 4);
}

std::int64_t parse_size(const std::string& text) {
  const char unit = text.back();
  const double value = std::stod(text);
  if (unit == 'K') return static_cast<std::int64_t>(value * (1 << 10));
  if (unit == 'M') return static_cast<std::int64_t>(value * (1 << 20));
  if (unit == 'G') return static_cast<std::int64_t>(value * (1 << 30));
  return static_cast<std::int64_t>(value);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string size = "256M";
  std::string types = "q8_0,q4_0,q4_1,q5_0,q5_1,q2_K,q3_K,q4_K,q5_K,q6_K,iq4_nl,f16,bf16";
  int threads = 1;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--size=", 0) == 0) {
      size = arg.substr(7);
    } else if (arg.rfind("--types=", 0) == 0) {
      types = arg.substr(8);
    } else if (arg.rfind("--threads=", 0) == 0) {
      threads = std::stoi(arg.substr(10));
    } else {
      rest.push_back(argv[i]);
    }
  }
  Q::set_num_threads(threads);
  const std::int64_t bytes = parse_size(size);
  benchmark::RegisterBenchmark(("memcpy/" + size).c_str(), bench_memcpy, bytes)->UseRealTime();
  for (const std::string& name : split(types)) {
    const auto type = Q::ggml_type_from_name(name);
    if (!type || !Q::ggml_can_quantize(*type)) {
      std::fprintf(stderr, "bench_ggml: unknown or unsupported type %s\n", name.c_str());
      return 2;
    }
    benchmark::RegisterBenchmark(("quantize/" + name + "/" + size).c_str(), bench_quantize, *type,
                                 bytes, false)
        ->UseRealTime();
    if (*type != Q::GgmlType::Q8_0 && *type != Q::GgmlType::F16 && *type != Q::GgmlType::BF16) {
      benchmark::RegisterBenchmark(("quantize_imatrix/" + name + "/" + size).c_str(),
                                   bench_quantize, *type, bytes, true)
          ->UseRealTime();
    }
    benchmark::RegisterBenchmark(("dequantize/" + name + "/" + size).c_str(), bench_dequantize,
                                 *type, bytes)
        ->UseRealTime();
  }
  int count = static_cast<int>(rest.size());
  benchmark::Initialize(&count, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
