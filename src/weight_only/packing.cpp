// PackedWeightsLowBit: quantizing, packing into panels of group records, and reading codes back.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <string>

#include "core/large_buffer.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/pack.hpp"
#include "lucid/quantization/quantize.hpp"
#include "weight_only/grid_search.hpp"
#include "weight_only/layout.hpp"
#include "weight_only/superblock_search.hpp"

namespace lucid::quantization {
namespace {

using weight_only::k_step;
using weight_only::PackedView;
using weight_only::panel_width;

std::string str(std::int64_t v) {
  return std::to_string(v);
}

bool allowed_group(std::int64_t g) {
  return g == 0 || g == 32 || g == 64 || g == 128 || g == 256;
}

weight_only::ScaleStorage storage_of(ScaleType type) {
  switch (type) {
    case ScaleType::bf16:
      return weight_only::ScaleStorage::bf16;
    case ScaleType::f16:
      return weight_only::ScaleStorage::f16;
    case ScaleType::super6:
      return weight_only::ScaleStorage::super6;
    default:
      return weight_only::ScaleStorage::f32;
  }
}

float keep_f32(float s) {
  return s;
}
float round_to_bf16(float s) {
  return bfloat16_to_float(float_to_bfloat16(s));
}
float round_to_f16(float s) {
  return float16_to_float(float_to_float16(s));
}

// How a scale is rounded to its storage type before the codes are chosen.
weight_only::ScaleRounding rounding_of(ScaleType type) {
  switch (type) {
    case ScaleType::bf16:
      return &round_to_bf16;
    case ScaleType::f16:
      return &round_to_f16;
    default:
      return &keep_f32;
  }
}

void throw_scale_overflow(ScaleType type) {
  if (type == ScaleType::super6) {
    throw Error(
        "PackedWeightsLowBit::quantize: a super-block scale d or dmin overflows float16 (expected "
        "weights with |w| below ~6e7 for super6 scales; use bf16 or f32 scales for larger ones)");
  }
  throw Error("PackedWeightsLowBit::quantize: a group scale overflows " + to_string(type) +
              (type == ScaleType::f16 ? " (expected weights with |w| below ~5e5; use bf16 or f32 "
                                        "scales for larger ones)"
                                      : " (expected weights with |w| below ~3e38)"));
}

// The codes, scales and zero points of W in plain row-major form, before packing.
struct Plain {
  std::int64_t n = 0, k = 0;
  WeightOnlyFormat format;
  QDtype qdtype = qint4;
  QScheme qscheme = QScheme::PER_CHANNEL_SYMMETRIC;
  std::vector<std::int32_t> codes;              // [n, k], on qdtype's grid
  std::vector<float> scales;                    // [n, groups]
  std::vector<std::int32_t> zero_points;        // [n, groups]
  std::vector<weight_only::SuperBlock> supers;  // super6: [n, k / 256] instead of both
};

// Writes a super6 panel's SuperRecords and SubParams for channel c (row `row`).
void write_super(const Plain& p, const weight_only::PackedView& v, std::uint8_t* panel,
                 std::int64_t row, std::int64_t c) {
  const std::int64_t blocks = p.k / weight_only::super_length;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const weight_only::SuperBlock& sb = p.supers[static_cast<std::size_t>(row * blocks + b)];
    std::uint8_t* super = panel + b * weight_only::super_block_bytes;
    std::memcpy(super + 2 * c, &sb.d, 2);
    std::memcpy(super + 32 + 2 * c, &sb.dmin, 2);
    for (std::int64_t g = 0; g < weight_only::super_groups; ++g) {
      const std::int64_t j = b * weight_only::super_groups + g;
      std::uint8_t* meta = panel + v.record_offset(j) + v.code_bytes(v.padded_length(j));
      meta[c] = static_cast<std::uint8_t>((sb.sc[g] & 15) | (sb.m[g] & 15) << 4);
      std::uint32_t high[2];
      std::memcpy(high, meta + 16, 8);
      high[0] |= static_cast<std::uint32_t>(sb.sc[g] >> 4) << (2 * c);
      high[1] |= static_cast<std::uint32_t>(sb.m[g] >> 4) << (2 * c);
      std::memcpy(meta + 16, high, 8);
    }
  }
}

std::shared_ptr<const PackedWeightsLowBit::Layout> build(const Plain& p) {
  auto layout = std::make_shared<PackedWeightsLowBit::Layout>();
  layout->format = p.format;
  layout->qdtype = p.qdtype;
  layout->qscheme = p.qscheme;
  const bool sym = p.format.symmetric;
  layout->code_offset =
      (!sym && p.qdtype.is_signed()) ? -(std::int32_t{1} << (p.qdtype.bits() - 1)) : 0;

  PackedView v;
  v.n = p.n;
  v.k = p.k;
  v.k_padded = (p.k + k_step - 1) / k_step * k_step;
  v.group_length = p.format.group_size == 0 ? p.k : p.format.group_size;
  v.groups = (p.k + v.group_length - 1) / v.group_length;
  v.panels = (p.n + panel_width - 1) / panel_width;
  v.bits = p.format.bits;
  v.symmetric = sym;
  v.scales = storage_of(p.format.scale_type);
  v.record_bytes = v.code_bytes(v.padded_length(0)) + v.meta_bytes();
  v.panel_bytes = v.superblock()
                      ? v.groups / weight_only::super_groups * weight_only::super_block_bytes
                      : (v.groups - 1) * v.record_bytes +
                            v.code_bytes(v.padded_length(v.groups - 1)) + v.meta_bytes();
  const auto total = static_cast<std::size_t>(v.panels * v.panel_bytes);
  // Zeroed ByteBuffer: 64-byte aligned; from 4 MiB on, transparent huge pages, on which the
  // kernels' weight streams run faster (no prefetcher stop at every 4 KiB page).
  layout->storage = ByteBuffer::zeroed(total);
  std::uint8_t* raw = layout->storage.data();
  v.data = raw;
  v.huge_pages = detail::is_large(total);

  for (std::int64_t panel = 0; panel < v.panels; ++panel) {
    for (std::int64_t j = 0; j < v.groups; ++j) {
      std::uint8_t* rec = raw + panel * v.panel_bytes + v.record_offset(j);
      std::uint8_t* meta = rec + v.code_bytes(v.padded_length(j));
      const std::int64_t k0 = j * v.group_length;
      const std::int64_t len = std::min(v.group_length, p.k - k0);
      for (std::int64_t c = 0; c < panel_width; ++c) {
        const std::int64_t row = panel * panel_width + c;
        if (row >= p.n) break;  // padding channels: codes 0, scale 0
        if (v.superblock()) {
          if (j == 0) write_super(p, v, raw + panel * v.panel_bytes, row, c);
        } else if (v.scales != weight_only::ScaleStorage::f32) {
          const float s = p.scales[static_cast<std::size_t>(row * v.groups + j)];
          const std::uint16_t bits = v.scales == weight_only::ScaleStorage::bf16
                                         ? float_to_bfloat16(s)
                                         : float_to_float16(s);
          std::memcpy(meta + 2 * c, &bits, 2);
        } else {
          std::memcpy(meta + 4 * c, &p.scales[static_cast<std::size_t>(row * v.groups + j)], 4);
        }
        if (!sym && !v.superblock()) {
          meta[v.scale_bytes() + c] = static_cast<std::uint8_t>(
              p.zero_points[static_cast<std::size_t>(row * v.groups + j)] - layout->code_offset);
        }
        for (std::int64_t t = 0; t < len; ++t) {
          const std::int32_t q = p.codes[static_cast<std::size_t>(row * p.k + k0 + t)];
          const auto lane = static_cast<std::uint32_t>(sym ? q : q - layout->code_offset);
          if (v.bits == 4) {
            std::uint8_t* word = rec + ((t / 8) * panel_width + c) * 4;
            std::uint32_t value;
            std::memcpy(&value, word, 4);
            value |= (lane & 0xfu) << (4 * (t % 8));
            std::memcpy(word, &value, 4);
          } else {
            rec[(t / 4) * 64 + (t % 4) * panel_width + c] = static_cast<std::uint8_t>(lane);
          }
        }
      }
    }
  }
  // Per-channel weight sums of the int8-activation path (docs/numerics.md).
  layout->int8_weight_sums.assign(static_cast<std::size_t>(v.panels * panel_width), 0.0f);
  for (std::int64_t panel = 0; panel < v.panels; ++panel) {
    for (std::int64_t c = 0; c < panel_width && panel * panel_width + c < p.n; ++c) {
      float sum = 0.0f;
      for (std::int64_t j = 0; j < v.groups; ++j) {
        const std::uint8_t* rec = v.record(panel, j);
        const std::uint8_t* meta = rec + v.code_bytes(v.padded_length(j));
        const std::int64_t len = std::min(v.group_length, p.k - j * v.group_length);
        std::int32_t group_sum = 0;
        for (std::int64_t t = 0; t < len; ++t)
          group_sum += weight_only::int8_lane(v, rec, c, t);
        sum = std::fma(weight_only::group_affine(v, panel, j, meta, c).scale,
                       static_cast<float>(group_sum), sum);
      }
      layout->int8_weight_sums[static_cast<std::size_t>(panel * panel_width + c)] = sum;
    }
  }
  v.int8_weight_sums = layout->int8_weight_sums.data();
  layout->view = v;
  return layout;
}

// Per-group (or per-channel) scales and zero points of a QParams, laid out [n, groups].
void copy_params(const QParams& qp, std::int64_t n, std::int64_t groups, Plain& plain) {
  const std::size_t count = static_cast<std::size_t>(n * groups);
  plain.scales.resize(count);
  plain.zero_points.resize(count);
  const bool per_tensor = qp.scale.size() == 1 && count != 1;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t from =
        per_tensor ? 0 : (qp.is_per_group() ? i : i / static_cast<std::size_t>(groups));
    plain.scales[i] = qp.scale[from];
    plain.zero_points[i] = qp.zero_point[from];
  }
}

