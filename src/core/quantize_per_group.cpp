// quantize_per_group: per-group ranges, qparams and codes fused in one pass over the input.
#include <algorithm>
#include <cmath>

#include "core/kernel_args.hpp"
#include "core/qparams_formula.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"
#include "support/param_layout.hpp"

namespace lucid::quantization {
namespace {

using detail::ParamLayout;

// Collects the int8 codes of consecutive elements and packs them into 4- or
// 2-bit storage a scratch-full at a time; `start` must be byte aligned.
class PackedSink {
 public:
  PackedSink(kernels::PackFn pack, int bits, std::uint8_t* out, std::int64_t start)
      : pack_(pack), per_byte_(8 / bits), out_(out), chunk_(start) {}

  // Lets write(b, e, dst) fill elements [begin, end), in pieces that fit the scratch.
  template <class Write>
  void emit(std::int64_t begin, std::int64_t end, Write&& write) {
    while (begin < end) {
      const std::int64_t stop = std::min(end, chunk_ + detail::scratch_codes);
      write(begin, stop, scratch_ + (begin - chunk_));
      filled_ = stop;
      begin = stop;
      if (filled_ == chunk_ + detail::scratch_codes) flush();
    }
  }
  void flush() {
    if (filled_ > chunk_) pack_(scratch_, filled_ - chunk_, out_ + chunk_ / per_byte_);
    chunk_ = filled_;
  }

 private:
  kernels::PackFn pack_;
  int per_byte_;
  std::uint8_t* out_;
  std::int64_t chunk_;       // flat index of scratch_[0]
  std::int64_t filled_ = 0;  // elements before this are in scratch_ or packed
  std::int8_t scratch_[detail::scratch_codes];
};

// One group block: slots [unit * inner, (unit + 1) * inner) and its elements.
struct Unit {
  std::int64_t begin;  // flat
  std::int64_t rows;   // rows of `inner` elements (the group's length along the axis)
};

Unit unit_at(const ParamLayout& layout, std::int64_t unit) {
  const std::int64_t o = unit / layout.groups;
  const std::int64_t first_row = (unit % layout.groups) * layout.group_size;
  const std::int64_t rows = std::min(layout.group_size, layout.dim - first_row);
  return {(o * layout.dim + first_row) * layout.inner, rows};
}

// Splits the units into `pieces` ranges whose flat starts are multiples of `align`.
std::vector<std::int64_t> unit_boundaries(const ParamLayout& layout, std::int64_t units, int pieces,
                                          std::int64_t align) {
  std::vector<std::int64_t> bounds{0};
  for (int p = 1; p < pieces; ++p) {
    std::int64_t u = std::max(bounds.back(), units / pieces * p + units % pieces * p / pieces);
    while (u < units && unit_at(layout, u).begin % align != 0)
      ++u;
    bounds.push_back(u);
  }
  bounds.push_back(units);
  return bounds;
}

struct FusedJob {
  const kernels::KernelTable& k;
  const unsigned char* x;
  std::size_t x_element_size;
  int t;  // float index
  ParamLayout layout;
  QScheme qscheme;
  QDtype qdtype;
  kernels::Grid grid;
  float eps;
  QParams* result;

  const void* at(std::int64_t flat) const {
    return x + static_cast<std::size_t>(flat) * x_element_size;
  }

  // Ranges, qparams (written into *result) and the reciprocals of one unit's slots.
  void choose(std::int64_t unit, std::span<float> mins, std::span<float> maxs,
              std::span<float> inverse) const {
    const Unit u = unit_at(layout, unit);
    std::fill(mins.begin(), mins.end(), INFINITY);
    std::fill(maxs.begin(), maxs.end(), -INFINITY);
    if (layout.inner == 1) {
      k.minmax[t](at(u.begin), u.rows, mins.data(), maxs.data());
    } else {
      for (std::int64_t r = 0; r < u.rows; ++r)
        k.minmax_vec[t](at(u.begin + r * layout.inner), layout.inner, mins.data(), maxs.data());
    }
    for (std::size_t i = 0; i < mins.size(); ++i) {
      if (mins[i] > maxs[i]) mins[i] = maxs[i] = 0.0f;  // saw nothing finite
      const auto slot = static_cast<std::size_t>(unit * layout.inner) + i;
      const auto [scale, zero_point] =
          detail::qparams_for_range(mins[i], maxs[i], qscheme, qdtype, eps);
      result->scale[slot] = scale;
      result->zero_point[slot] = zero_point;
      inverse[i] = 1.0f / scale;
    }
  }

