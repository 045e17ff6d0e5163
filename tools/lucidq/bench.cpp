// `lucidq bench`: a short speed check of quantize / dequantize / fake_quantize / min-max
// against memcpy at a few working sets (the full comparison is bench/compare.py).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "commands.hpp"
#include "lucid/quantization.hpp"
#include "print.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

struct BenchOptions {
  std::string sizes = "32K,8M";
  std::vector<int> threads;
  std::string isa;
  double seconds = 0.05;  // per repetition
};

std::int64_t parse_size(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw Q::Error("bench: size \"" + text + "\" is not a number (expected e.g. 32K, 8M, 1G)");
  }
  const std::string unit = text.substr(used);
  const double scale = unit.empty()  ? 1.0
                       : unit == "K" ? 1024.0
                       : unit == "M" ? 1048576.0
                       : unit == "G" ? 1073741824.0
                                     : 0.0;
  if (scale == 0.0 || value <= 0) {
    throw Q::Error("bench: size \"" + text + "\" (expected a positive number with K, M or G)");
  }
  return static_cast<std::int64_t>(value * scale);
}

// Median over 5 repetitions of calls per second, each repetition running >= `seconds`.
double calls_per_second(const std::function<void()>& call, double seconds) {
  call();  // warm-up: page faults, caches
  std::vector<double> rates;
  for (int r = 0; r < 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::int64_t calls = 0;
    double elapsed = 0;
    do {
      call();
      ++calls;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < seconds);
    rates.push_back(static_cast<double>(calls) / elapsed);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

void parallel_memcpy(void* dst, const void* src, std::size_t bytes, int threads) {
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int t = omp_get_thread_num(), parts = omp_get_num_threads();
    const std::size_t begin = bytes / parts * t / 64 * 64;
    const std::size_t end = t + 1 == parts ? bytes : bytes / parts * (t + 1) / 64 * 64;
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                end - begin);
  }
#else
  (void)threads;
  std::memcpy(dst, src, bytes);
#endif
}

// One row per operation at one working set (bytes read + written per call).
void bench_size(Table& table, std::int64_t ws, int threads, double seconds) {
  Q::set_num_threads(threads);
  const std::int64_t n = std::max<std::int64_t>(ws / 5, 16);
  std::vector<float> x(static_cast<std::size_t>(n));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (float& v : x)
    v = normal(rng);
  const Q::TensorView view(x);
  const Q::QParams qp = Q::QParams::per_tensor(0.02f, 0, Q::qint8);
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(n));
  std::vector<float> floats(static_cast<std::size_t>(n));
  const Q::QuantizedTensor q = Q::quantize(view, qp);
  const auto copy_bytes = static_cast<std::size_t>(ws / 2);
  std::vector<char> src(copy_bytes, 1), dst(copy_bytes, 0);

  const double memcpy_rate = calls_per_second(
      [&] { parallel_memcpy(dst.data(), src.data(), copy_bytes, threads); }, seconds);
  const double memcpy_gbs = memcpy_rate * 2.0 * static_cast<double>(copy_bytes) / 1e9;
  const std::string size_text = format_fixed(static_cast<double>(ws) / 1024, 0) + " KiB";
  table.add_row(
      {"memcpy", size_text, std::to_string(threads), "-", format_fixed(memcpy_gbs, 2), "1.00"});
  struct Op {
    const char* name;
    double bytes_per_element;
    std::function<void()> call;
  };
  const Op ops[] = {
      {"quantize f32->qint8", 5, [&] { Q::quantize_into(view, qp, codes); }},
      {"dequantize qint8->f32", 5, [&] { Q::dequantize_into(q, floats); }},
      {"fake_quantize f32", 8, [&] { Q::fake_quantize_into(view, qp, floats); }},
      {"min/max f32", 4, [&] { Q::observe_range(view, Q::per_tensor_affine); }},
  };
  for (const Op& op : ops) {
    const double elements = calls_per_second(op.call, seconds) * static_cast<double>(n);
    const double gbs = elements * op.bytes_per_element / 1e9;
    table.add_row({op.name, size_text, std::to_string(threads), format_fixed(elements / 1e9, 2),
                   format_fixed(gbs, 2), format_fixed(gbs / memcpy_gbs, 2)});
  }
}

void run_bench(const BenchOptions& options) {
  if (!options.isa.empty()) Q::set_isa(Q::isa_from_string(options.isa));
  std::vector<int> threads = options.threads;
  if (threads.empty()) threads = {Q::num_threads()};
  fmt::print("lucidq bench: tier {}, CPU features {}\n", Q::to_string(Q::active_isa()),
             Q::cpu_features().describe());
  fmt::print(
      "medians of 5 runs; working set = bytes read + written per call; "
      "GB/s counts both\n\n");
  Table table({{"operation", Align::left},
               {"working set"},
               {"threads"},
               {"Gelem/s"},
               {"GB/s"},
               {"/ memcpy"}});
  std::string text = options.sizes;
  std::vector<std::int64_t> sizes;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t comma = text.find(',', start);
    sizes.push_back(parse_size(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const int t : threads) {
    for (const std::int64_t ws : sizes) {
      bench_size(table, ws, t, options.seconds);
      table.add_rule();
    }
  }
  fmt::print("{}", table.str());
  fmt::print("\nThe full table against PyTorch: python3 bench/compare.py (docs/performance.md).\n");
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand(
      "bench", "Measure quantize / dequantize / fake_quantize / min-max speed against memcpy");
  bench->add_option("--sizes", options->sizes, "Working sets, e.g. 32K,8M,256M")
      ->capture_default_str();
  bench->add_option("--threads", options->threads, "Thread counts (default: the library's)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  bench->add_option("--isa", options->isa, "Pin a kernel tier: reference, avx2 or avx512");
  bench->add_option("--seconds", options->seconds, "Seconds per repetition")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench->footer(
      "Examples:\n"
      "  lucidq bench\n"
      "  lucidq bench --sizes 32K,256M --threads 1,2\n"
      "  lucidq bench --isa reference           the scalar specification, for comparison");
  bench->callback([options] { run_bench(*options); });
}

}  // namespace lucidq::cli
