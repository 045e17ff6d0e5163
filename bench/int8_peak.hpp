// The machine's limits measured in the same run as the GEMM: int8 multiply-add peak, clock, memory
// bandwidth.
#pragma once

#include <cstdint>
#include <string>

namespace lucidq_bench {

/// The int8 multiply-add peak on `threads` threads (each running the same loop).
/// A peak is a best case: on a shared machine the fastest of many short samples
/// is the one least disturbed by other processes, so the peak and the clock are
/// the best samples; the median sample is reported next to it.
struct Int8Peak {
  std::string kernel;  ///< "avx512-vnni vpdpbusd zmm", "avx-vnni vpdpbusd ymm" or the AVX2 pair
  int threads = 1;
  double ghz = 0;                     ///< core clock from a dependent-add chain (best sample)
  double macs_per_second = 0;         ///< all threads together, best sample
  double median_macs_per_second = 0;  ///< all threads together, median sample
  double macs_per_cycle = 0;          ///< per core: macs_per_second / threads / (ghz · 1e9)
  double gops() const { return 2 * macs_per_second / 1e9; }  ///< 2 ops per MAC
  double median_gops() const { return 2 * median_macs_per_second / 1e9; }
};

/// Measures the peak with the dot-product loop of the active kernel variant (vpdpbusd zmm for
/// avx512_vnni, vpdpbusd ymm for avx_vnni, else the AVX2 vpmaddubsw pair) over `samples` samples
/// of about `seconds_per_sample` each.
Int8Peak measure_int8_peak(int threads, int samples, double seconds_per_sample);

/// The core clock in GHz: a chain of dependent 64-bit adds (1 cycle each), best of samples.
double measure_clock_ghz(int samples);

/// memcpy and read (memchr for an absent byte) bandwidth on `threads` threads over `bytes`.
struct Bandwidth {
  int threads = 1;
  std::size_t bytes = 0;
  double memcpy_gbs = 0;  ///< (read + written) bytes / s / 1e9, median sample
  double read_gbs = 0;    ///< read bytes / s / 1e9, median sample
  double best_memcpy_gbs = 0, best_read_gbs = 0;  ///< the fastest samples
};
Bandwidth measure_bandwidth(int threads, std::size_t bytes, int runs);

// The per-ISA loops (separate files, each with its own flags). Return a value to keep the work.
std::int64_t int8_peak_loop_vnni(std::int64_t iterations, std::int32_t seed);
std::int64_t int8_peak_loop_avx_vnni(std::int64_t iterations, std::int32_t seed);
std::int64_t int8_peak_loop_avx2(std::int64_t iterations, std::int32_t seed);

}  // namespace lucidq_bench