  // The codes of one unit's elements [begin, end) (a sub-range) into dst, width `w`.
  void quantize(std::int64_t unit, std::int64_t begin, std::int64_t end,
                std::span<const float> inverse, int w, void* dst, int code_bytes) const {
    const auto slot = static_cast<std::size_t>(unit * layout.inner);
    auto* out = static_cast<unsigned char*>(dst);
    if (layout.inner == 1) {
      const kernels::Affine p{inverse[0], result->scale[slot], result->zero_point[slot]};
      k.quantize[t][w](at(begin), end - begin, p, grid, out);
      return;
    }
    const std::int32_t* zero_points = result->zero_point.data() + slot;
    for (std::int64_t p = begin; p < end;) {  // row by row, per-element parameters
      const std::int64_t i = p % layout.inner;
      const std::int64_t stop = std::min(end, p - i + layout.inner);
      k.quantize_vec[t][w](at(p), stop - p, inverse.data() + i, zero_points + i, grid,
                           out + (p - begin) * code_bytes);
      p = stop;
    }
  }
};

}  // namespace

QuantizedTensor quantize_per_group(const TensorView& x, QDtype qdtype, QScheme qscheme, int ch_axis,
                                   std::int64_t group_size, float eps) {
  using namespace detail;
  const char* what = "quantize_per_group";
  if (!is_per_channel(qscheme)) {
    throw Error(std::string(what) + ": qscheme = " + to_string(qscheme) +
                " (expected per_channel_affine or per_channel_symmetric)");
  }
  if (group_size < 1) {
    throw Error(std::string(what) + ": group_size = " + std::to_string(group_size) +
                " (expected >= 1)");
  }
  check_kernel_input(x, what);
  calculate_qparams(0.0f, 0.0f, QScheme::PER_TENSOR_AFFINE, qdtype, eps);  // validates eps
  const ParamLayout layout = ParamLayout::make(x.shape, qscheme, ch_axis, group_size);
  QParams qparams;
  qparams.qscheme = qscheme;
  qparams.qdtype = qdtype;
  qparams.ch_axis = ch_axis;
  qparams.group_size = group_size;
  qparams.scale.assign(static_cast<std::size_t>(layout.slots()), 1.0f);
  qparams.zero_point.assign(static_cast<std::size_t>(layout.slots()), 0);
  ByteBuffer storage =
      ByteBuffer::zeroed(static_cast<std::size_t>(qdtype.storage_bytes(x.numel())));

  const FusedJob job{kernels::active(),
                     static_cast<const unsigned char*>(x.data),
                     element_size(x.type),
                     float_index(x.type),
                     layout,
                     qscheme,
                     qdtype,
                     grid_of(qdtype),
                     eps,
                     &qparams};
  const std::int64_t units = layout.outer * layout.groups;
  const int pieces = static_cast<int>(std::clamp<std::int64_t>(kernels::threads_for(x.numel()), 1,
                                                               std::max<std::int64_t>(units, 1)));
  const std::vector<std::int64_t> bounds = unit_boundaries(layout, units, pieces, piece_alignment);
  const auto inner = static_cast<std::size_t>(layout.inner);
  std::vector<float> scratch(static_cast<std::size_t>(pieces) * inner * 3);  // mins, maxs, 1/s
  const Storage kind = qdtype.storage();
  const int bits = packed_bits(kind);
  const int width = bits ? static_cast<int>(kernels::CodeWidth::b8) : code_width_index(kind);
  const int bytes = code_bytes(kind);
  kernels::parallel_pieces(units, pieces, 1, [&](int p, std::int64_t, std::int64_t) {
    const std::int64_t first = bounds[static_cast<std::size_t>(p)];
    const std::int64_t last = bounds[static_cast<std::size_t>(p) + 1];
    if (first >= last) return;
    float* base = scratch.data() + static_cast<std::size_t>(p) * inner * 3;
    const std::span<float> mins(base, inner), maxs(base + inner, inner),
        inverse(base + 2 * inner, inner);
    if (bits == 0) {
      for (std::int64_t u = first; u < last; ++u) {
        job.choose(u, mins, maxs, inverse);
        const Unit unit = unit_at(layout, u);
        const std::int64_t end = unit.begin + unit.rows * layout.inner;
        job.quantize(u, unit.begin, end, inverse, width, storage.data() + unit.begin * bytes,
                     bytes);
      }
      return;
    }
    PackedSink sink(bits == 4 ? job.k.pack4 : job.k.pack2, bits, storage.data(),
                    unit_at(layout, first).begin);
    for (std::int64_t u = first; u < last; ++u) {
      job.choose(u, mins, maxs, inverse);
      const Unit unit = unit_at(layout, u);
      sink.emit(unit.begin, unit.begin + unit.rows * layout.inner,
                [&](std::int64_t b, std::int64_t e, std::int8_t* dst) {
                  job.quantize(u, b, e, inverse, width, dst, 1);
                });
    }
    sink.flush();
  });
  return QuantizedTensor(x.shape, std::move(qparams), std::move(storage));
}

}  // namespace lucid::quantization