// Rewrites every group whose zero point is `marker` (symmetric scale s < 0 → marker −1 with
// scale −s, or back): codes q → −q − 1, scale → −scale, zero point marker ↔ 0. The same
// ŵ = s · (q − z) on a full-range signed grid (−q − 1 stays on it).
void flip_groups(Plain& p, std::int32_t marker) {
  const std::int64_t groups = static_cast<std::int64_t>(p.scales.size()) / p.n;
  const std::int64_t length = p.format.group_size == 0 ? p.k : p.format.group_size;
  for (std::int64_t r = 0; r < p.n; ++r) {
    for (std::int64_t j = 0; j < groups; ++j) {
      const auto g = static_cast<std::size_t>(r * groups + j);
      const bool negative_scale = marker == 0 && p.scales[g] < 0;
      if (!(negative_scale || (marker == -1 && p.zero_points[g] == -1))) continue;
      p.scales[g] = -p.scales[g];
      p.zero_points[g] = marker == 0 ? -1 : 0;
      for (std::int64_t t = j * length; t < std::min(p.k, (j + 1) * length); ++t) {
        std::int32_t& q = p.codes[static_cast<std::size_t>(r * p.k + t)];
        q = -q - 1;
      }
    }
  }
}

// The super6 search on every super-block of w (n × k dense, k a multiple of 256), in parallel
// over rows.
void quantize_super(const float* w, Plain& p) {
  const std::int64_t blocks = p.k / weight_only::super_length;
  p.codes.resize(static_cast<std::size_t>(p.n * p.k));
  p.supers.resize(static_cast<std::size_t>(p.n * blocks));
  const int pieces = kernels::threads_for(p.n * p.k * 64);
  std::atomic<bool> overflow{false};
  kernels::parallel_pieces(p.n, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    std::uint8_t q[weight_only::super_length];
    for (std::int64_t r = begin; r < end; ++r) {
      for (std::int64_t b = 0; b < blocks; ++b) {
        const std::int64_t at = r * p.k + b * weight_only::super_length;
        const weight_only::SuperBlock sb = weight_only::search_superblock(w + at, q);
        if (!std::isfinite(float16_to_float(sb.d)) || !std::isfinite(float16_to_float(sb.dmin))) {
          overflow = true;
        }
        p.supers[static_cast<std::size_t>(r * blocks + b)] = sb;
        std::copy(q, q + weight_only::super_length, p.codes.begin() + at);
      }
    }
  });
  if (overflow) throw_scale_overflow(ScaleType::super6);
}

}  // namespace

