// Test helpers for the weight-only GEMM: random data, the exact product, and the rounding bound.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "lucid/quantization/qparams.hpp"
#include "lucid/quantization/weight_only.hpp"

namespace lucid::quantization::testing {

inline std::vector<float> gaussian(std::size_t count, std::mt19937_64& rng, float sigma = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> out(count);
  for (float& v : out)
    v = dist(rng);
  return out;
}

/// A WeightOnlyFormat from its fields.
inline WeightOnlyFormat make_format(int bits, std::int64_t group, bool symmetric,
                                    ScaleType scales = ScaleType::f32,
                                    WeightOnlyGrid grid = WeightOnlyGrid::search) {
  WeightOnlyFormat f;
  f.bits = bits;
  f.group_size = group;
  f.symmetric = symmetric;
  f.scale_type = scales;
  f.grid = grid;
  return f;
}

/// The quantized weight's parameters in plain row-major form, read once.
struct PlainWeights {
  std::int64_t n, k, groups, group_length;
  std::vector<std::int32_t> q, z;
  std::vector<float> s;
  explicit PlainWeights(const PackedWeightsLowBit& w)
      : n(w.rows()),
        k(w.columns()),
        groups(w.groups_per_row()),
        group_length(w.format().group_size == 0 ? w.columns() : w.format().group_size),
        q(w.codes()),
        z(w.zero_points()),
        s(w.scales()) {}
  std::size_t group_index(std::int64_t row, std::int64_t col) const {
    return static_cast<std::size_t>(row * groups + col / group_length);
  }
};

/// y = bias + Σ_k x · s · (q − z) in double (the exact product of x and ŵ, up to double rounding).
inline std::vector<double> exact_product(const std::vector<float>& x, std::int64_t m,
                                         const PlainWeights& w, const float* bias) {
  std::vector<double> y(static_cast<std::size_t>(m * w.n));
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t c = 0; c < w.n; ++c) {
      double acc = 0.0;
      for (std::int64_t t = 0; t < w.k; ++t) {
        const std::size_t g = w.group_index(c, t);
        const double wv =
            double(w.s[g]) * double(w.q[static_cast<std::size_t>(c * w.k + t)] - w.z[g]);
        acc += double(x[static_cast<std::size_t>(r * w.k + t)]) * wv;
      }
      if (bias != nullptr) acc += double(bias[c]);
      y[static_cast<std::size_t>(r * w.n + c)] = acc;
    }
  }
  return y;
}

/// The float32 rounding bound of the kernels (docs/numerics.md, "Weight-only GEMM"):
/// |y − y_exact| ≤ (L + G + 6) · u · Σ_k |x_k| · s_k · (|q_k| + |z_k|) + u · |y_exact|,
/// u = 2^-24, L the longest group (padded to 8), G the groups per row.
inline double rounding_bound(const std::vector<float>& x, std::int64_t row, const PlainWeights& w,
                             std::int64_t col, double y_exact) {
  const double u = std::ldexp(1.0, -24);
  const double longest = double((std::min(w.group_length, w.k) + 7) / 8 * 8);
  double magnitude = 0.0;
  for (std::int64_t t = 0; t < w.k; ++t) {
    const std::size_t g = w.group_index(col, t);
    magnitude += std::fabs(double(x[static_cast<std::size_t>(row * w.k + t)])) *
                 std::fabs(double(w.s[g])) *
                 (std::abs(w.q[static_cast<std::size_t>(col * w.k + t)]) + std::abs(w.z[g]));
  }
  return (longest + double(w.groups) + 6.0) * u * magnitude + u * std::fabs(y_exact);
}

