// Weight-only accuracy at equal bits: the relative RMS error of y = W · x (M = 1) against a
// float64 product, for ggml's Q4_0 / Q4_K / Q8_0 and lucidq's weight-only formats, beside the
// bits per weight each one streams.
//
//   weight_only_accuracy [--n N] [--k K] [--trials T] [--seed S]
//
// W is N × K, Gaussian or Student-t with 3 degrees of freedom; x is Gaussian. Two columns:
// - "float x": the weight's error alone. ggml: y = Σ ŵ · x in double over ggml's own decode
//   (ggml_dequantize_rows); lucidq: weight_only_gemm with WeightOnlyActivations::float32.
// - "int8 x": each side's int8-activation rule. ggml: x rounded as its vec_dot partner type
//   does (Q4_0 / Q8_0 with q8_0 blocks of 32 through ggml_quantize_rows; Q4_K with q8_K blocks
//   of 256, ggml's quantize_row_q8_K rule), then Σ ŵ · x̂ in double (ggml's integer dot and
//   float block combine differ from that by float rounding only); lucidq: weight_only_gemm with
//   WeightOnlyActivations::int8_dynamic (its own kernels, whatever tier is active).
// The error is sqrt(Σ (y − y64)² / Σ y64²) over all N outputs of all trials.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "lucid/quantization/ggml_quants.hpp"
#include "lucid/quantization/ggml_type.hpp"
#include "lucid/quantization/weight_only.hpp"

namespace Q = lucid::quantization;

