// Weight-only formats at equal bits: output error against ggml's Q4_0 / Q4_K / Q8_0 and the
// speed of lucidq's kernels, each speed beside the bits per weight it streams and its error.
//
//   bench_weight_only [--quick] [--shapes FILE] [--accuracy-only] [--cpu-time] [--n N] [--k K]
//                     [--trials T] [--reps R] [--min-time S] [--l3-mib MIB] [--seed S]
//
// Part 1, accuracy (W N × K, default 4096 × 4096, Gaussian and Student-t with 3 degrees of
// freedom; x Gaussian, M = 1, --trials vectors): the relative RMS error
// sqrt(Σ (y − y64)² / Σ y64²) of y against a float64 product, in two columns:
// - "float x": the weight's error alone. ggml: y = Σ ŵ · x in double over ggml's own decode
//   (ggml_dequantize_rows of lucidq's byte-identical ggml_quantize_rows); lucidq:
//   weight_only_gemm with WeightOnlyActivations::float32.
// - "int8 x": each side's int8-activation rule. ggml: x rounded as its vec_dot partner type
//   does (Q4_0 / Q8_0: q8_0 blocks of 32 through ggml_quantize_rows; Q4_K: q8_K blocks of 256,
//   ggml's quantize_row_q8_K rule), then Σ ŵ · x̂ in double (ggml's integer dot and block
//   combine differ from that by float rounding only); lucidq: its default path (automatic:
//   int8_blocks on AVX2 / AVX-512, float32 on the reference tier), and int8_dynamic (per row).
// Part 2, speed (the shapes of bench/shapes/weight_only.txt; --quick: N = K = 4096 at M = 1,
// 16 and 64): per format the median time of weight_only_gemm on the default path (--reps samples
// of >= --min-time s after a warm-up), the weight bytes streamed per second, and at M = 1 also
// cold (rotating through copies of the weight > 2.5 × L3; the copies use the min_max grid, whose
// bytes take the same time), beside the format's bits per weight and its error on Gaussian W at
// that N × K (and the ggml counterpart's). LUCIDQ_ISA pins the kernel tier. --cpu-time runs one
// thread and times it by its CPU time (CLOCK_THREAD_CPUTIME_ID): on a machine shared with other
// jobs the time it ran, not the time it waited for a core.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ggml_q8_k.hpp"
#include "lucid/quantization/ggml_quants.hpp"
#include "lucid/quantization/ggml_type.hpp"
#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/weight_only.hpp"

namespace Q = lucid::quantization;

namespace {

struct Options {
  std::int64_t n = 4096, k = 4096;
  int trials = 4, reps = 5;
  double min_time = 0.2, l3_mib = 32;
  std::uint64_t seed = 20261202;
  bool quick = false, accuracy_only = false, cpu_time = false;
  std::string shapes = LUCIDQ_BENCH_SHAPES_DIR "/weight_only.txt";
};

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "bench_weight_only: error: %s\n", message.c_str());
  std::exit(1);
}

// Σ (y − ref)² and Σ ref², accumulated over trials.
struct ErrorSum {
  double err = 0, ref = 0;
  template <class Y>
  void add(const std::vector<double>& ref64, const Y& y) {
    for (std::size_t i = 0; i < ref64.size(); ++i) {
      err += (double(y[i]) - ref64[i]) * (double(y[i]) - ref64[i]);
      ref += ref64[i] * ref64[i];
    }
  }
  double relative() const { return std::sqrt(err / ref); }
};

std::vector<double> product(const std::vector<float>& w, const std::vector<float>& x,
                            std::int64_t n, std::int64_t k) {
  std::vector<double> y(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t r = 0; r < n; ++r) {
    double acc = 0;
    for (std::int64_t c = 0; c < k; ++c)
      acc +=
          double{w[static_cast<std::size_t>(r * k + c)]} * double{x[static_cast<std::size_t>(c)]};
    y[static_cast<std::size_t>(r)] = acc;
  }
  return y;
}

Q::WeightOnlyFormat make(int bits, std::int64_t group, bool symmetric, Q::ScaleType scales,
                         Q::WeightOnlyGrid grid = Q::WeightOnlyGrid::search) {
  Q::WeightOnlyFormat f;
  f.bits = bits;
  f.group_size = group;
  f.symmetric = symmetric;
  f.scale_type = scales;
  f.grid = grid;
  return f;
}

// A weight and x vectors of one distribution, with their float64 products.
struct Problem {
  std::int64_t n, k;
  std::vector<float> w;
  std::vector<std::vector<float>> xs;
  std::vector<std::vector<double>> ref;
};

