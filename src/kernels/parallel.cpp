// The thread count: LUCIDQ_NUM_THREADS / OMP_NUM_THREADS / set_num_threads.
#include "kernels/parallel.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/runtime.hpp"

namespace lucid::quantization {
namespace {

std::atomic<int> chosen_threads{0};  // 0: not chosen yet

int default_threads() {
  if (const char* text = std::getenv("LUCIDQ_NUM_THREADS"); text && *text) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 1 || value > 1 << 16) {
      throw Error("LUCIDQ_NUM_THREADS = \"" + std::string(text) + "\" (expected an integer >= 1)");
    }
    return static_cast<int>(value);
  }
#ifdef _OPENMP
  return omp_get_max_threads();  // honours OMP_NUM_THREADS
#else
  return 1;
#endif
}

}  // namespace

int num_threads() {
  int threads = chosen_threads.load(std::memory_order_relaxed);
  if (threads == 0) {
    threads = default_threads();
    int expected = 0;
    chosen_threads.compare_exchange_strong(expected, threads, std::memory_order_relaxed);
    threads = chosen_threads.load(std::memory_order_relaxed);
  }
#ifdef _OPENMP
  return threads;
#else
  return 1;
#endif
}

void set_num_threads(int count) {
  if (count < 1) {
    throw Error("set_num_threads: count = " + std::to_string(count) + " (expected >= 1)");
  }
  chosen_threads.store(count, std::memory_order_relaxed);
}

namespace kernels {

int threads_for(std::int64_t n, std::int64_t grain) {
  const std::int64_t useful = n / std::max<std::int64_t>(grain, 1);
  return static_cast<int>(std::clamp<std::int64_t>(useful, 1, num_threads()));
}

}  // namespace kernels
}  // namespace lucid::quantization
