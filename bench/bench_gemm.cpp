// bench_gemm: lucidq's packed int8 GEMM next to oneDNN matmul, OpenBLAS sgemm and the machine's
// limits.
//
//   bench_gemm [--quick] [--shapes FILE]... [--threads 1,2] [--reps 5] [--min-time 0.2]
//              [--json FILE] [--no-cold] [--l3-mib 32] [--isa NAME]
//
// One run measures, per thread count: the int8 multiply-add peak (VNNI vpdpbusd
// or AVX2 loop), memcpy / read bandwidth, then per shape "M N K" (C[M, N] =
// A[M, K] · W[N, K]ᵀ) the median time of each library on the same data:
//   lucidq   gemm() u8 × s8 → f32 (per-channel scales), → int32, → u8 requantized,
//            gemm_dynamic (f32 activations, per-tensor), weight_only_gemm when built
//   oneDNN   matmul u8 × s8 → f32 with output scales at creation, → s32; weights reordered
//            once into the primitive's layout (format_tag::any)
//   OpenBLAS cblas_sgemm on the same values in float32
// Each sample repeats a call for >= --min-time seconds (time per call); the
// reported time is the median of --reps samples after one warm-up call. For
// M = 1 the weights are also timed cold: a rotation through enough separately
// packed copies to exceed 2.5 × L3. bench/gemm_compare.py adds PyTorch.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gemm_baselines.hpp"
#include "int8_peak.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gemm.hpp"
#include "lucid/quantization/runtime.hpp"
#ifdef LUCIDQ_BENCH_WEIGHT_ONLY
#include "lucid/quantization/weight_only.hpp"
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace Q = lucid::quantization;
namespace B = lucidq_bench;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> shape_files;
  std::vector<int> threads{1, 2};
  int reps = 5;
  double min_time = 0.2;
  std::string json;
  bool cold = true;
  double l3_mib = 0;  // 0: from sysfs, else 32
  std::string isa;
};

struct Shape {
  std::int64_t m, n, k;
  std::string family;
};

struct Timing {
  double median_s = 0, min_s = 0;
  int runs = 0;
  std::int64_t calls = 0;
  std::size_t weight_bytes = 0;  // bytes of one weight copy the call reads
  int copies = 1;                // > 1: rotated through that many copies (cold)
};

struct Row {
  Shape shape;
  int threads = 1;
  std::map<std::string, Timing> t;
  std::string onednn_impl;
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr,
               "bench_gemm: %s\nusage: bench_gemm [--quick] [--shapes FILE]... [--threads 1,2] "
               "[--reps N] [--min-time S] [--json FILE] [--no-cold] [--l3-mib MIB] [--isa NAME]\n",
               message);
  std::exit(2);
}

std::vector<int> parse_ints(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const int v = std::atoi(item.c_str());
    if (v < 1) usage(("bad thread count '" + item + "'").c_str());
    out.push_back(v);
  }
  return out;
}

std::vector<Shape> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage(("cannot read shapes file " + path).c_str());
  std::string family = path.substr(path.find_last_of('/') + 1);
  family = family.substr(0, family.find('.'));
  std::vector<Shape> shapes;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream ss(line);
    Shape s{0, 0, 0, family};
    if (!(ss >> s.m)) continue;  // blank or comment
    if (!(ss >> s.n >> s.k) || s.m < 1 || s.n < 1 || s.k < 1)
      usage(("bad shape line in " + path + ": " + line).c_str());
    shapes.push_back(s);
  }
  return shapes;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One timed call site of a row: the function, what it reads, and its samples so far.
struct Job {
  std::string name;
  std::size_t weight_bytes = 0;
  int copies = 1;
  bool openblas = false;  // its spinning threads need settle() before the next library
  std::function<void(std::int64_t)> call;
  std::int64_t index = 0;  // running argument of call (rotates cold copies)
  std::vector<double> per_call;
  std::int64_t calls = 0;
};

// One sample of job: as many calls as fit in min_time seconds.
void sample(Job& job, double min_time) {
  std::int64_t calls = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    job.call(job.index++);
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < min_time);
  job.per_call.push_back(elapsed / static_cast<double>(calls));
  job.calls += calls;
}

