// Observer benchmarks: MinMax observe against the read bandwidth of one thread, and the
// histogram observers on 1M-element batches (bench/bench_observers.py adds PyTorch).
//
//   bench_observers [google-benchmark flags]
//
// Every benchmark runs on one thread. "read" scans the same buffer with memchr for a byte
// that is absent: the read-bandwidth limit a reduction like min / max can reach.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "lucid/quantization.hpp"

namespace Q = lucid::quantization;

namespace {

// N(0, 1) values clamped to [-8, 8], generated once.
const std::vector<float>& data(std::size_t count) {
  static std::vector<float> values;
  if (values.size() < count) {
    std::mt19937_64 rng(20261130);
    std::normal_distribution<float> normal;
    values.resize(count);
    for (float& v : values)
      v = std::clamp(normal(rng), -8.0f, 8.0f);
  }
  return values;
}

Q::TensorView batch(std::size_t count) {
  return Q::TensorView(data(count).data(), Q::ScalarType::float32,
                       {static_cast<std::int64_t>(count)});
}

// memchr over zeros for 0xff: a full read of the same byte count.
void bench_read(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const std::vector<unsigned char> zeros(count * sizeof(float), 0);
  for (auto _ : state)
    benchmark::DoNotOptimize(std::memchr(zeros.data(), 0xff, zeros.size()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count * sizeof(float)));
}

void bench_minmax_observe(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const Q::TensorView x = batch(count);
  Q::MinMaxObserver observer;
  for (auto _ : state)
    observer.observe(x);
  benchmark::DoNotOptimize(observer.max_val());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * count * sizeof(float)));
}

// observe + calculate_qparams per batch, as a calibration loop that reads qparams each step.
void bench_observer(benchmark::State& state,
                    const std::function<std::unique_ptr<Q::Observer>()>& make) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const Q::TensorView x = batch(count);
  const auto observer = make();
  observer->observe(x);
  for (auto _ : state) {
    observer->observe(x);
    benchmark::DoNotOptimize(observer->calculate_qparams());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * count));
}

constexpr std::int64_t kMillion = std::int64_t{1} << 20;

}  // namespace

BENCHMARK(bench_read)->Arg(kMillion)->Arg(64 * kMillion)->Name("read");
BENCHMARK(bench_minmax_observe)->Arg(kMillion)->Arg(64 * kMillion)->Name("minmax_observe");
BENCHMARK_CAPTURE(bench_observer, histogram_pytorch,
                  [] { return std::make_unique<Q::HistogramObserver>(); })
    ->Arg(kMillion)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_observer, histogram_exact,
                  [] {
                    return std::make_unique<Q::HistogramObserver>(
                        Q::QuantGrid{}, Q::HistogramOptions{.binning = Q::HistogramBinning::exact});
                  })
    ->Arg(kMillion)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_observer, percentile,
                  [] { return std::make_unique<Q::PercentileObserver>(); })
    ->Arg(kMillion)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_observer, entropy, [] { return std::make_unique<Q::EntropyObserver>(); })
    ->Arg(kMillion)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bench_observer, mse, [] { return std::make_unique<Q::MseObserver>(); })
    ->Arg(kMillion)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