Problem make_problem(std::int64_t n, std::int64_t k, int trials, std::uint64_t seed, bool student) {
  Problem p{n, k, std::vector<float>(static_cast<std::size_t>(n * k)), {}, {}};
  std::mt19937_64 rng(seed + (student ? 1 : 0));
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::student_t_distribution<float> t3(3.0f);
  for (float& v : p.w)
    v = student ? t3(rng) : gauss(rng);
  p.xs.resize(static_cast<std::size_t>(trials));
  for (auto& x : p.xs) {
    x.resize(static_cast<std::size_t>(k));
    for (float& v : x)
      v = gauss(rng);
    p.ref.push_back(product(p.w, x, n, k));
  }
  return p;
}

struct Errors {
  ErrorSum float_x, int8_x, per_row;
};

// ggml's errors: float x and x rounded as its vec_dot partner (q8_K for Q4_K, else q8_0).
Errors ggml_errors(const Problem& p, Q::GgmlType type) {
  Errors e;
  const std::vector<float> decoded = Q::ggml_round_trip_rows(type, p.w.data(), p.n, p.k);
  for (std::size_t t = 0; t < p.xs.size(); ++t) {
    e.float_x.add(p.ref[t], product(decoded, p.xs[t], p.n, p.k));
    const std::vector<float> xq =
        type == Q::GgmlType::Q4_K
            ? lucidq_bench::q8_k_round_trip(p.xs[t])
            : Q::ggml_round_trip_rows(Q::GgmlType::Q8_0, p.xs[t].data(), 1, p.k);
    e.int8_x.add(p.ref[t], product(decoded, xq, p.n, p.k));
  }
  return e;
}

// lucidq's errors on a packed weight: float32, the default path, and per-row int8.
Errors lucidq_errors(const Problem& p, const Q::PackedWeightsLowBit& packed) {
  Errors e;
  std::vector<float> y(static_cast<std::size_t>(p.n));
  const auto measure = [&](Q::WeightOnlyActivations a, ErrorSum& sum) {
    for (std::size_t t = 0; t < p.xs.size(); ++t) {
      Q::weight_only_gemm(p.xs[t].data(), 1, p.k, packed, nullptr, y.data(), p.n,
                          Q::WeightOnlyOptions{a});
      sum.add(p.ref[t], y);
    }
  };
  measure(Q::WeightOnlyActivations::float32, e.float_x);
  measure(Q::WeightOnlyActivations::automatic, e.int8_x);
  measure(Q::WeightOnlyActivations::int8_dynamic, e.per_row);
  return e;
}

double bits_streamed(const Q::PackedWeightsLowBit& w) {
  return 8.0 * static_cast<double>(w.packed_bytes()) / static_cast<double>(w.rows() * w.columns());
}

void accuracy(const Options& o) {
  const std::vector<float> probe(64, 1.0f);
  const auto path =
      Q::resolve_activations({}, 1,
                             Q::PackedWeightsLowBit::quantize(
                                 probe.data(), 1, 64, 64, make(4, 32, true, Q::ScaleType::f16)));
  std::printf(
      "Accuracy: W %lld x %lld, M = 1, %d Gaussian x, seed %llu, tier %s, default path %s\n",
      static_cast<long long>(o.n), static_cast<long long>(o.k), o.trials,
      static_cast<unsigned long long>(o.seed), Q::to_string(Q::active_isa()).c_str(),
      Q::to_string(path).c_str());
  std::printf("| W | format | bits/w | float x | int8 x (default) | int8 per row |\n");
  std::printf("|---|---|---|---|---|---|\n");
  std::vector<Q::WeightOnlyFormat> formats;
  using G = Q::WeightOnlyGrid;
  using S = Q::ScaleType;
  formats.push_back(make(4, 32, false, S::super6));  // 4.5 bits, Q4_K's layout of information
  for (const G grid : {G::min_max, G::search}) {
    formats.push_back(make(4, 32, true, S::f16, grid));    // 4.5 bits: Q4_0 / Q4_K's
    formats.push_back(make(4, 64, false, S::f16, grid));   // 4.375
    formats.push_back(make(4, 32, false, S::f16, grid));   // 4.75
    formats.push_back(make(4, 128, true, S::bf16, grid));  // 4.125
    formats.push_back(make(8, 32, true, S::f16, grid));    // 8.5: Q8_0's
    formats.push_back(make(8, 0, true, S::f32, grid));
  }
  for (const bool student : {false, true}) {
    const char* dist = student ? "student-t3" : "gaussian";
    const Problem p = make_problem(o.n, o.k, o.trials, o.seed, student);
    for (const auto& [name, type] :
         {std::pair{"ggml Q4_0", Q::GgmlType::Q4_0}, std::pair{"ggml Q4_K", Q::GgmlType::Q4_K},
          std::pair{"ggml Q8_0", Q::GgmlType::Q8_0}}) {
      const Errors e = ggml_errors(p, type);
      std::printf("| %s | %s | %.3f | %.4f | %.4f | - |\n", dist, name,
                  8.0 * static_cast<double>(Q::ggml_row_size(type, o.k)) / static_cast<double>(o.k),
                  e.float_x.relative(), e.int8_x.relative());
    }
    for (const Q::WeightOnlyFormat& f : formats) {
      const auto packed = Q::PackedWeightsLowBit::quantize(p.w.data(), o.n, o.k, o.k, f);
      const Errors e = lucidq_errors(p, packed);
      std::printf("| %s | lucidq %s | %.3f | %.4f | %.4f | %.4f |\n", dist, f.describe().c_str(),
                  bits_streamed(packed), e.float_x.relative(), e.int8_x.relative(),
                  e.per_row.relative());
    }
  }
}