void settle();

// Every job gets one warm-up call, then `reps` rounds each take one sample of every job in
// turn, so a slow phase of the machine touches all libraries alike (the ratios are steadier
// than with one library's samples back to back); OpenBLAS jobs come last in a round and are
// followed by settle().
std::map<std::string, Timing> time_interleaved(std::vector<Job>& jobs, int reps, double min_time) {
  std::stable_partition(jobs.begin(), jobs.end(), [](const Job& j) { return !j.openblas; });
  const bool any_openblas =
      std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.openblas; });
  for (Job& job : jobs)
    job.call(job.index++);
  if (any_openblas) settle();
  for (int r = 0; r < reps; ++r) {
    for (Job& job : jobs)
      sample(job, min_time);
    if (any_openblas) settle();
  }
  std::map<std::string, Timing> out;
  for (const Job& job : jobs) {
    Timing t;
    t.median_s = median(job.per_call);
    t.min_s = *std::min_element(job.per_call.begin(), job.per_call.end());
    t.runs = reps;
    t.calls = job.calls;
    t.weight_bytes = job.weight_bytes;
    t.copies = job.copies;
    out[job.name] = t;
  }
  return out;
}

// Every library at `threads`: lucidq, OpenMP (oneDNN) and OpenBLAS's own pool.
void set_threads(int threads) {
  Q::set_num_threads(threads);
#ifdef _OPENMP
  omp_set_num_threads(threads);
#endif
#ifdef LUCIDQ_BENCH_OPENBLAS
  B::openblas_threads(threads);
#endif
}

// OpenBLAS's pthreads spin for a while after a call; let them go to sleep so
// they do not steal the 2 cores from the next library.
void settle() {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

double l3_bytes(const Options& o) {
  if (o.l3_mib > 0) return o.l3_mib * (1 << 20);
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string text;
  if (in >> text && !text.empty()) {
    double v = std::atof(text.c_str());
    if (text.back() == 'K') v *= 1024;
    if (text.back() == 'M') v *= 1024 * 1024;
    if (v > 0) return v;
  }
  return 32.0 * (1 << 20);
}

// ---------------------------------------------------------------- verification

// What verification found: lucidq must be exact (else the bench stops); oneDNN's errors are
// measured and reported, since on CPUs without VNNI its u8 x s8 products saturate
// (vpmaddubsw's int16 pair sums) and a bench that stopped there would hide lucidq's advantage.
struct Verification {
  bool lucidq_exact = true;
  std::string onednn;  // "exact", or how far oneDNN is from the exact product; "" if not built
};

// Our int32 result against a plain int64 loop (the spec) and our f32 against its exact value;
// then oneDNN's s32 and f32 against the same, on small shapes with ragged sizes and a nonzero
// activation zero point.
Verification verify() {
  Verification v;
  std::int64_t dnnl_mismatch = 0, dnnl_outputs = 0;
  double dnnl_max_rel = 0;
  for (const auto& [m, n, k] :
       {std::array<std::int64_t, 3>{5, 37, 300}, std::array<std::int64_t, 3>{64, 130, 1000},
        std::array<std::int64_t, 3>{1, 4096, 512}}) {
    const auto in = B::make_inputs(m, n, k, 131, false);
    const auto w = Q::PackedWeightsInt8::pack(in.w.data(), n, k, k, in.w_scales);
    const Q::ActivationMatrix a{in.a.data(), Q::ScalarType::uint8, m,
                                k,           in.a_scale,           in.a_zero_point};
    std::vector<std::int32_t> ours(static_cast<std::size_t>(m * n));
    std::vector<float> ours_f(ours.size());
    std::vector<std::int64_t> exact(ours.size());
    Q::gemm(a, w, Q::Int32Output{ours.data(), n});
    Q::gemm(a, w, Q::FloatOutput{ours_f.data(), n, nullptr});
    std::int64_t mismatch = 0;
    double max_rel = 0;
    // Relative difference of a float output against acc * s_A * s_W[n], floored at one unit.
    const auto rel = [&](std::size_t i, float value) {
      const double unit = in.a_scale * in.w_scales[i % static_cast<std::size_t>(n)];
      return std::abs(double(value) - double(exact[i]) * unit) /
             std::max(std::abs(double(exact[i]) * unit), unit);
    };
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        std::int64_t acc = 0;
        for (std::int64_t p = 0; p < k; ++p)
          acc += (in.a[static_cast<std::size_t>(i * k + p)] - in.a_zero_point) *
                 in.w[static_cast<std::size_t>(j * k + p)];
        const auto index = static_cast<std::size_t>(i * n + j);
        exact[index] = acc;
        mismatch += acc != ours[index];
        max_rel = std::max(max_rel, rel(index, ours_f[index]));
      }
    std::printf("verify %lldx%lldx%lld: lucidq int32 %lld mismatches, f32 max rel diff %.2g",
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                static_cast<long long>(mismatch), max_rel);
    v.lucidq_exact = v.lucidq_exact && mismatch == 0 && max_rel < 1e-5;
#ifdef LUCIDQ_BENCH_ONEDNN
    B::OneDnnMatmul s32(in, B::OneDnnMatmul::Dst::s32), f32(in, B::OneDnnMatmul::Dst::f32);
    s32.run();
    f32.run();
    const auto* theirs = static_cast<const std::int32_t*>(s32.output());
    const auto* theirs_f = static_cast<const float*>(f32.output());
    std::int64_t their_mismatch = 0;
    double their_rel = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      their_mismatch += exact[i] != theirs[i];
      their_rel = std::max(their_rel, rel(i, theirs_f[i]));
    }
    std::printf("; oneDNN s32 %lld mismatches, f32 max rel diff %.2g",
                static_cast<long long>(their_mismatch), their_rel);
    dnnl_mismatch += their_mismatch;
    dnnl_outputs += static_cast<std::int64_t>(ours.size());
    dnnl_max_rel = std::max(dnnl_max_rel, their_rel);
#endif
    std::printf("\n");
  }
