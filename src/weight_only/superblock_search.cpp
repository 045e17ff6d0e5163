// The super6 search (weight_only/superblock_search.hpp): Q4_K's parameters, refined on the
// stored values' squared error.
#include "weight_only/superblock_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/affine_spec.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/ggml_kquant_finish.hpp"
#include "kernels/reference/ggml_kernels.hpp"
#include "kernels/reference/ggml_search.hpp"
#include "lucid/quantization/scalar_type.hpp"

namespace lucid::quantization::weight_only {
namespace {

constexpr int groups = 8;
constexpr int length = 32;
constexpr int window = 3;  // sc and m tried within ±window of the current ones

// A float16 bit pattern that is finite.
bool finite16(std::uint16_t bits) {
  return (bits & 0x7c00u) != 0x7c00u;
}

// The stored group parameters: s = fl(d · sc), o = fl(dmin · m).
struct Affine {
  float s, o;
};

Affine affine(float d, float dmin, int sc, int m) {
  return {d * static_cast<float>(sc), dmin * static_cast<float>(m)};
}

// Σ e2[0, 32): 8 float partial sums (lane j adds e2[j], e2[j + 8], ...), then those in double.
double sum(const float* e2) {
  float part[8] = {};
  for (int i = 0; i < length; i += 8)
    for (int j = 0; j < 8; ++j)
      part[j] += e2[i + j];
  double total = 0;
  for (const float p : part)
    total += p;
  return total;
}

// Rounds a group's codes to (s, o) (nearest of (w + o) · fl(1 / s), clamped to 0..15; 0 when
// s = 0) and returns Σ (w − ŵ)² with ŵ = fl(s · q) − o as decode() forms it, each square in
// float (loops the compiler vectorises: the search's inner loop).
double round_group(const float* w, Affine a, std::uint8_t* q) {
  const float inv = a.s != 0.0f ? 1.0f / a.s : 0.0f;
  float t[length], e2[length];
  constexpr std::int32_t fifteen = 0x41700000;  // the bits of 15.0f
  for (int i = 0; i < length; ++i) {
    // Clamped to [0, 15] on the bit patterns (for floats >= 0 their integer order; a negative
    // float is a negative int32): an integer loop the compiler vectorises, where float
    // comparisons stay branches.
    const float v = (w[i] + a.o) * inv;
    std::int32_t bits;
    std::memcpy(&bits, &v, 4);
    bits = bits > 0 ? bits : 0;
    bits = bits < fifteen ? bits : fifteen;
    float c;
    std::memcpy(&c, &bits, 4);
    t[i] = kernels::round_half_even(c);
  }
  for (int i = 0; i < length; ++i) {
    q[i] = static_cast<std::uint8_t>(static_cast<std::int32_t>(t[i]));
    const float e = w[i] - (a.s * t[i] - a.o);
    e2[i] = e * e;
  }
  return sum(e2);
}

// Σ (w − ŵ)² of a group with its codes given, as round_group computes it.
double group_error(const float* w, Affine a, const std::uint8_t* q) {
  float e2[length];
  for (int i = 0; i < length; ++i) {
    const float e = w[i] - (a.s * static_cast<float>(q[i]) - a.o);
    e2[i] = e * e;
  }
  return sum(e2);
}

// The squared error of a super-block in double, from the stored values exactly as decode()
// forms ŵ: the final comparison with Q4_K's block.
double exact_error(const float* w, const SuperBlock& p, const std::uint8_t* q) {
  const float d = float16_to_float(p.d), dmin = float16_to_float(p.dmin);
  double total = 0;
  for (int j = 0; j < groups; ++j) {
    const Affine a = affine(d, dmin, p.sc[j], p.m[j]);
    for (int l = 0; l < length; ++l) {
      const double e =
          double{w[length * j + l]} - (a.s * static_cast<float>(q[length * j + l]) - a.o);
      total += e * e;
    }
  }
  return total;
}

struct State {
  SuperBlock p;
  std::uint8_t q[groups * length];
  double err[groups];
  double total() const {
    double t = 0;
    for (const double e : err)
      t += e;
    return t;
  }
};

// A Q4_K block of w unpacked into a State (its codes as ggml stores them).
State from_block(const float* w, const kernels::BlockQ4_K& block) {
  State s;
  s.p = unpack_q4_k(&block, s.q);
  const float d = float16_to_float(s.p.d), dmin = float16_to_float(s.p.dmin);
  for (int j = 0; j < groups; ++j)
    s.err[j] = group_error(w + length * j, affine(d, dmin, s.p.sc[j], s.p.m[j]), s.q + length * j);
  return s;
}

// Q4_K's block for w (ggml's search, each element weighted by rms(w) + |w|).
State from_q4_k(const float* w) {
  kernels::BlockQ4_K block;
  kernels::reference::quantize_row_q4_k(w, &block, groups * length, nullptr);
  return from_block(w, block);
}

// ggml's Q4_K search and block finish with every element weighted 1: the plain squared error
// that the output error follows.
State from_unweighted(const float* w) {
  float scales[groups], mins[groups];
  std::uint8_t L[groups * length], Laux[length];
  float ones[length];
  std::fill(ones, ones + length, 1.0f);
  for (int j = 0; j < groups; ++j) {
    scales[j] = kernels::reference::make_qkx2_quants(
        length, 15, w + length * j, ones, L + length * j, &mins[j], Laux, -1.0f, 0.1f, 20, false);
  }
  kernels::BlockQ4_K block;
  kernels::finish_q4_k(w, scales, mins, nullptr, L, block);
  return from_block(w, block);
}

// The (d, dmin) minimizing Σ (w − d · sc · q + dmin · m)² for the state's integers; false when
// the system is singular.
bool least_squares(const float* w, const State& s, double& d, double& dmin) {
  double aa = 0, ab = 0, bb = 0, wa = 0, wb = 0;
  for (int j = 0; j < groups; ++j) {
    const double b = s.p.m[j];
    for (int l = 0; l < length; ++l) {
      const double a = static_cast<double>(s.p.sc[j]) * s.q[length * j + l];
      const double x = w[length * j + l];
      aa += a * a;
      ab += a * b;
      bb += b * b;
      wa += x * a;
      wb += x * b;
    }
  }
  if (bb == 0) {  // no minimums: d alone
    if (aa == 0) return false;
    d = wa / aa;
    dmin = 0;
    return true;
  }
  // [aa −ab; −ab bb] · [d; dmin] = [wa; −wb]
  const double det = aa * bb - ab * ab;
  if (!(std::fabs(det) > 1e-12 * aa * bb)) return false;
  d = (wa * bb - ab * wb) / det;
  dmin = (wa * ab - aa * wb) / det;
  return true;
}

// Re-rounds every group's codes to (d, dmin) and keeps the state if its error is lower.
void try_factors(const float* w, std::uint16_t d16, std::uint16_t dmin16, State& best) {
  if (!finite16(d16) || !finite16(dmin16)) return;
  State c = best;
  c.p.d = d16;
  c.p.dmin = dmin16;
  const float d = float16_to_float(d16), dmin = float16_to_float(dmin16);
  for (int j = 0; j < groups; ++j)
    c.err[j] = round_group(w + length * j, affine(d, dmin, c.p.sc[j], c.p.m[j]), c.q + length * j);
  if (c.total() < best.total()) best = c;
}

// Every sc, m within ±window of group j's, the codes re-rounded: keeps the best.
void refine_group(const float* w, int j, State& s) {
  const float d = float16_to_float(s.p.d), dmin = float16_to_float(s.p.dmin);
  std::uint8_t q[length];
  const int sc0 = s.p.sc[j], m0 = s.p.m[j];
  for (int sc = std::max(0, sc0 - window); sc <= std::min(63, sc0 + window); ++sc) {
    for (int m = std::max(0, m0 - window); m <= std::min(63, m0 + window); ++m) {
      const double err = round_group(w + length * j, affine(d, dmin, sc, m), q);
      if (err < s.err[j]) {
        s.err[j] = err;
        s.p.sc[j] = static_cast<std::uint8_t>(sc);
        s.p.m[j] = static_cast<std::uint8_t>(m);
        std::memcpy(s.q + length * j, q, length);
      }
    }
  }
}

// The local search from `best`: up to `passes` rounds of the least-squares factors and the
// sub-parameter window.
void refine(const float* w, int passes, State& best) {
  for (int pass = 0; pass < passes; ++pass) {
    const double before = best.total();
    double d = 0, dmin = 0;
    if (least_squares(w, best, d, dmin)) {
      const std::uint16_t d16 = float_to_float16(static_cast<float>(d));
      const std::uint16_t dmin16 = float_to_float16(static_cast<float>(dmin));
      for (int a = -1; a <= 1; ++a)
        for (int b = -1; b <= 1; ++b)
          try_factors(w, static_cast<std::uint16_t>(d16 + a),
                      static_cast<std::uint16_t>(dmin16 + b), best);
    }
    for (int j = 0; j < groups; ++j)
      refine_group(w, j, best);
    if (!(best.total() < before)) break;
  }
}

}  // namespace

SuperBlock unpack_q4_k(const void* block, std::uint8_t* q) {
  kernels::BlockQ4_K b;
  std::memcpy(&b, block, sizeof b);
  SuperBlock p;
  p.d = b.d;
  p.dmin = b.dmin;
  for (int j = 0; j < groups; ++j) {
    kernels::scale_min_k4(j, b.scales, &p.sc[j], &p.m[j]);
    const std::uint8_t* bytes = b.qs + 16 * (j / 2 * 2);  // groups 2i, 2i + 1: low, high nibbles
    for (int l = 0; l < length; ++l)
      q[length * j + l] = static_cast<std::uint8_t>(j % 2 == 0 ? bytes[l] & 0xf : bytes[l] >> 4);
  }
  return p;
}

SuperBlock search_superblock(const float* w, std::uint8_t* q, int passes) {
  const State start = from_q4_k(w);
  State best = start;
  refine(w, passes, best);
  State other = from_unweighted(w);
  refine(w, passes, other);
  if (other.total() < best.total()) best = other;
  // The search's sums round each square to float: confirm in double against Q4_K's block.
  // (A start that overflowed float16 has no finite error; then the search's end stands.)
  const double start_error = exact_error(w, start.p, start.q);
  if (std::isfinite(start_error) && !(exact_error(w, best.p, best.q) <= start_error)) best = start;
  std::memcpy(q, best.q, sizeof best.q);
  return best.p;
}

}  // namespace lucid::quantization::weight_only