// ---------------------------------------------------------------- speed

struct Shape {
  std::int64_t m, n, k;
};

std::vector<Shape> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read shapes file " + path);
  std::vector<Shape> shapes;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line.substr(0, line.find('#')));
    Shape s{0, 0, 0};
    if (!(ss >> s.m)) continue;
    if (!(ss >> s.n >> s.k) || s.m < 1 || s.n < 1 || s.k < 1 || s.k % 256 != 0)
      fail("bad shape line in " + path + ": " + line + " (expected M N K, K a multiple of 256)");
    shapes.push_back(s);
  }
  return shapes;
}

// Seconds: wall-clock, or this thread's CPU time.
double now(bool cpu_time) {
  if (cpu_time) {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median seconds per call of `call(i)` (i counts calls: rotates cold copies).
template <class Call>
double median_time(const Options& o, Call&& call) {
  std::int64_t i = 0;
  call(i++);
  std::vector<double> samples;
  for (int r = 0; r < o.reps; ++r) {
    std::int64_t calls = 0;
    const double start = now(o.cpu_time);
    double elapsed = 0;
    do {
      call(i++);
      ++calls;
      elapsed = now(o.cpu_time) - start;
    } while (elapsed < o.min_time);
    samples.push_back(elapsed / static_cast<double>(calls));
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct SpeedFormat {
  Q::WeightOnlyFormat format;
  const char* counterpart;  // the ggml formats at the same bits, or ""
};

void speed(const Options& o) {
  if (o.cpu_time) Q::set_num_threads(1);
  std::vector<Shape> shapes = read_shapes(o.shapes);
  if (o.quick) {
    std::erase_if(shapes, [](const Shape& s) {
      return !(s.n == 4096 && s.k == 4096 && (s.m == 1 || s.m == 16 || s.m == 64));
    });
  }
  using S = Q::ScaleType;
  const SpeedFormat formats[] = {
      {make(4, 32, false, S::super6), "Q4_0 / Q4_K"},
      {make(4, 32, true, S::f16), "Q4_0 / Q4_K"},
      {make(4, 128, true, S::bf16), ""},
      {make(4, 128, true, S::f32), ""},
      {make(8, 32, true, S::f16), "Q8_0"},
      {make(8, 0, true, S::f32), ""},
  };
  std::printf(
      "\nSpeed: %d threads, tier %s, %d samples of >= %.2f s (%s), median; GB/s = packed "
      "weight bytes / time; error on Gaussian W of that N x K (default path)\n",
      Q::num_threads(), Q::to_string(Q::active_isa()).c_str(), o.reps, o.min_time,
      o.cpu_time ? "thread CPU time" : "wall clock");
  std::printf(
      "| M | N | K | format | bits/w | error | ggml error | ms | GB/s | cold ms | cold GB/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::map<std::pair<std::int64_t, std::int64_t>, bool> done;
  for (const Shape& first : shapes) {
    if (done[{first.n, first.k}]) continue;
    done[{first.n, first.k}] = true;
    const Problem p = make_problem(first.n, first.k, 1, o.seed, false);
    const Errors q4_0 = ggml_errors(p, Q::GgmlType::Q4_0);
    const Errors q4_k = ggml_errors(p, Q::GgmlType::Q4_K);
    const Errors q8_0 = ggml_errors(p, Q::GgmlType::Q8_0);
    for (const SpeedFormat& sf : formats) {
      const auto packed = Q::PackedWeightsLowBit::quantize(p.w.data(), p.n, p.k, p.k, sf.format);
      const Errors e = lucidq_errors(p, packed);
      char theirs[64] = "-";
      if (sf.format.bits == 4 && *sf.counterpart != '\0') {
        std::snprintf(theirs, sizeof theirs, "%.4f / %.4f", q4_0.int8_x.relative(),
                      q4_k.int8_x.relative());
      } else if (*sf.counterpart != '\0') {
        std::snprintf(theirs, sizeof theirs, "%.4f", q8_0.int8_x.relative());
      }
      // Cold copies (bytes > 2.5 × L3) for M = 1, on the fast-to-build min_max grid.
      std::vector<Q::PackedWeightsLowBit> copies{packed};
      // (super6 has one search; its copies take the same time to stream.)
      Q::WeightOnlyFormat fast = sf.format;
      if (fast.scale_type != Q::ScaleType::super6) fast.grid = Q::WeightOnlyGrid::min_max;
      const double l3 = o.l3_mib * (1 << 20);
      while (static_cast<double>(copies.size() * packed.packed_bytes()) < 2.5 * l3)
        copies.push_back(Q::PackedWeightsLowBit::quantize(p.w.data(), p.n, p.k, p.k, fast));
      for (const Shape& s : shapes) {
        if (s.n != p.n || s.k != p.k) continue;
        std::vector<float> x(static_cast<std::size_t>(s.m * s.k), 0.5f);
        for (std::size_t i = 0; i < x.size(); ++i)
          x[i] = p.xs[0][i % static_cast<std::size_t>(s.k)] *
                 (1.0f + 0.001f * static_cast<float>(i % 7));
        std::vector<float> y(static_cast<std::size_t>(s.m * s.n));
        const auto run = [&](const Q::PackedWeightsLowBit& w) {
          Q::weight_only_gemm(x.data(), s.m, s.k, w, nullptr, y.data(), s.n);
        };
        const double hot = median_time(o, [&](std::int64_t) { run(packed); });
        double cold = 0;
        if (s.m == 1) {
          cold = median_time(
              o, [&](std::int64_t i) { run(copies[static_cast<std::size_t>(i) % copies.size()]); });
        }
        const double bytes = static_cast<double>(packed.packed_bytes());
        char cold_ms[32] = "-", cold_gbs[32] = "-";
        if (cold > 0) {
          std::snprintf(cold_ms, sizeof cold_ms, "%.3f", cold * 1e3);
          std::snprintf(cold_gbs, sizeof cold_gbs, "%.1f", bytes / cold / 1e9);
        }
        std::printf("| %lld | %lld | %lld | %s | %.3f | %.4f | %s | %.3f | %.1f | %s | %s |\n",
                    static_cast<long long>(s.m), static_cast<long long>(s.n),
                    static_cast<long long>(s.k), sf.format.describe().c_str(),
                    bits_streamed(packed), e.int8_x.relative(), theirs, hot * 1e3,
                    bytes / hot / 1e9, cold_ms, cold_gbs);
        std::fflush(stdout);
      }
    }
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf(
          "usage: bench_weight_only [--quick] [--shapes FILE] [--accuracy-only] [--cpu-time]\n"
          "                         [--n N] [--k K] [--trials T] [--reps R] [--min-time S]\n"
          "                         [--l3-mib MIB] [--seed S]\n"
          "Output error of lucidq's weight-only formats against ggml's Q4_0 / Q4_K / Q8_0 at\n"
          "equal bits per weight (W N x K, default 4096 x 4096, Gaussian and Student-t(3)), then\n"
          "each format's speed beside its bits per weight and error (--quick: N = K = 4096,\n"
          "M = 1, 16, 64; --shapes: a bench/shapes file). --cpu-time: one thread, timed by CPU\n"
          "time. LUCIDQ_ISA pins the kernel tier. See docs/performance.md.\n");
      std::exit(0);
    }
    if (flag == "--quick") {
      o.quick = true;
      continue;
    }
    if (flag == "--accuracy-only") {
      o.accuracy_only = true;
      continue;
    }
    if (flag == "--cpu-time") {
      o.cpu_time = true;
      continue;
    }
    if (i + 1 >= argc) fail(flag + " needs a value");
    const std::string value = argv[++i];
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    const bool number = end != value.c_str() && *end == '\0' && v > 0;
    if (flag == "--shapes") {
      o.shapes = value;
      continue;
    }
    if (!number) fail(flag + " = " + value + " (expected a positive number)");
    if (flag == "--n") {
      o.n = static_cast<std::int64_t>(v);
    } else if (flag == "--k") {
      o.k = static_cast<std::int64_t>(v);
    } else if (flag == "--trials") {
      o.trials = static_cast<int>(v);
    } else if (flag == "--reps") {
      o.reps = static_cast<int>(v);
    } else if (flag == "--min-time") {
      o.min_time = v;
    } else if (flag == "--l3-mib") {
      o.l3_mib = v;
    } else if (flag == "--seed") {
      o.seed = static_cast<std::uint64_t>(v);
    } else {
      fail("unknown flag " + flag +
           " (expected --quick, --shapes, --accuracy-only, --cpu-time, --n, --k, --trials, --reps, "
           "--min-time, --l3-mib, --seed)");
    }
  }
  if (o.k % 256 != 0) fail("--k = " + std::to_string(o.k) + " (expected a multiple of 256)");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    accuracy(o);
    if (!o.accuracy_only) speed(o);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
