// Google Benchmark of lucidq's quantize / dequantize / fake_quantize / ranges / requantize
// against memcpy and a plain read at the same working sets, on a chosen set of thread counts.
//
//   bench_quantize [--sizes=32K,512K,8M,256M] [--threads=1,2] [google-benchmark flags]
//
// The working set of one call is the bytes it reads plus the bytes it writes;
// each benchmark reports items_per_second (elements) and bytes_per_second (read + written).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lucid/quantization.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <chrono>
#include <thread>

namespace Q = lucid::quantization;

namespace {

// A buffer that is touched before timing (so page faults stay out of the loop).
template <class T>
std::vector<T> touched(std::size_t count, T value) {
  return std::vector<T>(count, value);
}

std::vector<float> random_floats(std::size_t count) {
  std::vector<float> v(count);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& x : v)
    x = normal(rng);
  return v;
}

void finish(benchmark::State& state, std::int64_t elements, std::int64_t bytes_per_call) {
  state.SetItemsProcessed(state.iterations() * elements);
  state.SetBytesProcessed(state.iterations() * bytes_per_call);
}

// memcpy split over `threads` (the physical limit for streaming kernels).
void parallel_memcpy(void* dst, const void* src, std::size_t bytes, int threads) {
  if (threads == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), count = omp_get_num_threads();
    const std::size_t begin = bytes / count * t / 64 * 64;
    const std::size_t end = t + 1 == count ? bytes : bytes / count * (t + 1) / 64 * 64;
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                end - begin);
  }
#else
  (void)threads;
  std::memcpy(dst, src, bytes);
#endif
}

// Scans every byte with glibc's memchr (vectorised for the CPU, like memcpy) for a
// byte that is absent: the read-bandwidth limit for reductions.
const void* parallel_read(const unsigned char* bytes, std::size_t count, int threads) {
  if (threads == 1) return std::memchr(bytes, 0xff, count);
  const void* found = nullptr;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), parts = omp_get_num_threads();
    const std::size_t begin = count / parts * t;
    const std::size_t end = t + 1 == parts ? count : count / parts * (t + 1);
    if (const void* hit = std::memchr(bytes + begin, 0xff, end - begin)) {
#pragma omp critical
      found = hit;
    }
  }
#endif
  return found;
}

using Body = void (*)(benchmark::State&, std::int64_t working_set, int threads);