std::string to_string(ScaleType type) {
  switch (type) {
    case ScaleType::bf16:
      return "bf16";
    case ScaleType::f16:
      return "f16";
    case ScaleType::super6:
      return "super6";
    default:
      return "f32";
  }
}

std::string to_string(WeightOnlyGrid grid) {
  return grid == WeightOnlyGrid::search ? "search" : "min_max";
}

void WeightOnlyFormat::validate() const {
  if (bits != 4 && bits != 8) {
    throw Error("WeightOnlyFormat: bits = " + std::to_string(bits) + " (expected 4 or 8)");
  }
  if (!allowed_group(group_size)) {
    throw Error("WeightOnlyFormat: group_size = " + str(group_size) +
                " (expected 32, 64, 128, 256, or 0 for per-channel)");
  }
  if (scale_type != ScaleType::f32 && scale_type != ScaleType::bf16 &&
      scale_type != ScaleType::f16 && scale_type != ScaleType::super6) {
    throw Error("WeightOnlyFormat: scale_type = " + std::to_string(static_cast<int>(scale_type)) +
                " (expected f32, bf16, f16 or super6)");
  }
  if (scale_type == ScaleType::super6 && (bits != 4 || group_size != 32 || symmetric)) {
    throw Error("WeightOnlyFormat: super6 scales with bits = " + std::to_string(bits) +
                ", group_size = " + str(group_size) +
                ", symmetric = " + (symmetric ? "true" : "false") +
                " (expected bits = 4, group_size = 32, symmetric = false: super6 is int4 affine "
                "groups of 32 under super-blocks of 256)");
  }
  if (scale_type == ScaleType::super6 && grid != WeightOnlyGrid::search) {
    throw Error("WeightOnlyFormat: super6 scales with grid = " + to_string(grid) +
                " (expected search: super6 has its own search, docs/formats.md)");
  }
  if (grid != WeightOnlyGrid::search && grid != WeightOnlyGrid::min_max) {
    throw Error("WeightOnlyFormat: grid = " + std::to_string(static_cast<int>(grid)) +
                " (expected search or min_max)");
  }
}