/// The int8-activation path's specification (docs/numerics.md, "The int8-activation path"),
/// written independently of the library's kernels from the public accessors: per row uint8
/// affine qparams from the row's min / max, codes clamp(nearbyint(x · fl(1 / s_x)) + z_x), the
/// weight codes moved onto int8 (w8 = q, or for affine grids q − grid_min, − 128 more for
/// 8 bits) with zw the zero point moved alike, exact integer group sums, then the float32
/// steps with single roundings in the documented order.
inline std::vector<float> int8_path_spec(const std::vector<float>& x, std::int64_t m,
                                         const PackedWeightsLowBit& packed, const float* bias) {
  const PlainWeights w(packed);
  const bool sym = packed.format().symmetric;
  const auto grid_min = static_cast<std::int32_t>(packed.to_quantized().qdtype().quant_min());
  const std::int32_t shift = sym ? 0 : grid_min + (packed.format().bits == 8 ? 128 : 0);
  std::vector<float> y(static_cast<std::size_t>(m * w.n));
  std::vector<std::int32_t> xq(static_cast<std::size_t>(w.k));
  for (std::int64_t r = 0; r < m; ++r) {
    const float* row = x.data() + r * w.k;
    float lo = row[0], hi = row[0];
    for (std::int64_t t = 0; t < w.k; ++t) {
      lo = std::min(lo, row[t]);
      hi = std::max(hi, row[t]);
    }
    const QParams qp = calculate_qparams(lo, hi, QScheme::PER_TENSOR_AFFINE, quint8);
    const float sx = qp.scale[0];
    const std::int32_t zx = qp.zero_point[0];
    const float inv = 1.0f / sx;
    for (std::int64_t t = 0; t < w.k; ++t) {
      const float product = row[t] * inv;
      const auto code = static_cast<std::int32_t>(std::nearbyint(product)) + zx;
      xq[static_cast<std::size_t>(t)] = std::clamp(code, 0, 255);
    }
    for (std::int64_t c = 0; c < w.n; ++c) {
      float acc = 0.0f, weight_sum = 0.0f;
      for (std::int64_t j = 0; j < w.groups; ++j) {
        const std::size_t g = static_cast<std::size_t>(c * w.groups + j);
        const std::int64_t k0 = j * w.group_length, k1 = std::min(w.k, k0 + w.group_length);
        std::int64_t dot = 0, wsum = 0, xsum = 0;
        for (std::int64_t t = k0; t < k1; ++t) {
          const std::int64_t w8 = w.q[static_cast<std::size_t>(c * w.k + t)] - shift;
          dot += xq[static_cast<std::size_t>(t)] * w8;
          wsum += w8;
          xsum += xq[static_cast<std::size_t>(t)] - zx;
        }
        acc = std::fma(w.s[g], static_cast<float>(dot), acc);
        if (!sym) {
          const float szp = w.s[g] * static_cast<float>(w.z[g] - shift);
          acc = std::fma(-szp, static_cast<float>(xsum), acc);
        }
        weight_sum = std::fma(w.s[g], static_cast<float>(wsum), weight_sum);
      }
      acc = std::fma(-static_cast<float>(zx), weight_sum, acc);
      y[static_cast<std::size_t>(r * w.n + c)] =
          std::fma(sx, acc, bias != nullptr ? bias[c] : 0.0f);
    }
  }
  return y;
}

/// The block-wise int8-activation path's specification (docs/numerics.md, "Block-wise
/// activation scales"), from the public accessors: per row and weight group s_x = max|x| / 127,
/// xq = clamp(nearbyint(x · fl(1 / s_x)), −127, 127) (0 when s_x = 0), D = Σ xq · (q − z)
/// exact, acc = fma(fl(s · s_x), float(D), acc) in group order, y = acc + bias.
inline std::vector<float> int8_blocks_spec(const std::vector<float>& x, std::int64_t m,
                                           const PackedWeightsLowBit& packed, const float* bias) {
  const PlainWeights w(packed);
  std::vector<float> y(static_cast<std::size_t>(m * w.n));
  std::vector<std::int32_t> xq(static_cast<std::size_t>(w.k));
  std::vector<float> sx(static_cast<std::size_t>(w.groups));
  for (std::int64_t r = 0; r < m; ++r) {
    const float* row = x.data() + r * w.k;
    for (std::int64_t j = 0; j < w.groups; ++j) {
      const std::int64_t k0 = j * w.group_length, k1 = std::min(w.k, k0 + w.group_length);
      float amax = 0.0f;
      for (std::int64_t t = k0; t < k1; ++t)
        amax = std::max(amax, std::abs(row[t]));
      const float s = amax / 127.0f;
      const float inv = s != 0.0f ? 1.0f / s : 0.0f;
      sx[static_cast<std::size_t>(j)] = s;
      for (std::int64_t t = k0; t < k1; ++t) {
        xq[static_cast<std::size_t>(t)] =
            static_cast<std::int32_t>(std::clamp(std::nearbyint(row[t] * inv), -127.0f, 127.0f));
      }
    }
    for (std::int64_t c = 0; c < w.n; ++c) {
      float acc = 0.0f;
      for (std::int64_t j = 0; j < w.groups; ++j) {
        const std::size_t g = static_cast<std::size_t>(c * w.groups + j);
        const std::int64_t k0 = j * w.group_length, k1 = std::min(w.k, k0 + w.group_length);
        std::int64_t dot = 0;
        for (std::int64_t t = k0; t < k1; ++t)
          dot += std::int64_t{xq[static_cast<std::size_t>(t)]} *
                 (w.q[static_cast<std::size_t>(c * w.k + t)] - w.z[g]);
        acc = std::fma(w.s[g] * sx[static_cast<std::size_t>(j)], static_cast<float>(dot), acc);
      }
      y[static_cast<std::size_t>(r * w.n + c)] = acc + (bias != nullptr ? bias[c] : 0.0f);
    }
  }
  return y;
}

}  // namespace lucid::quantization::testing
