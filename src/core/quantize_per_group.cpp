// quantize_per_group: per-group ranges, qparams and codes fused in one pass over the input.
#include <algorithm>
#include <cmath>
#include <memory>

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
  // Elements up to `end`, from the next one on, were packed into the output by the caller (the
  // next one byte aligned): packs what the scratch holds and moves past them.
  void skip_to(std::int64_t end) {
    flush();
    chunk_ = filled_ = end;
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
  kernels::RangeRule rule;  // qscheme, qdtype and eps as the kernels take them
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

  // Groups along the last axis (inner == 1) go in runs of whole groups: one range call and one
  // codes call per run instead of two calls per group (groups of 32 spent more time in the calls
  // than in the arithmetic).
  static constexpr std::int64_t run_groups = ParamLayout::max_run_groups;
  struct Run {
    std::int64_t begin = 0;  // the first group's first element
    float mins[run_groups] = {}, maxs[run_groups], inverse[run_groups];  // mins 0: symmetric
    const float* scales = nullptr;  // the run's slots in *result
    const std::int32_t* zero_points = nullptr;
    kernels::GroupValues values = kernels::GroupValues::any;
  };

  // Whether runs of whole groups can take the per-group codes kernels: codes of at most 8 bits.
  bool codes_in_runs() const { return std::int64_t{grid.quant_max} - grid.quant_min <= 255; }

  // Whole groups from unit u on (at most ParamLayout::groups_per_run, before `last`); inner == 1
  // only.
  std::int64_t whole_groups(std::int64_t u, std::int64_t last) const {
    if (layout.inner != 1) return 0;
    // Every group of a row is whole but (when group_size does not divide dim) its last.
    const std::int64_t in_row = u % layout.groups;
    const bool last_is_whole = layout.dim % layout.group_size == 0;
    const std::int64_t whole_in_row = layout.groups - in_row - (last_is_whole ? 0 : 1);
    const std::int64_t cap = layout.groups_per_run(static_cast<std::int64_t>(x_element_size));
    const std::int64_t limit = last_is_whole ? cap : std::min(cap, whole_in_row);
    return std::max<std::int64_t>(0, std::min(limit, last - u));
  }

  // Ranges, qparams (into *result) and reciprocals of `count` whole groups from unit u. A
  // symmetric scheme needs only the abs-max (its scale is max(-min', max') / half the grid): the
  // run's maxs take it and its mins stay 0 (Run), which gives the same scales. A run whose
  // elements are all finite lies in its groups' own ranges (GroupValues::own_range) when every
  // reciprocal is finite too: scales are at least eps, so 1 / eps finite suffices.
  void choose_run(std::int64_t u, std::int64_t count, Run& run) const {
    run.begin = unit_at(layout, u).begin;
    const bool finite =
        rule.symmetric
            ? k.abs_max_groups[t](at(run.begin), count, layout.group_size, run.maxs)
            : k.minmax_groups[t](at(run.begin), count, layout.group_size, run.mins, run.maxs);
    run.values = finite && std::isfinite(1.0f / rule.eps) ? kernels::GroupValues::own_range
                                                          : kernels::GroupValues::any;
    float* scales = result->scale.data() + u;
    std::int32_t* zero_points = result->zero_point.data() + u;
    k.group_qparams(run.mins, run.maxs, count, rule, run.inverse, scales, zero_points);
    run.scales = scales;
    run.zero_points = zero_points;
  }

  // The 8-bit codes of elements [begin, end) of a chosen run into dst: whole groups in one call,
  // a group cut by the range's ends on its own.
  void quantize_run(const Run& run, std::int64_t begin, std::int64_t end, std::int8_t* dst) const {
    const std::int64_t size = layout.group_size;
    while (begin < end) {
      const std::int64_t g = (begin - run.begin) / size;
      const std::int64_t group_begin = run.begin + g * size;
      const std::int64_t whole = begin == group_begin ? (end - begin) / size : 0;
      const std::int64_t stop =
          whole > 0 ? begin + whole * size : std::min(end, group_begin + size);
      if (whole > 0) {
        k.quantize_groups[t](at(begin), whole, size, run.inverse + g, run.scales + g,
                             run.zero_points + g, grid, run.values, dst);
      } else {
        const kernels::Affine p{run.inverse[g], run.scales[g], run.zero_points[g]};
        k.quantize[t][static_cast<int>(kernels::CodeWidth::b8)](at(begin), stop - begin, p, grid,
                                                                dst);
      }
      dst += stop - begin;
      begin = stop;
    }
  }
};

}  // namespace