double WeightOnlyFormat::bits_per_weight(std::int64_t k) const {
  if (scale_type == ScaleType::super6) return 4.5;  // 4 + 12 / 32 + 32 / 256
  const std::int64_t group = group_size == 0 ? k : group_size;
  const int meta_bits = (scale_type == ScaleType::f32 ? 32 : 16) + (symmetric ? 0 : 8);
  return bits + static_cast<double>(meta_bits) / static_cast<double>(group);
}

std::string WeightOnlyFormat::describe() const {
  std::string text = "int";
  text += std::to_string(bits);
  if (group_size == 0) {
    text += " per-channel ";
  } else {
    text += " g";
    text += str(group_size);
    text += ' ';
  }
  text += symmetric ? "symmetric " : "affine ";
  text += to_string(scale_type);
  text += "-scales";
  if (scale_type == ScaleType::super6) text += " (6-bit scales and mins, f16 per 256; 4.5 bits)";
  if (grid == WeightOnlyGrid::min_max) text += " min-max-grid";
  return text;
}

PackedWeightsLowBit PackedWeightsLowBit::quantize(const float* w, std::int64_t n, std::int64_t k,
                                                  std::int64_t row_stride,
                                                  const WeightOnlyFormat& format) {
  format.validate();
  if (w == nullptr) throw Error("PackedWeightsLowBit::quantize: w is null");
  if (n < 1) throw Error("PackedWeightsLowBit::quantize: n = " + str(n) + " (expected >= 1)");
  if (k < 1) throw Error("PackedWeightsLowBit::quantize: k = " + str(k) + " (expected >= 1)");
  if (row_stride < k) {
    throw Error("PackedWeightsLowBit::quantize: row_stride = " + str(row_stride) +
                " (expected >= k = " + str(k) + ")");
  }
  if (format.scale_type == ScaleType::super6 && k % weight_only::super_length != 0) {
    throw Error("PackedWeightsLowBit::quantize: k = " + str(k) +
                " (expected a multiple of 256 for super6 scales: whole super-blocks)");
  }
  std::vector<float> dense(static_cast<std::size_t>(n * k));
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t c = 0; c < k; ++c) {
      const float value = w[r * row_stride + c];
      if (!std::isfinite(value)) {
        throw Error("PackedWeightsLowBit::quantize: w[" + str(r) + ", " + str(c) +
                    "] = " + std::to_string(value) + " (expected a finite weight)");
      }
      dense[static_cast<std::size_t>(r * k + c)] = value;
    }
  }
  const QDtype qdtype = QDtype::full_range(format.bits, format.symmetric);
  const QScheme scheme =
      format.symmetric ? QScheme::PER_CHANNEL_SYMMETRIC : QScheme::PER_CHANNEL_AFFINE;
  const std::int64_t groups =
      format.group_size == 0 ? 1 : (k + format.group_size - 1) / format.group_size;
  const weight_only::ScaleRounding rounding = rounding_of(format.scale_type);
  Plain plain;
  plain.n = n;
  plain.k = k;
  plain.format = format;
  plain.qdtype = qdtype;
  plain.qscheme = scheme;
  if (format.scale_type == ScaleType::super6) {
    quantize_super(dense.data(), plain);
  } else if (format.grid == WeightOnlyGrid::min_max) {
    const TensorView view(dense.data(), ScalarType::float32, {n, k});
    const int axis = format.group_size == 0 ? 0 : 1;
    QParams qp = choose_qparams(view, scheme, qdtype, axis, format.group_size);
    for (float& s : qp.scale) {
      s = rounding(s);
      if (!std::isfinite(s)) throw_scale_overflow(format.scale_type);
    }
    plain.codes = lucid::quantization::quantize(view, qp).int_repr();
    copy_params(qp, n, groups, plain);
  } else {
    const std::int64_t length = format.group_size == 0 ? k : format.group_size;
    plain.codes.resize(dense.size());
    plain.scales.resize(static_cast<std::size_t>(n * groups));
    plain.zero_points.resize(plain.scales.size());
    const int pieces = kernels::threads_for(n * k * 8);
    kernels::parallel_pieces(n, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) {
        for (std::int64_t j = 0; j < groups; ++j) {
          const std::int64_t at = r * k + j * length;
          const weight_only::GroupParams g = weight_only::search_group(
              dense.data() + at, std::min(length, k - j * length), format.bits, format.symmetric,
              rounding, plain.codes.data() + at);
          plain.scales[static_cast<std::size_t>(r * groups + j)] = g.scale;
          plain.zero_points[static_cast<std::size_t>(r * groups + j)] = g.zero_point;
        }
      }
    });
    if (!std::all_of(plain.scales.begin(), plain.scales.end(),
                     [](float s) { return std::isfinite(s); }))
      throw_scale_overflow(format.scale_type);
  }
  PackedWeightsLowBit out;
  out.layout_ = build(plain);
  return out;
}