#ifdef LUCIDQ_BENCH_ONEDNN
  char summary[160];
  std::snprintf(summary, sizeof summary,
                "INEXACT on this CPU: s32 wrong in %lld of %lld outputs, f32 max rel diff %.2g",
                static_cast<long long>(dnnl_mismatch), static_cast<long long>(dnnl_outputs),
                dnnl_max_rel);
  v.onednn = dnnl_mismatch == 0 && dnnl_max_rel < 1e-5 ? std::string("exact") : summary;
#endif
  std::printf("%s\n", v.lucidq_exact
                          ? "lucidq verified exact"
                          : "VERIFICATION FAILED: lucidq differs from the exact product");
  if (!v.onednn.empty()) std::printf("oneDNN: %s\n", v.onednn.c_str());
  return v;
}

// ---------------------------------------------------------------- one shape

int cold_copies(std::size_t bytes, double l3) {
  return std::max(2, static_cast<int>(std::ceil(2.5 * l3 / static_cast<double>(bytes))));
}

void bench_shape(const Shape& s, const std::vector<int>& thread_counts, const Options& o, double l3,
                 std::vector<Row>& rows) {
  const std::int64_t m = s.m, n = s.n, k = s.k;
  const auto in = B::make_inputs(m, n, k, 128, true);
  const bool cold = o.cold && m == 1;
  const int copies = cold ? cold_copies(static_cast<std::size_t>(n * k), l3) : 1;

  // lucidq: pack once (and the cold copies, each packed separately).
  std::vector<Q::PackedWeightsInt8> packed;
  for (int c = 0; c < copies; ++c)
    packed.push_back(Q::PackedWeightsInt8::pack(in.w.data(), n, k, k, in.w_scales));
  const Q::ActivationMatrix a{in.a.data(), Q::ScalarType::uint8, m, k, in.a_scale, in.a_zero_point};
  std::vector<float> c_f32(static_cast<std::size_t>(m * n));
  std::vector<std::int32_t> c_s32(c_f32.size());
  std::vector<std::uint8_t> c_u8(c_f32.size());
  Q::gemm(a, packed[0], Q::FloatOutput{c_f32.data(), n, nullptr});
  float max_abs = 0;
  for (const float v : c_f32)
    max_abs = std::max(max_abs, std::abs(v));
  const Q::RequantizedOutput requantized{c_u8.data(), n, std::max(max_abs, 1e-3f) / 127.0f, 128};
  Q::DynamicQuantization per_tensor;
  per_tensor.per_row = false;  // as torch.ops.quantized.linear_dynamic
#ifdef LUCIDQ_BENCH_WEIGHT_ONLY
  Q::WeightOnlyFormat int4_g128, int8_pc;
  int8_pc.bits = 8;
  int8_pc.group_size = 0;
  std::vector<std::pair<std::string, std::vector<Q::PackedWeightsLowBit>>> low_bit;
  for (const auto& [name, format] : {std::pair{std::string("wo_int4_g128"), int4_g128},
                                     std::pair{std::string("wo_int8_pc"), int8_pc}}) {
    low_bit.emplace_back(name, std::vector<Q::PackedWeightsLowBit>{});
    const auto first = Q::PackedWeightsLowBit::quantize(in.w_float.data(), n, k, k, format);
    const int wo_copies = cold ? cold_copies(first.packed_bytes(), l3) : 1;
    low_bit.back().second.push_back(first);
    Q::WeightOnlyFormat copy_format = format;  // the same bytes per weight, quicker to build
    copy_format.grid = Q::WeightOnlyGrid::min_max;
    for (int c = 1; c < wo_copies; ++c)
      low_bit.back().second.push_back(
          Q::PackedWeightsLowBit::quantize(in.w_float.data(), n, k, k, copy_format));
  }
#endif
#ifdef LUCIDQ_BENCH_OPENBLAS
  B::OpenBlasSgemm sgemm(in, copies);
#endif

  for (const int threads : thread_counts) {
    set_threads(threads);
    Row row{s, threads, {}, {}};
    std::vector<Job> jobs;
    const auto time = [&](const std::string& name, std::size_t bytes, int rotate,
                          std::function<void(std::int64_t)> call) {
      Job job;
      job.name = name;
      job.weight_bytes = bytes;
      job.copies = rotate;
      job.openblas = name.rfind("openblas", 0) == 0;
      job.call = std::move(call);
      jobs.push_back(std::move(job));
    };
    const std::size_t our_bytes = packed[0].packed_bytes();
    time("lucidq_f32", our_bytes, 1, [&](std::int64_t) {
      Q::gemm(a, packed[0], Q::FloatOutput{c_f32.data(), n, nullptr});
    });
    time("lucidq_s32", our_bytes, 1, [&](std::int64_t) {
      Q::gemm(a, packed[0], Q::Int32Output{c_s32.data(), n});
    });
    time("lucidq_u8", our_bytes, 1, [&](std::int64_t) { Q::gemm(a, packed[0], requantized); });
    time("lucidq_dynamic", our_bytes, 1, [&](std::int64_t) {
      Q::gemm_dynamic(in.a_float.data(), m, k, packed[0], nullptr, c_f32.data(), n, per_tensor);
    });
    if (cold)
      time("lucidq_f32_cold", our_bytes, copies, [&](std::int64_t i) {
        Q::gemm(a, packed[static_cast<std::size_t>(i % copies)],
                Q::FloatOutput{c_f32.data(), n, nullptr});
      });
#ifdef LUCIDQ_BENCH_WEIGHT_ONLY
    for (const auto& [name, ws] : low_bit) {
      const auto& wv = ws;
      time("lucidq_" + name, wv[0].packed_bytes(), 1, [&](std::int64_t) {
        Q::weight_only_gemm(in.a_float.data(), m, k, wv[0], nullptr, c_f32.data(), n);
      });
      // The float32-activation path too (the default is int8 activations on VNNI CPUs).
      const Q::WeightOnlyOptions float_x{Q::WeightOnlyActivations::float32};
      time("lucidq_" + name + "_fx", wv[0].packed_bytes(), 1, [&](std::int64_t) {
        Q::weight_only_gemm(in.a_float.data(), m, k, wv[0], nullptr, c_f32.data(), n, float_x);
      });
      if (cold)
        time("lucidq_" + name + "_cold", wv[0].packed_bytes(), static_cast<int>(wv.size()),
             [&](std::int64_t i) {
               Q::weight_only_gemm(in.a_float.data(), m, k,
                                   wv[static_cast<std::size_t>(i) % wv.size()], nullptr,
                                   c_f32.data(), n);
             });
    }
#endif
#ifdef LUCIDQ_BENCH_ONEDNN
    // Created after omp_set_num_threads: oneDNN may block for the thread count.
    B::OneDnnMatmul f32(in, B::OneDnnMatmul::Dst::f32, copies);
    B::OneDnnMatmul s32(in, B::OneDnnMatmul::Dst::s32);
    row.onednn_impl = f32.implementation();
    time("onednn_f32", f32.weight_bytes(), 1, [&](std::int64_t) { f32.run(); });
    time("onednn_s32", s32.weight_bytes(), 1, [&](std::int64_t) { s32.run(); });
    if (cold)
      time("onednn_f32_cold", f32.weight_bytes(), copies,
           [&](std::int64_t i) { f32.run(static_cast<int>(i % copies)); });
#endif
#ifdef LUCIDQ_BENCH_OPENBLAS
    time("openblas_f32", sgemm.weight_bytes(), 1, [&](std::int64_t) { sgemm.run(); });
    if (cold)
      time("openblas_f32_cold", sgemm.weight_bytes(), copies,
           [&](std::int64_t i) { sgemm.run(static_cast<int>(i % copies)); });
    if (m == 1) {
      time("openblas_gemv", sgemm.weight_bytes(), 1, [&](std::int64_t) { sgemm.run_gemv(); });
      if (cold)
        time("openblas_gemv_cold", sgemm.weight_bytes(), copies,
             [&](std::int64_t i) { sgemm.run_gemv(static_cast<int>(i % copies)); });
    }
#endif
    row.t = time_interleaved(jobs, o.reps, o.min_time);
    rows.push_back(row);
  }
}

