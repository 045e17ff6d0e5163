// Weight-only GEMM driver: validation, activation staging (padding, bf16 widening, group sums),
// threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/row_quantization.hpp"
#include "core/widen.hpp"
#include "kernels/affine_spec.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/parallel.hpp"
#include "kernels/weight_only.hpp"
#include "lucid/quantization/error.hpp"
#include "weight_only/layout.hpp"

namespace lucid::quantization {
namespace weight_only {

/// Rows up to which the VNNI int8-activation path decodes int8 codes in registers
/// (weight_only_u8_regs_64c__avx512_vnni) rather than into tiles shared by all rows; int4 codes
/// always take the in-register kernel. The crossover measured between 64 and 128 rows
/// (docs/performance.md, "Weight-only GEMM").
constexpr std::int64_t int8_gemv_max_rows = 64;

/// The int8-activation kernel of the entry point's variant for M rows and the weight's code
/// width: the few-rows kernel for int4 codes and for int8 codes up to int8_gemv_max_rows rows,
/// else the many-rows one (the two are the same kernel outside avx512_vnni).
Int8Kernel int8_kernel(const kernels::KernelTable& kt, std::int64_t m, int bits) {
  return (bits == 4 || m <= int8_gemv_max_rows) ? kt.weight_only_u8_few_rows
                                                : kt.weight_only_u8_many_rows;
}

/// Whether the int8-activation path has a fast kernel for this code width in the variant.
bool int8_kernel_is_fast(const kernels::KernelTable& kt, int bits) {
  return int8_kernel(kt, 1, bits).run != &weight_only_u8_16c__reference;
}

}  // namespace weight_only

namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

// Weights streamed per thread below which extra threads cost more than they save.
constexpr std::int64_t min_weights_per_thread = std::int64_t{1} << 18;
// Activation rows per pass over the weights: the AVX-512 kernel's register block.
constexpr std::int64_t rows_per_chunk = 8;

}  // namespace