PackedWeightsLowBit PackedWeightsLowBit::from_quantized(const QuantizedTensor& weight) {
  const char* fn = "PackedWeightsLowBit::from_quantized: ";
  if (weight.shape().size() != 2 || weight.shape()[0] < 1 || weight.shape()[1] < 1) {
    throw Error(std::string(fn) + "shape = " + to_string(weight.shape()) +
                " (expected [N, K] with N, K >= 1)");
  }
  const QDtype qd = weight.qdtype();
  if (qd.bits() != 4 && qd.bits() != 8) {
    throw Error(std::string(fn) + "qdtype = " + qd.name() +
                " (expected qint4, quint4, qint8 or quint8)");
  }
  const QParams& qp = weight.qparams();
  const std::int64_t n = weight.shape()[0];
  const std::int64_t k = weight.shape()[1];
  WeightOnlyFormat format;
  format.bits = qd.bits();
  format.scale_type = ScaleType::f32;
  if (qp.is_per_group()) {
    const int axis = qp.ch_axis < 0 ? qp.ch_axis + 2 : qp.ch_axis;
    if (axis != 1 || !allowed_group(qp.group_size)) {
      throw Error(std::string(fn) + "per-group qparams with ch_axis = " +
                  std::to_string(qp.ch_axis) + ", group_size = " + str(qp.group_size) +
                  " (expected groups along axis 1 of 32, 64, 128 or 256)");
    }
    format.group_size = qp.group_size;
  } else if (is_per_channel(qp.qscheme)) {
    const int axis = qp.ch_axis < 0 ? qp.ch_axis + 2 : qp.ch_axis;
    if (axis != 0) {
      throw Error(std::string(fn) + "per-channel qparams with ch_axis = " +
                  std::to_string(qp.ch_axis) + " (expected 0: one pair per output channel)");
    }
    format.group_size = 0;
  } else {
    format.group_size = 0;  // per-tensor: the same pair for every channel
  }
  // A full-range signed grid with zero points 0 / −1 is to_quantized()'s form of negative
  // symmetric scales: packed symmetric again, each −1 group with scale −s and codes −q − 1.
  const bool zero_or_flip = qd.is_signed() && !qd.has_custom_range() &&
                            std::all_of(qp.zero_point.begin(), qp.zero_point.end(),
                                        [](std::int32_t z) { return z == 0 || z == -1; });
  format.symmetric = qd.is_signed() && std::all_of(qp.zero_point.begin(), qp.zero_point.end(),
                                                   [](std::int32_t z) { return z == 0; });
  format.symmetric = format.symmetric || zero_or_flip;
  Plain plain;
  plain.n = n;
  plain.k = k;
  plain.format = format;
  plain.qdtype = qd;
  plain.qscheme = is_per_channel(qp.qscheme) ? qp.qscheme
                  : is_symmetric(qp.qscheme) ? QScheme::PER_CHANNEL_SYMMETRIC
                                             : QScheme::PER_CHANNEL_AFFINE;
  plain.codes = weight.int_repr();
  const std::int64_t groups =
      format.group_size == 0 ? 1 : (k + format.group_size - 1) / format.group_size;
  copy_params(qp, n, groups, plain);
  if (zero_or_flip) flip_groups(plain, -1);
  PackedWeightsLowBit out;
  out.layout_ = build(plain);
  return out;
}