namespace {

// The work of one thread: units [first, last), with scratch for one unit's ranges and
// reciprocals (`inner` slots each) and for one run.
struct Piece {
  std::int64_t first, last;
  std::span<float> mins, maxs, inverse;
  FusedJob::Run& run;
};

// Throws Error naming `what` unless the scheme is per-channel, group_size >= 1, x is float32 /
// float16 / bfloat16 and eps is valid.
void check_per_group_arguments(const TensorView& x, QScheme qscheme, QDtype qdtype,
                               std::int64_t group_size, float eps, const char* what) {
  if (!is_per_channel(qscheme)) {
    throw Error(std::string(what) + ": qscheme = " + to_string(qscheme) +
                " (expected per_channel_affine or per_channel_symmetric)");
  }
  if (group_size < 1) {
    throw Error(std::string(what) + ": group_size = " + std::to_string(group_size) +
                " (expected >= 1)");
  }
  detail::check_kernel_input(x, what);
  calculate_qparams(0.0f, 0.0f, QScheme::PER_TENSOR_AFFINE, qdtype, eps);  // validates eps
}

// Makes the per-group QParams of valid arguments (check_per_group_arguments) with their arrays
// unset, and calls work(job, piece) for each thread's piece of the units, which must write every
// entry of the arrays. Throws Error for a bad axis.
template <class Work>
QParams per_group_pieces(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                         std::int64_t group_size, float eps, Work&& work) {
  using namespace detail;
  const ParamLayout layout = ParamLayout::make(x.shape, qscheme, ch_axis, group_size);
  QParams qparams;
  qparams.qscheme = qscheme;
  qparams.qdtype = qdtype;
  qparams.ch_axis = ch_axis;
  qparams.group_size = group_size;
  // Large parameter arrays are huge-page mappings, reused across calls, and left unset until the
  // pieces write every entry (ParamArray).
  qparams.scale.resize(static_cast<std::size_t>(layout.slots()));
  qparams.zero_point.resize(static_cast<std::size_t>(layout.slots()));
  const FusedJob job{kernels::active(),
                     static_cast<const unsigned char*>(x.data),
                     element_size(x.type),
                     float_index(x.type),
                     layout,
                     qscheme,
                     qdtype,
                     grid_of(qdtype),
                     eps,
                     detail::range_rule(qscheme, qdtype, eps),
                     &qparams};
  const std::int64_t units = layout.outer * layout.groups;
  const int pieces = static_cast<int>(std::clamp<std::int64_t>(kernels::threads_for(x.numel()), 1,
                                                               std::max<std::int64_t>(units, 1)));
  const std::vector<std::int64_t> bounds = unit_boundaries(layout, units, pieces, piece_alignment);
  const auto inner = static_cast<std::size_t>(layout.inner);
  std::vector<float> scratch(static_cast<std::size_t>(pieces) * inner * 3);  // mins, maxs, 1/s
  kernels::parallel_pieces(units, pieces, 1, [&](int p, std::int64_t, std::int64_t) {
    const std::int64_t first = bounds[static_cast<std::size_t>(p)];
    const std::int64_t last = bounds[static_cast<std::size_t>(p) + 1];
    if (first >= last) return;
    float* base = scratch.data() + static_cast<std::size_t>(p) * inner * 3;
    auto run = std::make_unique<FusedJob::Run>();
    work(job,
         Piece{first, last, std::span<float>(base, inner), std::span<float>(base + inner, inner),
               std::span<float>(base + 2 * inner, inner), *run});
  });
  return qparams;
}

}  // namespace