void bench_memcpy(benchmark::State& state, std::int64_t ws, int threads) {
  const auto bytes = static_cast<std::size_t>(ws / 2);
  auto src = touched<char>(bytes, 1), dst = touched<char>(bytes, 0);
  for (auto _ : state) {
    parallel_memcpy(dst.data(), src.data(), bytes, threads);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  finish(state, static_cast<std::int64_t>(bytes), 2 * static_cast<std::int64_t>(bytes));
}

void bench_read(benchmark::State& state, std::int64_t ws, int threads) {
  const auto bytes = static_cast<std::size_t>(ws);
  auto src = touched<unsigned char>(bytes, 3);
  for (auto _ : state)
    benchmark::DoNotOptimize(parallel_read(src.data(), bytes, threads));
  finish(state, ws, ws);
}

// f32 -> qint8, per tensor, into a reused buffer (n elements: 4 bytes read, 1 written).
void bench_quantize_into(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t n = ws / 5;
  const auto x = random_floats(static_cast<std::size_t>(n));
  const auto qp = Q::QParams::per_tensor(0.02f, 3, Q::qint8, Q::per_tensor_affine);
  auto out = touched<std::uint8_t>(static_cast<std::size_t>(n), 0);
  for (auto _ : state) {
    Q::quantize_into(Q::TensorView(x), qp, out);
    benchmark::ClobberMemory();
  }
  finish(state, n, 5 * n);
}

// The allocating API, as users (and PyTorch's quantize_per_tensor) call it.
void bench_quantize_alloc(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t n = ws / 5;
  const auto x = random_floats(static_cast<std::size_t>(n));
  const auto qp = Q::QParams::per_tensor(0.02f, 3, Q::qint8, Q::per_tensor_affine);
  for (auto _ : state)
    benchmark::DoNotOptimize(Q::quantize(Q::TensorView(x), qp));
  finish(state, n, 5 * n);
}

// f32 [64, n / 64] -> qint8 per channel along axis 0 (PyTorch's weight layout).
void bench_quantize_per_channel(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t channels = 64;
  const std::int64_t n = ws / 5 / channels * channels;
  const auto x = random_floats(static_cast<std::size_t>(n));
  const auto qp = Q::QParams::per_channel(std::vector<float>(channels, 0.02f),
                                          std::vector<std::int32_t>(channels, 0), 0, Q::qint8);
  const Q::TensorView view(x.data(), Q::ScalarType::float32, {channels, n / channels});
  for (auto _ : state)
    benchmark::DoNotOptimize(Q::quantize(view, qp));
  finish(state, n, 5 * n);
}

Q::QuantizedTensor int8_tensor(std::int64_t n) {
  const auto x = random_floats(static_cast<std::size_t>(n));
  return Q::quantize(Q::TensorView(x), Q::QParams::per_tensor(0.02f, 3, Q::qint8));
}

void bench_dequantize_into(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t n = ws / 5;
  const Q::QuantizedTensor q = int8_tensor(n);
  auto out = touched<float>(static_cast<std::size_t>(n), 0.0f);
  for (auto _ : state) {
    Q::dequantize_into(q, out);
    benchmark::ClobberMemory();
  }
  finish(state, n, 5 * n);
}

void bench_dequantize_alloc(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t n = ws / 5;
  const Q::QuantizedTensor q = int8_tensor(n);
  for (auto _ : state)
    benchmark::DoNotOptimize(Q::dequantize(q));
  finish(state, n, 5 * n);
}

void bench_fake_quantize_into(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t n = ws / 8;
  const auto x = random_floats(static_cast<std::size_t>(n));
  const auto qp = Q::QParams::per_tensor(0.02f, 3, Q::qint8);
  auto out = touched<float>(static_cast<std::size_t>(n), 0.0f);
  for (auto _ : state) {
    Q::fake_quantize_into(Q::TensorView(x), qp, out);
    benchmark::ClobberMemory();
  }
  finish(state, n, 8 * n);
}

void bench_fake_quantize_alloc(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t n = ws / 8;
  const auto x = random_floats(static_cast<std::size_t>(n));
  const auto qp = Q::QParams::per_tensor(0.02f, 3, Q::qint8);
  for (auto _ : state)
    benchmark::DoNotOptimize(Q::fake_quantize(Q::TensorView(x), qp));
  finish(state, n, 8 * n);
}

void bench_minmax(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t n = ws / 4;
  const auto x = random_floats(static_cast<std::size_t>(n));
  for (auto _ : state)
    benchmark::DoNotOptimize(Q::observe_range(Q::TensorView(x), Q::per_tensor_affine));
  finish(state, n, 4 * n);
}

// Per-channel min / max along the last axis of [n / 256, 256].
void bench_minmax_per_channel(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t channels = 256;
  const std::int64_t n = ws / 4 / channels * channels;
  const auto x = random_floats(static_cast<std::size_t>(n));
  const Q::TensorView view(x.data(), Q::ScalarType::float32, {n / channels, channels});
  for (auto _ : state)
    benchmark::DoNotOptimize(Q::observe_range(view, Q::per_channel_affine, -1));
  finish(state, n, 4 * n);
}

// int32 accumulators -> qint8 (4 bytes read, 1 written).
void bench_requantize(benchmark::State& state, std::int64_t ws, int) {
  const std::int64_t n = ws / 5;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < acc.size(); ++i)
    acc[i] = static_cast<std::int32_t>(i * 2654435761u) >> 12;
  const Q::TensorView view(acc.data(), Q::ScalarType::int32, {n});
  for (auto _ : state)
    benchmark::DoNotOptimize(Q::requantize(view, 1.0f / 4096, 2, Q::qint8));
  finish(state, n, 5 * n);
}