PackedWeightsLowBit PackedWeightsLowBit::from_ggml(GgmlType type, const void* data, std::int64_t n,
                                                   std::int64_t k) {
  const char* fn = "PackedWeightsLowBit::from_ggml: ";
  if (type != GgmlType::Q4_K) {
    throw Error(std::string(fn) + "type = " + std::string(ggml_type_traits(type).name) +
                " (expected q4_K)");
  }
  if (data == nullptr) throw Error(std::string(fn) + "data is null");
  if (n < 1) throw Error(std::string(fn) + "n = " + str(n) + " (expected >= 1)");
  if (k < 1 || k % weight_only::super_length != 0) {
    throw Error(std::string(fn) + "k = " + str(k) + " (expected a positive multiple of 256)");
  }
  Plain plain;
  plain.n = n;
  plain.k = k;
  plain.format = WeightOnlyFormat{4, 32, false, ScaleType::super6, WeightOnlyGrid::search};
  plain.qdtype = quint4;
  plain.qscheme = QScheme::PER_CHANNEL_AFFINE;
  const std::int64_t blocks = k / weight_only::super_length;
  const std::int64_t block_bytes = ggml_row_size(type, weight_only::super_length);
  plain.codes.resize(static_cast<std::size_t>(n * k));
  plain.supers.resize(static_cast<std::size_t>(n * blocks));
  std::uint8_t q[weight_only::super_length];
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      const auto* block = static_cast<const std::uint8_t*>(data) + (r * blocks + b) * block_bytes;
      const weight_only::SuperBlock sb = weight_only::unpack_q4_k(block, q);
      if (!std::isfinite(float16_to_float(sb.d)) || !std::isfinite(float16_to_float(sb.dmin))) {
        throw Error(std::string(fn) + "row " + str(r) + " block " + str(b) +
                    ": d or dmin is not finite (expected finite float16 super-block scales)");
      }
      plain.supers[static_cast<std::size_t>(r * blocks + b)] = sb;
      std::copy(q, q + weight_only::super_length,
                plain.codes.begin() + r * k + b * weight_only::super_length);
    }
  }
  PackedWeightsLowBit out;
  out.layout_ = build(plain);
  return out;
}