namespace {

struct Options {
  std::int64_t n = 4096, k = 4096;
  int trials = 4;
  std::uint64_t seed = 20261202;
};

// Σ (y − ref)² and Σ ref², accumulated over trials.
struct ErrorSum {
  double err = 0, ref = 0;
  void add(const std::vector<double>& ref64, const std::vector<double>& y) {
    for (std::size_t i = 0; i < y.size(); ++i) {
      err += (y[i] - ref64[i]) * (y[i] - ref64[i]);
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

// ggml's quantize_row_q8_K rule (blocks of 256: d = max / −127 on the signed extreme, q clamped
// to 127), decoded back to float.
std::vector<float> q8_k_round_trip(const std::vector<float>& x) {
  std::vector<float> out(x.size(), 0.0f);
  for (std::size_t b = 0; b < x.size(); b += 256) {
    float amax = 0, max = 0;
    for (std::size_t i = b; i < b + 256; ++i) {
      if (std::abs(x[i]) > amax) {
        amax = std::abs(x[i]);
        max = x[i];
      }
    }
    if (amax == 0) continue;
    const float iscale = -127.f / max;
    for (std::size_t i = b; i < b + 256; ++i) {
      const int q = std::min(127, static_cast<int>(std::nearbyint(iscale * x[i])));
      out[i] = static_cast<float>(q) * (1 / iscale);
    }
  }
  return out;
}

std::vector<float> ggml_round_trip(Q::GgmlType type, const std::vector<float>& v, std::int64_t rows,
                                   std::int64_t cols) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(Q::ggml_row_size(type, cols) * rows));
  Q::ggml_quantize_rows(type, v.data(), bytes.data(), rows, cols, nullptr);
  std::vector<float> out(v.size());
  Q::ggml_dequantize_rows(type, bytes.data(), out.data(), rows, cols);
  return out;
}

struct Row {
  std::string name;
  double bits_per_weight = 0;
  ErrorSum float_x, int8_x;
};

void print_rows(const char* dist, const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    std::printf("| %-9s | %-44s | %6.3f | %8.4f | %8.4f |\n", dist, r.name.c_str(),
                r.bits_per_weight, r.float_x.relative(), r.int8_x.relative());
  }
}

// The lucidq formats measured (name, format).
std::vector<std::pair<std::string, Q::WeightOnlyFormat>> lucidq_formats() {
  std::vector<std::pair<std::string, Q::WeightOnlyFormat>> out;
  const auto add = [&](int bits, std::int64_t group, bool symmetric, Q::ScaleType scales,
                       Q::WeightOnlyGrid grid) {
    Q::WeightOnlyFormat f;
    f.bits = bits;
    f.group_size = group;
    f.symmetric = symmetric;
    f.scale_type = scales;
    f.grid = grid;
    out.emplace_back("lucidq " + f.describe(), f);
  };
  using G = Q::WeightOnlyGrid;
  using S = Q::ScaleType;
  for (const G grid : {G::min_max, G::search}) {
    add(4, 32, true, S::f16, grid);  // 4.5 bits: Q4_0 / Q4_K's
    add(4, 32, true, S::bf16, grid);
    add(4, 64, false, S::f16, grid);   // 4.375
    add(4, 32, false, S::f16, grid);   // 4.75
    add(4, 128, true, S::bf16, grid);  // 4.125
    add(8, 32, true, S::f16, grid);    // 8.5: Q8_0's
    add(8, 0, true, S::f32, grid);
  }
  return out;
}

void run(const Options& o, const char* dist, bool student) {
  std::mt19937_64 rng(o.seed + (student ? 1 : 0));
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::student_t_distribution<float> t3(3.0f);
  std::vector<float> w(static_cast<std::size_t>(o.n * o.k));
  for (float& v : w)
    v = student ? t3(rng) : gauss(rng);
  std::vector<std::vector<float>> xs(static_cast<std::size_t>(o.trials));
  for (auto& x : xs) {
    x.resize(static_cast<std::size_t>(o.k));
    for (float& v : x)
      v = gauss(rng);
  }
  std::vector<std::vector<double>> ref(xs.size());
  for (std::size_t t = 0; t < xs.size(); ++t)
    ref[t] = product(w, xs[t], o.n, o.k);

  std::vector<Row> rows;
  struct Ggml {
    const char* name;
    Q::GgmlType type;
    bool q8_k;
  };
  for (const Ggml g :
       {Ggml{"ggml Q4_0", Q::GgmlType::Q4_0, false}, Ggml{"ggml Q4_K", Q::GgmlType::Q4_K, true},
        Ggml{"ggml Q8_0", Q::GgmlType::Q8_0, false}}) {
    Row row;
    row.name = g.name;
    row.bits_per_weight =
        8.0 * static_cast<double>(Q::ggml_row_size(g.type, o.k)) / static_cast<double>(o.k);
    const std::vector<float> decoded = ggml_round_trip(g.type, w, o.n, o.k);
    for (std::size_t t = 0; t < xs.size(); ++t) {
      row.float_x.add(ref[t], product(decoded, xs[t], o.n, o.k));
      const std::vector<float> xq =
          g.q8_k ? q8_k_round_trip(xs[t]) : ggml_round_trip(Q::GgmlType::Q8_0, xs[t], 1, o.k);
      row.int8_x.add(ref[t], product(decoded, xq, o.n, o.k));
    }
    rows.push_back(row);
  }
  for (const auto& [name, format] : lucidq_formats()) {
    Row row;
    row.name = name;
    const auto packed = Q::PackedWeightsLowBit::quantize(w.data(), o.n, o.k, o.k, format);
    row.bits_per_weight =
        8.0 * static_cast<double>(packed.packed_bytes()) / static_cast<double>(o.n * o.k);
    std::vector<float> y(static_cast<std::size_t>(o.n));
    const auto measure = [&](Q::WeightOnlyActivations a, ErrorSum& sum) {
      for (std::size_t t = 0; t < xs.size(); ++t) {
        Q::weight_only_gemm(xs[t].data(), 1, o.k, packed, nullptr, y.data(), o.n,
                            Q::WeightOnlyOptions{a});
        sum.add(ref[t], std::vector<double>(y.begin(), y.end()));
      }
    };
    measure(Q::WeightOnlyActivations::float32, row.float_x);
    measure(Q::WeightOnlyActivations::int8_dynamic, row.int8_x);
    rows.push_back(row);
  }
  print_rows(dist, rows);
}

std::int64_t parse(const char* flag, const char* value) {
  char* end = nullptr;
  const long long v = std::strtoll(value, &end, 10);
  if (end == value || *end != '\0' || v < 1) {
    std::fprintf(stderr, "weight_only_accuracy: error: %s = %s (expected a positive integer)\n",
                 flag, value);
    std::exit(1);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "weight_only_accuracy: error: %s needs a value\n", flag.c_str());
      return 1;
    }
    const std::int64_t v = parse(argv[i], argv[i + 1]);
    ++i;
    if (flag == "--n") {
      o.n = v;
    } else if (flag == "--k") {
      o.k = v;
    } else if (flag == "--trials") {
      o.trials = static_cast<int>(v);
    } else if (flag == "--seed") {
      o.seed = static_cast<std::uint64_t>(v);
    } else {
      std::fprintf(stderr,
                   "weight_only_accuracy: error: unknown flag %s (expected --n, --k, --trials, "
                   "--seed)\n",
                   flag.c_str());
      return 1;
    }
  }
  if (o.k % 256 != 0) {
    std::fprintf(stderr, "weight_only_accuracy: error: --k = %lld (expected a multiple of 256)\n",
                 static_cast<long long>(o.k));
    return 1;
  }
  std::printf(
      "W %lld x %lld, M = 1, %d trials of Gaussian x, seed %llu (LUCIDQ_ISA pins the tier)\n",
      static_cast<long long>(o.n), static_cast<long long>(o.k), o.trials,
      static_cast<unsigned long long>(o.seed));
  std::printf(
      "| W         | format                                       | bits/w | float x  | int8 x   "
      "|\n");
  std::printf("|---|---|---|---|---|\n");
  run(o, "gaussian", false);
  run(o, "student-t3", true);
  return 0;
}