namespace {

// Groups longer than this could overflow the int32 group sums of the int8 path.
constexpr std::int64_t int8_max_group = 65536;

// Σ codes[0, len): ≤ 255 · 65536, exact in int32 (a form compilers vectorise).
std::int32_t code_sum(const std::uint8_t* codes, std::int64_t len) {
  std::int32_t sum = 0;
  for (std::int64_t t = 0; t < len; ++t)
    sum += codes[t];
  return sum;
}

// Puts each block of 8 codes into the int4 kernels' order in place (weight_only::
// int8_staged_index): the even positions' codes first, then the odd ones'. `length` is a
// multiple of 8.
void interleave_int4_blocks(std::uint8_t* codes, std::int64_t length) {
  for (std::int64_t k0 = 0; k0 < length; k0 += 8) {
    std::uint8_t* block = codes + k0;
    const std::uint8_t staged[8] = {block[0], block[2], block[4], block[6],
                                    block[1], block[3], block[5], block[7]};
    std::memcpy(block, staged, 8);
  }
}

// This thread's 64-byte aligned scratch of at least `bytes`, kept between calls (a fresh large
// allocation per call costs page faults on every call).
std::uint8_t* thread_scratch(std::size_t bytes) {
  struct Aligned {
    void operator()(std::uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  thread_local std::unique_ptr<std::uint8_t[], Aligned> scratch;
  thread_local std::size_t capacity = 0;
  if (capacity < bytes) {
    scratch.reset(static_cast<std::uint8_t*>(::operator new[](bytes, std::align_val_t{64})));
    capacity = bytes;
  }
  return scratch.get();
}

// Rows of x quantized per row to uint8, or per block to int8, and staged for the int8 kernels
// (kernels/weight_only.hpp, Int8Args).
struct StagedRows {
  std::vector<float> scales, zeros, group_sums, block_scales;
  std::vector<std::int32_t> zero_points, code_sums;
  std::vector<std::uint8_t> xq;
  std::int64_t stride = 0;
};

// Quantizes m float rows (K of them, row r at xs + r · stride) as quantize() does, in parallel
// over rows. Returns false, staging nothing, when a row is not finite and `fallback` is set;
// throws naming the first non-finite element otherwise.
bool stage_rows(const kernels::KernelTable& kt, const float* xs, std::int64_t stride,
                std::int64_t m, const weight_only::PackedView& v, bool fallback, StagedRows& out) {
  // Codes exactly as quantize() writes them (zero padding beyond K), then each int4 block of 8
  // interleaved in place into the kernels' order.
  out.stride = (v.k_padded + 63) / 64 * 64;
  out.xq.assign(static_cast<std::size_t>(m * out.stride), 0);
  const detail::RowQuantization rows{.x = xs,
                                     .rows = m,
                                     .k = v.k,
                                     .x_stride = stride,
                                     .scheme = QScheme::PER_TENSOR_AFFINE,
                                     .qdtype = quint8,
                                     .codes = out.xq.data(),
                                     .code_stride = out.stride};
  if (!detail::quantize_rows(kt, rows,
                             {"weight_only_gemm: x", "int8_dynamic activations must be finite"},
                             fallback, out.scales, out.zero_points))
    return false;
  out.zeros.assign(out.zero_points.begin(), out.zero_points.end());
  out.group_sums.assign(v.symmetric ? 0 : static_cast<std::size_t>(m * v.groups), 0.0f);
  out.code_sums.assign(static_cast<std::size_t>(m * v.groups), 0);
  const int pieces = kernels::threads_for(m * v.k);
  kernels::parallel_pieces(m, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      std::uint8_t* dst = out.xq.data() + r * out.stride;
      for (std::int64_t j = 0; j < v.groups; ++j) {
        const std::int64_t k0 = j * v.group_length;
        const std::int64_t len = std::min(v.group_length, v.k - k0);
        const auto at = static_cast<std::size_t>(r * v.groups + j);
        out.code_sums[at] = code_sum(dst + k0, len);
        if (!v.symmetric) {
          out.group_sums[at] = static_cast<float>(out.code_sums[at] - len * out.zero_points[ri]);
        }
      }
      if (v.bits == 4) interleave_int4_blocks(dst, v.k_padded);
    }
  });
  return true;
}

// Quantizes m float rows (K of them, row r at xs + r · stride) in blocks, one per weight group
// (docs/numerics.md, "Block-wise activation scales"): s_x = max|x| / 127 over the block,
// xq = clamp(nearbyint(x · (1 / s_x)), −127, 127) (0 for an all-zero block), Σ xq per block,
// int4 blocks of 8 interleaved as stage_rows does. Parallel over rows; returns false, staging
// nothing, when a row is not finite and `fallback` is set; throws naming it otherwise.
bool stage_blocks(const float* xs, std::int64_t stride, std::int64_t m,
                  const weight_only::PackedView& v, bool fallback, StagedRows& out) {
  out.stride = (v.k_padded + 63) / 64 * 64;
  out.xq.assign(static_cast<std::size_t>(m * out.stride), 0);
  out.block_scales.assign(static_cast<std::size_t>(m * v.groups), 0.0f);
  out.code_sums.assign(out.block_scales.size(), 0);
  std::vector<char> finite(static_cast<std::size_t>(m), 1);
  const int pieces = kernels::threads_for(m * v.k);
  kernels::parallel_pieces(m, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      std::uint8_t* dst = out.xq.data() + r * out.stride;
      for (std::int64_t j = 0; j < v.groups; ++j) {
        const std::int64_t k0 = j * v.group_length;
        const std::int64_t len = std::min(v.group_length, v.k - k0);
        const float* x = xs + r * stride + k0;
        // max |x| on the bit patterns with the sign cleared: for finite floats their integer
        // order; at or above the infinity pattern the block holds an inf or a NaN. (An integer
        // loop the compiler vectorises.)
        std::int32_t top = 0;
        for (std::int64_t t = 0; t < len; ++t) {
          std::int32_t bits;
          std::memcpy(&bits, x + t, 4);
          bits &= 0x7fffffff;
          top = bits > top ? bits : top;
        }
        if (top >= 0x7f800000) {
          finite[static_cast<std::size_t>(r)] = 0;
          break;
        }
        float amax;
        std::memcpy(&amax, &top, 4);
        const float scale = amax / 127.0f;
        const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
        std::int32_t sum = 0;
        for (std::int64_t t = 0; t < len; ++t) {
          // nearbyint of the float product, clamped first to the integer limits (the same
          // codes), in two float additions: a loop the compiler vectorises.
          const auto q = static_cast<std::int32_t>(
              kernels::round_half_even(std::clamp(x[t] * inverse, -127.0f, 127.0f)));
          dst[k0 + t] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
          sum += q;
        }
        const auto at = static_cast<std::size_t>(r * v.groups + j);
        out.block_scales[at] = scale;
        out.code_sums[at] = sum;
      }
      if (v.bits == 4) interleave_int4_blocks(dst, v.k_padded);
    }
  });
  for (std::int64_t r = 0; r < m; ++r) {
    if (finite[static_cast<std::size_t>(r)] != 0) continue;
    if (fallback) return false;
    detail::throw_first_nonfinite(
        xs + r * stride, v.k, r, {"weight_only_gemm: x", "int8_blocks activations must be finite"});
  }
  return true;
}

