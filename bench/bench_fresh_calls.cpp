// The first calls of a fresh process: per-call time and page faults of the allocating
// per-group quantize (int4, groups of 32 and 128, 256 MB of float32), where Google Benchmark's
// steady state hides what a process that quantizes each tensor once pays (docs/performance.md).
//
//   bench_fresh_calls [--calls=N] [--mb=M]
//
// Each group size runs in its own child process (fresh heap, fresh mapping cache). Prints, per
// call, the milliseconds, the minor page faults and the GB/s of the call's bytes (4.5 per
// element), and memcpy's GB/s between two warm buffers of the input's size in the same child.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lucid/quantization/quantize.hpp"

namespace Q = lucid::quantization;

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One child's work: `calls` allocating calls on rows of 4096, and the memcpy baseline.
void run_child(std::int64_t group_size, int calls, std::int64_t megabytes) {
  const std::int64_t row = 4096;
  const std::int64_t n = std::max<std::int64_t>((megabytes << 20) * 2 / 9 / row, 1) * row;
  std::vector<float> x(static_cast<std::size_t>(n));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x)
    v = normal(rng);
  std::vector<float> copy(x.size(), 0.0f);
  double best_copy = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(copy.data(), x.data(), x.size() * sizeof(float));
    best_copy = std::min(best_copy, seconds_since(start));
  }
  const double bytes = 4.5 * static_cast<double>(n);
  std::printf("g%ld, %ld elements: memcpy of the input %.1f GB/s (best of 3, read + written)\n",
              static_cast<long>(group_size), static_cast<long>(n),
              2.0 * 4.0 * static_cast<double>(n) / best_copy / 1e9);
  const Q::TensorView view(x.data(), Q::ScalarType::float32, {n / row, row});
  for (int call = 0; call < calls; ++call) {
    const long faults = minor_faults();
    const auto start = std::chrono::steady_clock::now();
    const Q::QuantizedTensor q =
        Q::quantize_per_group(view, Q::per_channel_symmetric, Q::qint4, 1, group_size);
    const double took = seconds_since(start);
    std::printf("  call %d: %7.2f ms  %6ld minor faults  %5.1f GB/s\n", call, took * 1e3,
                minor_faults() - faults, bytes / took / 1e9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 6;
  std::int64_t megabytes = 256;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--calls=", 0) == 0) {
      calls = std::atoi(arg.c_str() + 8);
    } else if (arg.rfind("--mb=", 0) == 0) {
      megabytes = std::atoll(arg.c_str() + 5);
    } else {
      std::fprintf(stderr, "bench_fresh_calls: unknown argument %s (expected --calls=N, --mb=M)\n",
                   arg.c_str());
      return 2;
    }
  }
  if (calls < 1 || megabytes < 1) {
    std::fprintf(stderr, "bench_fresh_calls: --calls and --mb must be >= 1\n");
    return 2;
  }
  for (const std::int64_t group_size : {32, 128}) {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
      run_child(group_size, calls, megabytes);
      std::fflush(stdout);
      _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "bench_fresh_calls: the g%ld child failed\n",
                   static_cast<long>(group_size));
      return 1;
    }
  }
  return 0;
}