// Fused per-group (32 along the last axis) qparams + qint4 codes of a [n / 4096, 4096] matrix.
// int4 per_channel_symmetric groups of `group_size` along rows of 4096 (4.5 bytes / element).
void bench_per_group(benchmark::State& state, std::int64_t ws, std::int64_t group_size) {
  const std::int64_t row = 4096;
  const std::int64_t n = std::max<std::int64_t>(ws * 2 / 9 / row, 1) * row;
  const auto x = random_floats(static_cast<std::size_t>(n));
  const Q::TensorView view(x.data(), Q::ScalarType::float32, {n / row, row});
  for (auto _ : state)
    benchmark::DoNotOptimize(
        Q::quantize_per_group(view, Q::per_channel_symmetric, Q::qint4, 1, group_size));
  finish(state, n, n * 9 / 2);
}

void bench_quantize_per_group(benchmark::State& state, std::int64_t ws, int) {
  bench_per_group(state, ws, 32);
}

void bench_quantize_per_group_g128(benchmark::State& state, std::int64_t ws, int) {
  bench_per_group(state, ws, 128);
}

struct Case {
  const char* name;
  Body body;
};

const Case cases[] = {
    {"memcpy", bench_memcpy},
    {"read", bench_read},
    {"quantize_per_tensor_into", bench_quantize_into},
    {"quantize_per_tensor", bench_quantize_alloc},
    {"quantize_per_channel", bench_quantize_per_channel},
    {"dequantize_into", bench_dequantize_into},
    {"dequantize", bench_dequantize_alloc},
    {"fake_quantize_per_tensor_into", bench_fake_quantize_into},
    {"fake_quantize_per_tensor", bench_fake_quantize_alloc},
    {"minmax", bench_minmax},
    {"minmax_per_channel", bench_minmax_per_channel},
    {"requantize", bench_requantize},
    {"quantize_per_group_int4", bench_quantize_per_group},
    {"quantize_per_group_int4_g128", bench_quantize_per_group_g128},
};

std::int64_t parse_size(const std::string& text) {
  std::size_t used = 0;
  const double value = std::stod(text, &used);
  const std::string unit = text.substr(used);
  const double scale = unit == "K"   ? 1024.0
                       : unit == "M" ? 1048576.0
                       : unit == "G" ? 1073741824.0
                                     : 1.0;
  return static_cast<std::int64_t>(value * scale);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    parts.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

// Removes --name=value from argv and returns value (or `fallback`).
std::string take_flag(int& argc, char** argv, const std::string& name,
                      const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind(prefix, 0) == 0) {
      std::string value = std::string(argv[i]).substr(prefix.size());
      for (int j = i; j + 1 < argc; ++j)
        argv[j] = argv[j + 1];
      --argc;
      return value;
    }
  }
  return fallback;
}

// Time-stamp-counter ticks per second, calibrated against steady_clock over
// 200 ms (0 when there is no TSC). Cycles per element are reported in TSC
// (reference) cycles: with turbo the core may run faster than this clock.
double tsc_hz() {
#if defined(__x86_64__)
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned long long c0 = __rdtsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const unsigned long long c1 = __rdtsc();
  const auto t1 = std::chrono::steady_clock::now();
  return static_cast<double>(c1 - c0) / std::chrono::duration<double>(t1 - t0).count();
#else
  return 0.0;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const std::string sizes = take_flag(argc, argv, "sizes", "32K,512K,8M,256M");
  const std::string threads = take_flag(argc, argv, "threads", "1,2");
  const std::string only = take_flag(argc, argv, "ops", "");
  for (const std::string& t : split(threads)) {
    for (const std::string& s : split(sizes)) {
      for (const Case& c : cases) {
        if (!only.empty() &&
            ("," + only + ",").find("," + std::string(c.name) + ",") == std::string::npos)
          continue;
        const std::int64_t ws = parse_size(s);
        const int thread_count = std::stoi(t);
        benchmark::RegisterBenchmark((std::string(c.name) + "/ws:" + s + "/threads:" + t).c_str(),
                                     [c, ws, thread_count](benchmark::State& state) {
                                       Q::set_num_threads(thread_count);
                                       c.body(state, ws, thread_count);
                                     })
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("lucidq_isa", Q::to_string(Q::active_isa()));
  benchmark::AddCustomContext("lucidq_cpu_features", Q::cpu_features().describe());
  benchmark::AddCustomContext("tsc_hz", std::to_string(tsc_hz()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
