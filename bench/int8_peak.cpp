// The int8 peak, clock and bandwidth measurements (dispatch by cpu_features(), OpenMP threads).
#include "int8_peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/tensor.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace lucidq_bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs body(thread_index) on `threads` threads at once (the caller's thread alone for 1).
template <class Body>
void on_threads(int threads, Body&& body) {
#ifdef _OPENMP
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    body(omp_get_thread_num());
    return;
  }
#endif
  body(0);
}

volatile std::int64_t g_sink = 0;

std::int64_t dependent_adds(std::int64_t iterations) {
  std::int64_t x = iterations;
  for (std::int64_t i = 0; i < iterations; ++i) {
    // 16 adds in one dependency chain: 16 cycles per iteration at 1 cycle latency.
    asm volatile(
        "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
        "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
        "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
        "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
        : "+r"(x));
  }
  return x;
}

}  // namespace

double measure_clock_ghz(int samples) {
  constexpr std::int64_t iterations =
      200'000;  // 3.2 M cycles, ~1 ms: short enough to fit a time slice
  g_sink = dependent_adds(20 * iterations);  // warm-up (clock ramp)
  double best = 0;
  for (int r = 0; r < samples; ++r) {
    const auto start = Clock::now();
    g_sink = dependent_adds(iterations);
    best = std::max(best, 16.0 * static_cast<double>(iterations) / seconds_since(start) / 1e9);
  }
  return best;
}

Int8Peak measure_int8_peak(int threads, int samples, double seconds_per_sample) {
  // The dot-product instruction of the kernel variant in use: vpdpbusd zmm (avx512_vnni),
  // vpdpbusd ymm (avx_vnni), else the AVX2 pair (LUCIDQ_ISA=avx2 pins that one).
  namespace lq = lucid::quantization;
  const lq::KernelVariant variant = lq::active_variant();
  Int8Peak peak;
  peak.threads = threads;
  double macs_per_iteration = 0;  // multiply-adds per loop iteration
  std::int64_t (*loop)(std::int64_t, std::int32_t) = nullptr;
  if (variant == lq::KernelVariant::avx512_vnni) {
    peak.kernel = "avx512-vnni vpdpbusd zmm";
    macs_per_iteration = 16.0 * 64;
    loop = int8_peak_loop_vnni;
  } else if (variant == lq::KernelVariant::avx_vnni) {
    peak.kernel = "avx-vnni vpdpbusd ymm";
    macs_per_iteration = 12.0 * 32;
    loop = int8_peak_loop_avx_vnni;
  } else if (lq::cpu_features().avx2) {
    peak.kernel = "avx2 vpmaddubsw+vpmaddwd+vpaddd ymm";
    macs_per_iteration = 6.0 * 32;
    loop = int8_peak_loop_avx2;
  } else {
    peak.kernel = "none (no AVX2)";
    return peak;
  }

  // Calibrate the iteration count on one thread to ~seconds_per_sample (at most).
  std::int64_t iterations = 1 << 12;
  for (;;) {
    const auto start = Clock::now();
    g_sink = loop(iterations, 0x01010101);
    const double t = seconds_since(start);
    if (t > seconds_per_sample / 4) {
      iterations =
          static_cast<std::int64_t>(static_cast<double>(iterations) * seconds_per_sample / t) + 1;
      break;
    }
    iterations *= 4;
  }
  std::vector<double> rates;
  for (int r = 0; r < samples; ++r) {
    std::vector<std::int64_t> sinks(static_cast<std::size_t>(threads));
    const auto start = Clock::now();
    on_threads(threads,
               [&](int t) { sinks[static_cast<std::size_t>(t)] = loop(iterations, t + 1); });
    const double elapsed = seconds_since(start);
    g_sink = sinks[0];
    rates.push_back(macs_per_iteration * static_cast<double>(iterations) * threads / elapsed);
  }
  peak.macs_per_second = *std::max_element(rates.begin(), rates.end());
  peak.median_macs_per_second = median(rates);
  peak.ghz = measure_clock_ghz(4 * samples);
  peak.macs_per_cycle = peak.macs_per_second / threads / (peak.ghz * 1e9);
  return peak;
}

Bandwidth measure_bandwidth(int threads, std::size_t bytes, int runs) {
  Bandwidth bw;
  bw.threads = threads;
  bw.bytes = bytes;
  // On transparent huge pages, as lucidq's large buffers and packed weights are (on 4 KiB
  // pages the hardware prefetchers stop at every page and reads measure about a third lower);
  // touched before timing so page faults stay out of the loop.
  using lucid::quantization::ByteBuffer;
  ByteBuffer src_buffer = ByteBuffer::zeroed(bytes), dst_buffer = ByteBuffer::zeroed(bytes);
  unsigned char* const src_bytes = src_buffer.data();
  unsigned char* const dst_bytes = dst_buffer.data();
  std::memset(src_bytes, 1, bytes);
  std::memset(dst_bytes, 2, bytes);
  const auto chunk = [&](int t, int count) {
    const std::size_t begin =
        bytes / static_cast<std::size_t>(count) * static_cast<std::size_t>(t) / 64 * 64;
    const std::size_t end = t + 1 == count ? bytes
                                           : bytes / static_cast<std::size_t>(count) *
                                                 static_cast<std::size_t>(t + 1) / 64 * 64;
    return std::pair{begin, end};
  };
  std::vector<double> copy_rates, read_rates;
  for (int r = 0; r < runs + 1; ++r) {  // the first run of each is a warm-up
    auto start = Clock::now();
    on_threads(threads, [&](int t) {
      const auto [begin, end] = chunk(t, threads);
      std::memcpy(dst_bytes + begin, src_bytes + begin, end - begin);
    });
    double elapsed = seconds_since(start);
    if (r > 0) copy_rates.push_back(2.0 * static_cast<double>(bytes) / elapsed / 1e9);
    std::vector<const void*> found(static_cast<std::size_t>(threads));
    start = Clock::now();
    on_threads(threads, [&](int t) {
      const auto [begin, end] = chunk(t, threads);
      found[static_cast<std::size_t>(t)] = std::memchr(src_bytes + begin, 0xff, end - begin);
    });
    elapsed = seconds_since(start);
    g_sink = found[0] != nullptr;
    if (r > 0) read_rates.push_back(static_cast<double>(bytes) / elapsed / 1e9);
  }
  bw.memcpy_gbs = median(copy_rates);
  bw.read_gbs = median(read_rates);
  bw.best_memcpy_gbs = *std::max_element(copy_rates.begin(), copy_rates.end());
  bw.best_read_gbs = *std::max_element(read_rates.begin(), read_rates.end());
  return bw;
}

}  // namespace lucidq_bench