const PackedWeightsLowBit::Layout& PackedWeightsLowBit::layout() const {
  if (!layout_)
    throw Error("PackedWeightsLowBit: the object is empty (built by the default constructor)");
  return *layout_;
}

std::int64_t PackedWeightsLowBit::rows() const {
  return layout_ ? layout_->view.n : 0;
}
std::int64_t PackedWeightsLowBit::columns() const {
  return layout_ ? layout_->view.k : 0;
}
const WeightOnlyFormat& PackedWeightsLowBit::format() const {
  return layout().format;
}
std::int64_t PackedWeightsLowBit::groups_per_row() const {
  return layout_ ? layout_->view.groups : 0;
}
std::size_t PackedWeightsLowBit::packed_bytes() const {
  return layout_ ? static_cast<std::size_t>(layout_->view.panels * layout_->view.panel_bytes) : 0;
}

std::vector<std::int32_t> PackedWeightsLowBit::codes() const {
  const Layout& l = layout();
  const PackedView& v = l.view;
  std::vector<std::int32_t> out(static_cast<std::size_t>(v.n * v.k));
  for (std::int64_t row = 0; row < v.n; ++row) {
    for (std::int64_t j = 0; j < v.groups; ++j) {
      const std::uint8_t* rec = v.record(row / panel_width, j);
      const std::int64_t k0 = j * v.group_length;
      const std::int64_t len = std::min(v.group_length, v.k - k0);
      for (std::int64_t t = 0; t < len; ++t) {
        const std::int32_t lane = weight_only::lane_value(v, rec, row % panel_width, t);
        out[static_cast<std::size_t>(row * v.k + k0 + t)] =
            v.symmetric ? lane : lane + l.code_offset;
      }
    }
  }
  return out;
}

namespace {

// Per group (row-major [N, groups]) of a packed weight: f(view, panel, j, meta, channel).
template <class T, class F>
std::vector<T> per_group(const PackedView& v, F&& f) {
  std::vector<T> out(static_cast<std::size_t>(v.n * v.groups));
  for (std::int64_t row = 0; row < v.n; ++row) {
    for (std::int64_t j = 0; j < v.groups; ++j) {
      const std::uint8_t* rec = v.record(row / panel_width, j);
      out[static_cast<std::size_t>(row * v.groups + j)] =
          f(row / panel_width, j, rec + v.code_bytes(v.padded_length(j)), row % panel_width);
    }
  }
  return out;
}

}  // namespace

std::vector<float> PackedWeightsLowBit::scales() const {
  const PackedView& v = layout().view;
  return per_group<float>(
      v, [&](std::int64_t panel, std::int64_t j, const std::uint8_t* meta, std::int64_t c) {
        return v.superblock() ? weight_only::group_affine(v, panel, j, meta, c).scale
                              : weight_only::meta_scale(v, meta, c);
      });
}