// The int8-activation path on float rows (K of them, row r at xs + r · stride): per-row uint8
// (int8_dynamic) or per-block int8 (int8_blocks) activations. Returns false, writing nothing,
// when a row is not finite and `fallback` is set; throws otherwise.
bool run_int8(const kernels::KernelTable& kt, WeightOnlyActivations path, const float* xs,
              std::int64_t stride, std::int64_t m, const weight_only::PackedView& v,
              const float* bias, float* y, std::int64_t y_row_stride, bool fallback) {
  StagedRows staged;
  const bool blocks = path == WeightOnlyActivations::int8_blocks;
  if (blocks ? !stage_blocks(xs, stride, m, v, fallback, staged)
             : !stage_rows(kt, xs, stride, m, v, fallback, staged))
    return false;
  weight_only::Int8Args args;
  args.w = v;
  args.xq = staged.xq.data();
  args.xq_stride = staged.stride;
  args.x_scale = staged.scales.data();
  args.x_zero = staged.zeros.data();
  args.x_group_sums = staged.group_sums.empty() ? nullptr : staged.group_sums.data();
  args.x_block_scales = blocks ? staged.block_scales.data() : nullptr;
  args.xq_group_sums = staged.code_sums.data();
  args.m = m;
  args.bias = bias;
  args.y = y;
  args.y_stride = y_row_stride;
  // Block-wise activations: the in-register kernel at every M (the tile kernel has no such form).
  const weight_only::Int8Kernel choice =
      weight_only::int8_kernel(kt, blocks ? 1 : m, blocks ? 4 : v.bits);
  const std::int64_t work = v.n * v.k * std::max<std::int64_t>(1, m / 8);
  const int pieces = static_cast<int>(
      std::min<std::int64_t>(kernels::threads_for(work, min_weights_per_thread), v.panels));
  // Threads split the panels on multiples of the kernel's block width; each thread's kernel
  // walks all M rows over its panels.
  const auto scratch_bytes = static_cast<std::size_t>(choice.scratch_bytes(v));
  kernels::parallel_pieces(
      v.panels, pieces, choice.panel_multiple, [&](int, std::int64_t begin, std::int64_t end) {
        weight_only::Int8Args part = args;
        part.scratch = scratch_bytes == 0 ? nullptr : thread_scratch(scratch_bytes);
        choice.run(part, begin, end);
      });
  return true;
}

}  // namespace

