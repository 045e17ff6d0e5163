// Reference tier of the weight-only GEMM: y = bias + Σ_k x · s · (q − z) (super6: x · (s · q − o))
// in double, rounded once.
//
// The specification the ISA tiers are tested against: plain loops over the
// packed layout through the scalar accessors of weight_only/layout.hpp.
// s · (q − z) is exact in double (a float times an integer below 2^9), so
// each term carries one rounding and the sum K more, all in double (super6: s · q is exact in
// double, s · q − o rounds once more).
#include <cmath>

#include "kernels/weight_only.hpp"

namespace lucid::quantization::weight_only {
void weight_only_f32_16c__reference(const GemmArgs& a, std::int64_t panel_begin,
                                    std::int64_t panel_end) {
  const PackedView& v = a.w;
  for (std::int64_t panel = panel_begin; panel < panel_end; ++panel) {
    for (std::int64_t c = 0; c < panel_width; ++c) {
      const std::int64_t col = panel * panel_width + c;
      if (col >= v.n) break;
      for (std::int64_t r = 0; r < a.m; ++r) {
        const float* x = a.x + r * a.x_stride;
        double acc = 0.0;
        for (std::int64_t j = 0; j < v.groups; ++j) {
          const std::uint8_t* rec = v.record(panel, j);
          const std::uint8_t* meta = rec + v.code_bytes(v.padded_length(j));
          const std::int64_t k0 = j * v.group_length;
          const std::int64_t len = v.k - k0 < v.group_length ? v.k - k0 : v.group_length;
          if (v.superblock()) {  // ŵ = s · v − o, exact in double
            const GroupAffine g = group_affine(v, panel, j, meta, c);
            for (std::int64_t t = 0; t < len; ++t) {
              const double w = static_cast<double>(g.scale) * lane_value(v, rec, c, t) -
                               static_cast<double>(g.offset);
              acc += static_cast<double>(x[k0 + t]) * w;
            }
            continue;
          }
          const double s = meta_scale(v, meta, c);
          const std::int32_t z = meta_zero_point(v, meta, c);
          for (std::int64_t t = 0; t < len; ++t) {
            const double w = s * static_cast<double>(lane_value(v, rec, c, t) - z);
            acc += static_cast<double>(x[k0 + t]) * w;
          }
        }
        if (a.bias != nullptr) acc += static_cast<double>(a.bias[col]);
        a.y[r * a.y_stride + col] = static_cast<float>(acc);
      }
    }
  }
}

namespace {

// One group of an output: its record, meta block, first k and length.
struct GroupView {
  const std::uint8_t* rec;
  const std::uint8_t* meta;
  std::int64_t panel, k0, len;
};

// Calls acc = group(r, c, g, acc) for the groups of every (row r, channel c) output in order,
// then stores y = finish(r, col, acc): the loops both int8-activation references share.
template <class Group, class Finish>
void each_output(const Int8Args& a, std::int64_t panel_begin, std::int64_t panel_end, Group&& group,
                 Finish&& finish) {
  const PackedView& v = a.w;
  for (std::int64_t panel = panel_begin; panel < panel_end; ++panel) {
    for (std::int64_t c = 0; c < panel_width; ++c) {
      const std::int64_t col = panel * panel_width + c;
      if (col >= v.n) break;
      for (std::int64_t r = 0; r < a.m; ++r) {
        float acc = 0.0f;
        for (std::int64_t j = 0; j < v.groups; ++j) {
          const std::uint8_t* rec = v.record(panel, j);
          const std::int64_t k0 = j * v.group_length;
          const GroupView g{rec, rec + v.code_bytes(v.padded_length(j)), panel, k0,
                            v.k - k0 < v.group_length ? v.k - k0 : v.group_length};
          acc = group(r, c, j, g, acc);
        }
        a.y[r * a.y_stride + col] = finish(r, col, acc);
      }
    }
  }
}

}  // namespace

// The int8-activation path (docs/numerics.md, "The int8-activation path" and "Block-wise
// activation scales"): exact integer group sums, then float32 steps in this order, each one
// rounding (std::fma is fused).
void weight_only_u8_16c__reference(const Int8Args& a, std::int64_t panel_begin,
                                   std::int64_t panel_end) {
  const PackedView& v = a.w;
  const float* bias = a.bias;
  if (a.x_block_scales != nullptr) {
    // Block-wise activations: D = Σ xq · (q − z) exact (|D| < 2^31 for groups <= 65536, the
    // driver checks), acc = fma(fl(s · s_x), float(D), acc), y = acc + bias.
    each_output(
        a, panel_begin, panel_end,
        [&](std::int64_t r, std::int64_t c, std::int64_t j, const GroupView& g, float acc) {
          const std::uint8_t* xq = a.xq + r * a.xq_stride;
          const bool super = v.superblock();
          const std::int32_t z = super ? 0 : meta_zero_point(v, g.meta, c);
          std::int64_t dot = 0;
          for (std::int64_t t = 0; t < g.len; ++t) {
            const auto x = static_cast<std::int8_t>(xq[int8_staged_index(v, g.k0 + t)]);
            dot += std::int64_t{x} * (lane_value(v, g.rec, c, t) - z);
          }
          const float sx = a.x_block_scales[r * v.groups + j];
          if (super) {
            // P = Σ xq · v and Sx = Σ xq exact: acc = fma(fl(s · s_x), P, acc), then
            // acc = fma(−fl(o · s_x), Sx, acc).
            const GroupAffine p = group_affine(v, g.panel, j, g.meta, c);
            acc = std::fma(p.scale * sx, static_cast<float>(dot), acc);
            return std::fma(-(p.offset * sx), static_cast<float>(a.xq_group_sums[r * v.groups + j]),
                            acc);
          }
          return std::fma(meta_scale(v, g.meta, c) * sx, static_cast<float>(dot), acc);
        },
        [&](std::int64_t, std::int64_t col, float acc) {
          return acc + (bias != nullptr ? bias[col] : 0.0f);
        });
    return;
  }
  each_output(
      a, panel_begin, panel_end,
      [&](std::int64_t r, std::int64_t c, std::int64_t j, const GroupView& g, float acc) {
        const std::uint8_t* xq = a.xq + r * a.xq_stride;
        std::int64_t dot = 0;  // fits int32 for groups <= 65536 (the driver checks)
        for (std::int64_t t = 0; t < g.len; ++t)
          dot += std::int64_t{xq[int8_staged_index(v, g.k0 + t)]} * int8_lane(v, g.rec, c, t);
        const GroupAffine p = group_affine(v, g.panel, j, g.meta, c);
        acc = std::fma(p.scale, static_cast<float>(dot), acc);
        if (!v.symmetric) acc = std::fma(-p.offset, a.x_group_sums[r * v.groups + j], acc);
        return acc;
      },
      [&](std::int64_t r, std::int64_t col, float acc) {
        acc = std::fma(-a.x_zero[r], v.int8_weight_sums[col], acc);
        return std::fma(a.x_scale[r], acc, bias != nullptr ? bias[col] : 0.0f);
      });
}

}  // namespace lucid::quantization::weight_only