// ---------------------------------------------------------------- output

std::string fmt(const char* format, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

double gops(const Row& r, const Timing& t) {
  return 2.0 * static_cast<double>(r.shape.m * r.shape.n * r.shape.k) / t.median_s / 1e9;
}

void print_table(const std::vector<Row>& rows, const std::map<int, B::Int8Peak>& peaks,
                 const std::map<int, B::Bandwidth>& bandwidth) {
  std::printf(
      "\nTimes in ms (median); GOP/s = 2·M·N·K / t; %%pk = ours f32 GOP/s / int8 peak at that "
      "thread count;\nspeed ratios = their time / our f32 time (> 1: lucidq faster).\n");
  std::printf("%5s %6s %6s %3s | %9s %7s %5s | %9s %9s %9s | %9s %7s | %9s | %9s %7s | %6s %6s\n",
              "M", "N", "K", "thr", "ours f32", "GOP/s", "%pk", "ours s32", "ours u8", "ours dyn",
              "oneDNN", "GOP/s", "dnnl s32", "OpenBLAS", "GFLOP/s", "/dnnl", "/oblas");
  const auto ms = [](const Row& r, const char* name) {
    const auto it = r.t.find(name);
    return it == r.t.end() ? std::string("-") : fmt("%.3f", it->second.median_s * 1e3);
  };
  const auto rate = [](const Row& r, const char* name) {
    const auto it = r.t.find(name);
    return it == r.t.end() ? std::string("-") : fmt("%.1f", gops(r, it->second));
  };
  const auto ratio = [](const Row& r, const char* theirs) {
    const auto it = r.t.find(theirs);
    return it == r.t.end() ? std::string("-")
                           : fmt("%.2f", it->second.median_s / r.t.at("lucidq_f32").median_s);
  };
  for (const auto& r : rows) {
    const double peak = peaks.count(r.threads) ? peaks.at(r.threads).gops() : 0;
    std::printf(
        "%5lld %6lld %6lld %3d | %9s %7s %5s | %9s %9s %9s | %9s %7s | %9s | %9s %7s | %6s %6s\n",
        static_cast<long long>(r.shape.m), static_cast<long long>(r.shape.n),
        static_cast<long long>(r.shape.k), r.threads, ms(r, "lucidq_f32").c_str(),
        rate(r, "lucidq_f32").c_str(),
        peak > 0 ? fmt("%.0f%%", 100 * gops(r, r.t.at("lucidq_f32")) / peak).c_str() : "-",
        ms(r, "lucidq_s32").c_str(), ms(r, "lucidq_u8").c_str(), ms(r, "lucidq_dynamic").c_str(),
        ms(r, "onednn_f32").c_str(), rate(r, "onednn_f32").c_str(), ms(r, "onednn_s32").c_str(),
        ms(r, "openblas_f32").c_str(), rate(r, "openblas_f32").c_str(),
        ratio(r, "onednn_f32").c_str(), ratio(r, "openblas_f32").c_str());
  }
  bool any_m1 = false;
  for (const auto& r : rows)
    any_m1 = any_m1 || r.shape.m == 1;
  if (!any_m1) return;
  std::printf(
      "\nM = 1: weight GB/s (packed weight bytes / median time); hot = one weight reused, "
      "cold = rotated through copies > 2.5 x L3; read = memchr bandwidth at that thread count\n");
  std::printf("%6s %6s %3s %6s | %8s %8s | %8s %8s | %8s %8s | %8s %8s", "N", "K", "thr", "read",
              "ours hot", "cold", "dnnl hot", "cold", "sgemm hot", "cold", "sgemv hot", "cold");
#ifdef LUCIDQ_BENCH_WEIGHT_ONLY
  std::printf(" | %8s %8s | %8s %8s", "wo4 hot", "cold", "wo8 hot", "cold");
#endif
  std::printf("\n");
  const auto gbs = [](const Row& r, const std::string& name) {
    const auto it = r.t.find(name);
    return it == r.t.end() ? std::string("-")
                           : fmt("%.1f", static_cast<double>(it->second.weight_bytes) /
                                             it->second.median_s / 1e9);
  };
  for (const auto& r : rows) {
    if (r.shape.m != 1) continue;
    const double read = bandwidth.count(r.threads) ? bandwidth.at(r.threads).read_gbs : 0;
    std::printf("%6lld %6lld %3d %6.1f | %8s %8s | %8s %8s | %8s %8s | %8s %8s",
                static_cast<long long>(r.shape.n), static_cast<long long>(r.shape.k), r.threads,
                read, gbs(r, "lucidq_f32").c_str(), gbs(r, "lucidq_f32_cold").c_str(),
                gbs(r, "onednn_f32").c_str(), gbs(r, "onednn_f32_cold").c_str(),
                gbs(r, "openblas_f32").c_str(), gbs(r, "openblas_f32_cold").c_str(),
                gbs(r, "openblas_gemv").c_str(), gbs(r, "openblas_gemv_cold").c_str());
#ifdef LUCIDQ_BENCH_WEIGHT_ONLY
    std::printf(" | %8s %8s | %8s %8s", gbs(r, "lucidq_wo_int4_g128").c_str(),
                gbs(r, "lucidq_wo_int4_g128_cold").c_str(), gbs(r, "lucidq_wo_int8_pc").c_str(),
                gbs(r, "lucidq_wo_int8_pc_cold").c_str());
#endif
    std::printf("\n");
  }
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

void write_json(const std::string& path, const std::map<std::string, std::string>& machine,
                const std::map<int, B::Int8Peak>& peaks,
                const std::map<int, B::Bandwidth>& bandwidth, const std::vector<Row>& rows,
                const Options& o) {
  std::ofstream out(path);
  out << "{\n  \"machine\": {";
  const char* sep = "";
  for (const auto& [key, value] : machine) {
    out << sep << "\n    " << quoted(key) << ": " << quoted(value);
    sep = ",";
  }
  out << "\n  },\n  \"reps\": " << o.reps << ", \"min_time_s\": " << o.min_time
      << ",\n  \"peak\": [";
  sep = "";
  for (const auto& [threads, p] : peaks) {
    out << sep << "\n    {\"threads\": " << threads << ", \"kernel\": " << quoted(p.kernel)
        << ", \"ghz\": " << p.ghz << ", \"mac_per_cycle\": " << p.macs_per_cycle
        << ", \"gops\": " << p.gops() << ", \"median_gops\": " << p.median_gops() << "}";
    sep = ",";
  }
  out << "\n  ],\n  \"bandwidth\": [";
  sep = "";
  for (const auto& [threads, b] : bandwidth) {
    out << sep << "\n    {\"threads\": " << threads << ", \"bytes\": " << b.bytes
        << ", \"memcpy_gbs\": " << b.memcpy_gbs << ", \"read_gbs\": " << b.read_gbs
        << ", \"best_memcpy_gbs\": " << b.best_memcpy_gbs
        << ", \"best_read_gbs\": " << b.best_read_gbs << "}";
    sep = ",";
  }
  out << "\n  ],\n  \"results\": [";
  sep = "";
  for (const auto& r : rows) {
    out << sep << "\n    {\"family\": " << quoted(r.shape.family) << ", \"m\": " << r.shape.m
        << ", \"n\": " << r.shape.n << ", \"k\": " << r.shape.k << ", \"threads\": " << r.threads
        << ", \"onednn_impl\": " << quoted(r.onednn_impl) << ", \"times\": {";
    const char* sep2 = "";
    for (const auto& [name, t] : r.t) {
      out << sep2 << "\n      " << quoted(name) << ": {\"median_s\": " << t.median_s
          << ", \"min_s\": " << t.min_s << ", \"runs\": " << t.runs << ", \"calls\": " << t.calls
          << ", \"weight_bytes\": " << t.weight_bytes << ", \"copies\": " << t.copies << "}";
      sep2 = ",";
    }
    out << "}}";
    sep = ",";
  }
  out << "\n  ]\n}\n";
}

std::string load_average() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "?";
  return fmt("%.2f", load[0]) + " " + fmt("%.2f", load[1]) + " " + fmt("%.2f", load[2]);
}

}  // namespace