std::string to_string(WeightOnlyActivations activations) {
  switch (activations) {
    case WeightOnlyActivations::float32:
      return "float32";
    case WeightOnlyActivations::int8_dynamic:
      return "int8_dynamic";
    case WeightOnlyActivations::int8_blocks:
      return "int8_blocks";
    default:
      return "automatic";
  }
}

namespace {

// resolve_activations on the call's kernel table (deliberately not a function of M: rows are
// batch-invariant).
WeightOnlyActivations resolve_with(const kernels::KernelTable& kt, const WeightOnlyOptions& options,
                                   const weight_only::PackedView& v) {
  if (options.activations != WeightOnlyActivations::automatic) return options.activations;
  const bool fits = v.group_length <= int8_max_group;
  if (!fits || !weight_only::int8_kernel_is_fast(kt, v.bits)) return WeightOnlyActivations::float32;
  // One group per row: a block would be the whole row, where the per-row affine scale is finer.
  return v.groups > 1 ? WeightOnlyActivations::int8_blocks : WeightOnlyActivations::int8_dynamic;
}

}  // namespace

WeightOnlyActivations resolve_activations(const WeightOnlyOptions& options, std::int64_t m,
                                          const PackedWeightsLowBit& w) {
  (void)m;
  return resolve_with(kernels::active(), options, w.layout().view);
}

void weight_only_gemm(const void* x, ScalarType x_type, std::int64_t m, std::int64_t x_row_stride,
                      const PackedWeightsLowBit& w, const float* bias, float* y,
                      std::int64_t y_row_stride, const WeightOnlyOptions& options) {
  const char* fn = "weight_only_gemm: ";
  const weight_only::PackedView& v = w.layout().view;
  if (m < 0) throw Error(std::string(fn) + "m = " + str(m) + " (expected >= 0)");
  if (x_type != ScalarType::float32 && x_type != ScalarType::bfloat16) {
    throw Error(std::string(fn) + "x_type = " + to_string(x_type) +
                " (expected float32 or bfloat16)");
  }
  if (m == 0) return;
  if (x == nullptr) throw Error(std::string(fn) + "x is null (expected m = " + str(m) + " rows)");
  if (y == nullptr) throw Error(std::string(fn) + "y is null (expected m = " + str(m) + " rows)");
  if (x_row_stride < v.k) {
    throw Error(std::string(fn) + "x_row_stride = " + str(x_row_stride) +
                " (expected >= K = " + str(v.k) + ")");
  }
  if (y_row_stride < v.n) {
    throw Error(std::string(fn) + "y_row_stride = " + str(y_row_stride) +
                " (expected >= N = " + str(v.n) + ")");
  }

  const kernels::KernelTable& kt = kernels::active();  // once per call: every choice below
  const WeightOnlyActivations path = resolve_with(kt, options, v);
  if (path == WeightOnlyActivations::int8_dynamic || path == WeightOnlyActivations::int8_blocks) {
    if (v.group_length > int8_max_group) {
      throw Error(std::string(fn) + to_string(path) + " activations need groups of at most " +
                  str(int8_max_group) + " elements (this weight's group: " + str(v.group_length) +
                  ")");
    }
    const bool fallback = options.activations == WeightOnlyActivations::automatic;
    if (x_type == ScalarType::float32) {  // quantized straight from the caller's rows
      if (run_int8(kt, path, static_cast<const float*>(x), x_row_stride, m, v, bias, y,
                   y_row_stride, fallback))
        return;
    } else {
      std::vector<float> wide(static_cast<std::size_t>(m * v.k));
      for (std::int64_t r = 0; r < m; ++r) {
        detail::widen_to_float32(static_cast<const std::uint16_t*>(x) + r * x_row_stride, x_type,
                                 v.k, wide.data() + r * v.k);
      }
      if (run_int8(kt, path, wide.data(), v.k, m, v, bias, y, y_row_stride, fallback)) return;
    }
  }

  // Activations staged as float32 rows of k_padded (zero tail), plus group sums for affine.
  const std::int64_t stride = (v.k_padded + 15) / 16 * 16;
  std::vector<float> xs(static_cast<std::size_t>(m * stride), 0.0f);
  for (std::int64_t r = 0; r < m; ++r) {
    const std::int64_t width = x_type == ScalarType::float32 ? 4 : 2;
    detail::widen_to_float32(static_cast<const unsigned char*>(x) + r * x_row_stride * width,
                             x_type, v.k, xs.data() + r * stride);
  }
  std::vector<float> sums;
  if (!v.symmetric) {
    sums.resize(static_cast<std::size_t>(m * v.groups));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t j = 0; j < v.groups; ++j) {
        const float* row = xs.data() + r * stride + j * v.group_length;
        const std::int64_t len = std::min(v.group_length, v.k - j * v.group_length);
        float s = 0.0f;
        for (std::int64_t t = 0; t < len; ++t)
          s += row[t];
        sums[static_cast<std::size_t>(r * v.groups + j)] = s;
      }
    }
  }

  weight_only::GemmArgs args;
  args.w = v;
  args.x = xs.data();
  args.x_stride = stride;
  args.x_sums = sums.empty() ? nullptr : sums.data();
  args.m = m;
  args.bias = bias;
  args.y = y;
  args.y_stride = y_row_stride;

  const weight_only::PanelsKernel kernel = kt.weight_only_f32;
  const std::int64_t work = v.n * v.k * std::max<std::int64_t>(1, m / 8);
  const int pieces = static_cast<int>(
      std::min<std::int64_t>(kernels::threads_for(work, min_weights_per_thread), v.panels));
  // The GEMM path (M > 8) walks rows in chunks of 8, each over all of the thread's panels:
  // the chunk's activations stay in L2 while the weights stream again from L3 / memory once
  // per chunk, which the kernels absorb at full FMA rate (docs/numerics.md, "Weight-only
  // GEMM"). Each output's operations are the same for any chunking.
  const std::int64_t chunk = rows_per_chunk;
  kernels::parallel_pieces(v.panels, pieces, 1, [&](int, std::int64_t begin, std::int64_t end) {
    for (std::int64_t row0 = 0; row0 < m; row0 += chunk) {
      weight_only::GemmArgs part = args;
      part.x = args.x + row0 * stride;
      part.x_sums = args.x_sums != nullptr ? args.x_sums + row0 * v.groups : nullptr;
      part.m = std::min(chunk, m - row0);
      part.y = y + row0 * y_row_stride;
      kernel(part, begin, end);
    }
  });
}