std::vector<float> PackedWeightsLowBit::offsets() const {
  const Layout& l = layout();
  const PackedView& v = l.view;
  return per_group<float>(
      v, [&](std::int64_t panel, std::int64_t j, const std::uint8_t* meta, std::int64_t c) {
        if (v.superblock()) return weight_only::group_affine(v, panel, j, meta, c).offset;
        const std::int32_t z =
            v.symmetric ? 0 : weight_only::meta_zero_point(v, meta, c) + l.code_offset;
        return weight_only::meta_scale(v, meta, c) * static_cast<float>(z);
      });
}

std::vector<std::int32_t> PackedWeightsLowBit::zero_points() const {
  const Layout& l = layout();
  const PackedView& v = l.view;
  if (v.superblock()) {
    throw Error(
        "PackedWeightsLowBit::zero_points: super6 scales have a free minimum, no integer zero "
        "point (expected offsets(): ŵ = s · q − o)");
  }
  std::vector<std::int32_t> out(static_cast<std::size_t>(v.n * v.groups), 0);
  if (v.symmetric) return out;
  for (std::int64_t row = 0; row < v.n; ++row) {
    for (std::int64_t j = 0; j < v.groups; ++j) {
      const std::uint8_t* rec = v.record(row / panel_width, j);
      out[static_cast<std::size_t>(row * v.groups + j)] =
          weight_only::meta_zero_point(v, rec + v.code_bytes(v.padded_length(j)),
                                       row % panel_width) +
          l.code_offset;
    }
  }
  return out;
}

std::vector<float> PackedWeightsLowBit::decode() const {
  const PackedView& v = layout().view;
  const std::vector<std::int32_t> q = codes();
  const std::vector<float> s = scales();
  std::vector<float> out(q.size());
  if (v.superblock()) {
    const std::vector<float> o = offsets();
    for (std::size_t i = 0; i < q.size(); ++i) {
      const std::size_t g = i / static_cast<std::size_t>(v.group_length);  // k % 32 == 0
      out[i] = s[g] * static_cast<float>(q[i]) - o[g];
    }
    return out;
  }
  const std::vector<std::int32_t> z = zero_points();
  for (std::int64_t row = 0; row < v.n; ++row) {
    for (std::int64_t c = 0; c < v.k; ++c) {
      const auto g = static_cast<std::size_t>(row * v.groups + c / v.group_length);
      const auto i = static_cast<std::size_t>(row * v.k + c);
      out[i] = s[g] * static_cast<float>(q[i] - z[g]);
    }
  }
  return out;
}

QuantizedTensor PackedWeightsLowBit::to_quantized() const {
  const Layout& l = layout();
  const PackedView& v = l.view;
  if (v.superblock()) {
    throw Error(
        "PackedWeightsLowBit::to_quantized: " + l.format.describe() +
        " has a free minimum per group (ŵ = s · q − o), which a QuantizedTensor's integer zero "
        "points cannot express (expected codes(), scales(), offsets() or decode() instead)");
  }
  Plain p;
  p.n = v.n;
  p.k = v.k;
  p.format = l.format;
  p.codes = codes();
  p.scales = scales();
  p.zero_points = zero_points();
  QScheme scheme = l.qscheme;
  if (std::any_of(p.scales.begin(), p.scales.end(), [](float s) { return s < 0; })) {
    flip_groups(p, 0);  // QParams scales are positive: the affine form of the same ŵ
    scheme = QScheme::PER_CHANNEL_AFFINE;
  }
  QParams qp;
  if (l.format.group_size == 0) {
    qp = QParams::per_channel(std::move(p.scales), std::move(p.zero_points), 0, l.qdtype, scheme);
  } else {
    qp = QParams::per_group(std::move(p.scales), std::move(p.zero_points), 1, l.format.group_size,
                            l.qdtype, scheme);
  }
  return QuantizedTensor({v.n, v.k}, std::move(qp), pack_codes(p.codes, l.qdtype));
}

}  // namespace lucid::quantization
