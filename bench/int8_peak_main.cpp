// int8_peak: prints the measured int8 multiply-add peak as JSON (for bench/conv_compare.py).
//   int8_peak [--threads 1,2]
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "int8_peak.hpp"

int main(int argc, char** argv) {
  std::string threads = "1,2";
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--threads" && i + 1 < argc) {
      threads = argv[++i];
    } else {
      std::fprintf(stderr, "usage: int8_peak [--threads 1,2]\n");
      return 1;
    }
  }
  std::stringstream list(threads);
  std::string item;
  std::printf("[");
  bool first = true;
  while (std::getline(list, item, ',')) {
    const int t = std::atoi(item.c_str());
    if (t < 1) {
      std::fprintf(stderr, "int8_peak: bad thread count '%s'\n", item.c_str());
      return 1;
    }
    const lucidq_bench::Int8Peak peak = lucidq_bench::measure_int8_peak(t, 100, 0.005);
    std::printf(
        "%s{\"threads\": %d, \"kernel\": \"%s\", \"ghz\": %.3f, \"gops\": %.1f, "
        "\"median_gops\": %.1f}",
        first ? "" : ", ", t, peak.kernel.c_str(), peak.ghz, peak.gops(), peak.median_gops());
    first = false;
  }
  std::printf("]\n");
  return 0;
}