Tensor weight_only_linear(const TensorView& x, const PackedWeightsLowBit& w, const TensorView* bias,
                          const WeightOnlyOptions& options) {
  const char* fn = "weight_only_linear: ";
  const std::int64_t k = w.columns();
  const std::int64_t n = w.rows();
  if (n == 0) throw Error(std::string(fn) + "w is empty (expected a packed weight)");
  if (x.shape.empty() || x.shape.back() != k) {
    throw Error(std::string(fn) + "x shape = " + to_string(x.shape) +
                " (expected [..., K] with K = " + str(k) + ")");
  }
  if (x.type != ScalarType::float32 && x.type != ScalarType::bfloat16) {
    throw Error(std::string(fn) + "x type = " + to_string(x.type) +
                " (expected float32 or bfloat16)");
  }
  const float* bias_data = nullptr;
  if (bias != nullptr) {
    if (bias->type != ScalarType::float32 || bias->shape != Shape{n}) {
      throw Error(std::string(fn) + "bias = " + to_string(bias->type) + " " +
                  to_string(bias->shape) + " (expected float32 [" + str(n) + "])");
    }
    bias_data = bias->data_as<float>();
  }
  Shape out_shape = x.shape;
  out_shape.back() = n;
  Tensor out(ScalarType::float32, out_shape);
  const std::int64_t m = x.numel() / k;
  weight_only_gemm(x.data, x.type, m, k, w, bias_data, out.data_as<float>(), n, options);
  return out;
}

}  // namespace lucid::quantization