QuantizedTensor quantize_per_group(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                                   std::int64_t group_size, float eps) {
  using namespace detail;
  check_per_group_arguments(x, qscheme, qdtype, group_size, eps, "quantize_per_group");
  // Every byte is written below (packed storage byte-aligned per piece, the last byte's unused
  // bits zeroed by the pack kernel): a reused mapping, no fresh page faults (tensor.hpp).
  ByteBuffer storage =
      ByteBuffer::uninitialized(static_cast<std::size_t>(qdtype.storage_bytes(x.numel())));
  const Storage kind = qdtype.storage();
  const int bits = packed_bits(kind);
  const int width = bits ? static_cast<int>(kernels::CodeWidth::b8) : code_width_index(kind);
  const int bytes = code_bytes(kind);
  QParams qparams = per_group_pieces(
      x, qscheme, qdtype, ch_axis, group_size, eps, [&](const FusedJob& job, const Piece& piece) {
        const ParamLayout& layout = job.layout;
        FusedJob::Run& run = piece.run;
        const bool runs = job.codes_in_runs();
        if (bits == 0) {
          for (std::int64_t u = piece.first; u < piece.last; ++u) {
            if (const std::int64_t n = runs && bytes == 1 ? job.whole_groups(u, piece.last) : 0;
                n > 0) {
              job.choose_run(u, n, run);
              const std::int64_t end = run.begin + n * layout.group_size;
              job.quantize_run(run, run.begin, end,
                               reinterpret_cast<std::int8_t*>(storage.data()) + run.begin);
              u += n - 1;
              continue;
            }
            job.choose(u, piece.mins, piece.maxs, piece.inverse);
            const Unit unit = unit_at(layout, u);
            const std::int64_t end = unit.begin + unit.rows * layout.inner;
            job.quantize(u, unit.begin, end, piece.inverse, width,
                         storage.data() + unit.begin * bytes, bytes);
          }
          return;
        }
        PackedSink sink(bits == 4 ? job.k.pack4 : job.k.pack2, bits, storage.data(),
                        unit_at(layout, piece.first).begin);
        for (std::int64_t u = piece.first; u < piece.last; ++u) {
          if (const std::int64_t n = runs ? job.whole_groups(u, piece.last) : 0; n > 0) {
            job.choose_run(u, n, run);
            const std::int64_t end = run.begin + n * layout.group_size;
            if (bits == 4 && run.begin % 2 == 0 && layout.group_size % 2 == 0) {
              // Codes packed as they are made, straight into the storage (byte aligned).
              job.k.quantize_groups_int4[job.t](job.at(run.begin), n, layout.group_size,
                                                run.inverse, run.scales, run.zero_points, job.grid,
                                                run.values, storage.data() + run.begin / 2);
              sink.skip_to(end);
              u += n - 1;
              continue;
            }
            sink.emit(run.begin, end, [&](std::int64_t b, std::int64_t e, std::int8_t* dst) {
              job.quantize_run(run, b, e, dst);
            });
            u += n - 1;
            continue;
          }
          job.choose(u, piece.mins, piece.maxs, piece.inverse);
          const Unit unit = unit_at(layout, u);
          sink.emit(unit.begin, unit.begin + unit.rows * layout.inner,
                    [&](std::int64_t b, std::int64_t e, std::int8_t* dst) {
                      job.quantize(u, b, e, piece.inverse, width, dst, 1);
                    });
        }
        sink.flush();
      });
  return QuantizedTensor(x.shape, std::move(qparams), std::move(storage), detail::ValidParams{});
}

namespace detail {

QParams choose_group_qparams(const TensorView& x, QScheme qscheme, QDtype qdtype, int ch_axis,
                             std::int64_t group_size, float eps) {
  check_per_group_arguments(x, qscheme, qdtype, group_size, eps, "choose_qparams");
  return per_group_pieces(x, qscheme, qdtype, ch_axis, group_size, eps,
                          [](const FusedJob& job, const Piece& piece) {
                            for (std::int64_t u = piece.first; u < piece.last; ++u) {
                              if (const std::int64_t n = job.whole_groups(u, piece.last); n > 0) {
                                job.choose_run(u, n, piece.run);
                                u += n - 1;
                              } else {
                                job.choose(u, piece.mins, piece.maxs, piece.inverse);
                              }
                            }
                          });
}

}  // namespace detail

}  // namespace lucid::quantization