B::GemmInputs B::make_inputs(std::int64_t m, std::int64_t n, std::int64_t k,
                             std::int32_t a_zero_point, bool with_float) {
  GemmInputs in;
  in.m = m;
  in.n = n;
  in.k = k;
  in.a_zero_point = a_zero_point;
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> u8(0, 255), s8(-127, 127);
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  in.a.resize(static_cast<std::size_t>(m * k));
  for (auto& v : in.a)
    v = static_cast<std::uint8_t>(u8(rng));
  in.w.resize(static_cast<std::size_t>(n * k));
  for (auto& v : in.w)
    v = static_cast<std::int8_t>(s8(rng));
  in.w_scales.resize(static_cast<std::size_t>(n));
  for (auto& v : in.w_scales)
    v = scale(rng) / 127.0f;
  if (with_float) {
    in.a_float.resize(in.a.size());
    for (std::size_t i = 0; i < in.a.size(); ++i)
      in.a_float[i] = in.a_scale * static_cast<float>(in.a[i] - a_zero_point);
    in.w_float.resize(in.w.size());
    for (std::size_t i = 0; i < in.w.size(); ++i)
      in.w_float[i] = in.w_scales[i / static_cast<std::size_t>(k)] * static_cast<float>(in.w[i]);
  }
  return in;
}

int main(int argc, char** argv) {
  Options o;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--quick")
      quick = true;
    else if (arg == "--shapes")
      o.shape_files.push_back(value());
    else if (arg == "--threads")
      o.threads = parse_ints(value());
    else if (arg == "--reps")
      o.reps = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--min-time")
      o.min_time = std::atof(value().c_str());
    else if (arg == "--json")
      o.json = value();
    else if (arg == "--no-cold")
      o.cold = false;
    else if (arg == "--l3-mib")
      o.l3_mib = std::atof(value().c_str());
    else if (arg == "--isa")
      o.isa = value();
    else
      usage(("unknown argument " + arg).c_str());
  }
  if (o.shape_files.empty())
    o.shape_files.push_back(std::string(LUCIDQ_BENCH_SHAPES_DIR) +
                            (quick ? "/quick.txt" : "/llm.txt"));
  if (quick) o.min_time = std::min(o.min_time, 0.05);
  std::vector<Shape> shapes;
  for (const auto& f : o.shape_files)
    for (const auto& s : read_shapes(f))
      shapes.push_back(s);

  try {
    if (!o.isa.empty()) Q::set_isa(Q::isa_from_string(o.isa));
    const double l3 = l3_bytes(o);
    std::map<std::string, std::string> machine{
        {"cpu_features", Q::cpu_features().describe()},
        {"lucidq_isa", Q::to_string(Q::active_isa())},
        {"l3_bytes", fmt("%.0f", l3)},
        {"hardware_threads", std::to_string(std::thread::hardware_concurrency())},
        {"load_average_start", load_average()}};
#ifdef LUCIDQ_BENCH_ONEDNN
    machine["onednn"] = B::onednn_version();
#endif
#ifdef LUCIDQ_BENCH_OPENBLAS
    machine["openblas"] = B::openblas_version();
#endif
#ifdef LUCIDQ_BENCH_WEIGHT_ONLY
    machine["weight_only"] =
        "int4 g128 symmetric f32-scales (4.25 bits/w); int8 per-channel symmetric (8 + 32/K "
        "bits/w); errors and the equal-bits formats: bench_weight_only";
#else
    machine["weight_only"] = "not built";
#endif
    for (const auto& [key, value] : machine)
      std::printf("%-20s %s\n", key.c_str(), value.c_str());
    std::printf("shapes: %zu from", shapes.size());
    for (const auto& f : o.shape_files)
      std::printf(" %s", f.c_str());
    std::printf("; threads:");
    for (const int t : o.threads)
      std::printf(" %d", t);
    std::printf("; %d samples of >= %.2f s each, median\n\n", o.reps, o.min_time);
    const Verification verification = verify();
    if (!verification.lucidq_exact) return 1;
    if (!verification.onednn.empty()) machine["onednn_verification"] = verification.onednn;

    std::map<int, B::Int8Peak> peaks;
    std::map<int, B::Bandwidth> bandwidth;
    for (const int t : o.threads) {
      set_threads(t);
      peaks[t] = B::measure_int8_peak(t, quick ? 50 : 200, 0.002);
      bandwidth[t] = B::measure_bandwidth(t, std::size_t{256} << 20, std::max(5, o.reps));
      const auto& p = peaks[t];
      const auto& b = bandwidth[t];
      std::printf(
          "threads %d: int8 peak (%s) %.1f GOP/s (median sample %.1f) = %.1f int8 MAC/cycle/core "
          "at %.2f GHz;\n  memcpy %.1f GB/s (read + write; best %.1f), read %.1f GB/s (best %.1f), "
          "256 MiB, medians of %d\n",
          t, p.kernel.c_str(), p.gops(), p.median_gops(), p.macs_per_cycle, p.ghz, b.memcpy_gbs,
          b.best_memcpy_gbs, b.read_gbs, b.best_read_gbs, std::max(5, o.reps));
    }
    std::fflush(stdout);

    std::vector<Row> rows;
    for (const auto& s : shapes) {
      bench_shape(s, o.threads, o, l3, rows);
      const auto& r = rows.back();
      std::fprintf(stderr, "done %lld %lld %lld (ours f32 %.3f ms at %d threads)\n",
                   static_cast<long long>(s.m), static_cast<long long>(s.n),
                   static_cast<long long>(s.k), r.t.at("lucidq_f32").median_s * 1e3, r.threads);
    }
    machine["load_average_end"] = load_average();
    print_table(rows, peaks, bandwidth);
    if (!verification.onednn.empty() && verification.onednn != "exact")
      std::printf("\nNote: the oneDNN columns time results that are wrong on this CPU (%s).\n",
                  verification.onednn.c_str());
    if (!rows.empty() && !rows[0].onednn_impl.empty()) {
      std::printf("\noneDNN implementations:");
      std::map<std::string, int> impls;
      for (const auto& r : rows)
        ++impls[r.onednn_impl];
      for (const auto& [name, count] : impls)
        std::printf(" %s (%d rows)", name.c_str(), count);
      std::printf("\n");
    }
    std::printf("load average start: %s, end: %s\n", machine["load_average_start"].c_str(),
                machine["load_average_end"].c_str());
    if (!o.json.empty()) write_json(o.json, machine, peaks, bandwidth, rows, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
