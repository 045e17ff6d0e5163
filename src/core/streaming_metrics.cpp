// Streaming error metrics against an original (fixed blocks, parallel): the one implementation
// behind error_metrics and the checkpoint reports.
#include "core/streaming_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "core/kernel_args.hpp"
#include "core/widen.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/error_sums.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/runtime.hpp"
#include "support/param_layout.hpp"

namespace lucid::quantization::detail {
namespace {

using kernels::ErrorSums;

constexpr std::int64_t kBlock = std::int64_t{1} << 16;  // elements per block (fixed)
constexpr std::int64_t kChunk = 1024;                   // elements decoded at a time

using Sums = MetricSums;

// Elements [begin, begin + n) of a float view as float32.
void decode_floats(const TensorView& x, std::int64_t begin, std::int64_t n, float* out) {
  const std::int64_t width = x.type == ScalarType::float32 ? 4 : 2;
  widen_to_float32(static_cast<const unsigned char*>(x.data) + width * begin, x.type, n, out);
}

// Codes [begin, begin + n) of `q` as int32; begin is a multiple of 4 (byte aligned).
void decode_codes(const kernels::KernelTable& kt, std::span<const std::uint8_t> storage,
                  const QDtype& d, std::int64_t begin, std::int64_t n, std::int32_t* out) {
  const std::uint8_t* s = storage.data();
  switch (d.storage()) {
    case Storage::int8:
      for (std::int64_t k = 0; k < n; ++k)
        out[k] = static_cast<std::int8_t>(s[begin + k]);
      return;
    case Storage::uint8:
      for (std::int64_t k = 0; k < n; ++k)
        out[k] = s[begin + k];
      return;
    case Storage::int16:
    case Storage::uint16: {
      std::uint16_t v[kChunk];
      std::memcpy(v, s + 2 * begin, static_cast<std::size_t>(2 * n));
      for (std::int64_t k = 0; k < n; ++k)
        out[k] = d.is_signed() ? static_cast<std::int16_t>(v[k]) : v[k];
      return;
    }
    case Storage::int32:
      std::memcpy(out, s + 4 * begin, static_cast<std::size_t>(4 * n));
      return;
    case Storage::packed4:
    case Storage::packed2: {
      std::int8_t unpacked[kChunk];
      unpack_kernel(kt, d)(s + begin * d.bits() / 8, n, unpacked);
      for (std::int64_t k = 0; k < n; ++k)
        out[k] = unpacked[k];
      return;
    }
  }
}

// x_hat[k] = float(double(scale) * (code[k] - zero_point)), the reconstruction dequantize()
// gives. For grids of up to 16 bits code - zero_point is exact in float, and the float
// product rounds the exact product once, as the double form does; so it is computed in float.
void reconstruct_run(const std::int32_t* code, std::int64_t n, float scale, std::int32_t zero_point,
                     bool wide, float* x_hat) {
  if (wide) {
    for (std::int64_t k = 0; k < n; ++k) {
      x_hat[k] = static_cast<float>(static_cast<double>(scale) *
                                    (static_cast<double>(code[k]) - zero_point));
    }
    return;
  }
  for (std::int64_t k = 0; k < n; ++k)
    x_hat[k] = scale * static_cast<float>(code[k] - zero_point);
}

// Replaces the non-finite x[k] (and their x_hat[k]) by 0, so that they add nothing to any sum;
// returns how many there were.
std::int64_t zero_nonfinite(float* x, float* x_hat, std::int64_t n) {
  std::uint32_t bits[kChunk];
  std::memcpy(bits, x, static_cast<std::size_t>(n) * 4);
  std::int64_t count = 0;
  for (std::int64_t k = 0; k < n; ++k)
    count += (bits[k] & 0x7f800000u) == 0x7f800000u ? 1 : 0;
  if (count == 0) return 0;
  for (std::int64_t k = 0; k < n; ++k) {
    if ((bits[k] & 0x7f800000u) == 0x7f800000u) x[k] = x_hat[k] = 0.0f;
  }
  return count;
}

// The elements of a run (one scale and zero point) whose unclamped code
// nearbyint(x * (1.0f / s)) + z lies outside [qmin, qmax]. With v = x * (1.0f / s) and
// m = qmax - z, nearbyint(v) > m exactly when v > m + 1/2, or v == m + 1/2 and the tie goes up
// (m + 1 even); likewise below. Written without nearbyint so that it vectorizes; `x` holds 0
// for non-finite elements, which therefore never count. For grids of up to 16 bits (m + 1/2
// exact in float); wider grids take saturated_wide().
std::int64_t saturated_run(const float* x, std::int64_t n, float scale, std::int32_t zero_point,
                           std::int32_t qmin, std::int32_t qmax) {
  const float inverse = 1.0f / scale;
  const std::int32_t above = qmax - zero_point, below = qmin - zero_point;
  const float high = static_cast<float>(above) + 0.5f;
  const float low = static_cast<float>(below) - 0.5f;
  const bool high_tie_up = (above + 1) % 2 == 0;   // m + 1/2 rounds to m + 1
  const bool low_tie_down = (below - 1) % 2 == 0;  // m - 1/2 rounds to m - 1
  std::int32_t count = 0;                          // n <= kChunk: a 32-bit count vectorizes better
  for (std::int64_t k = 0; k < n; ++k) {
    const float v = x[k] * inverse;
    count += (v > high) | ((v == high) & high_tie_up) | (v < low) | ((v == low) & low_tie_down);
  }
  return count;
}

// saturated_run for any grid, element by element as error_metrics does it.
std::int64_t saturated_wide(const float* x, std::int64_t n, float scale, std::int32_t zero_point,
                            std::int32_t qmin, std::int32_t qmax) {
  std::int64_t count = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const double unclamped =
        static_cast<double>(std::nearbyint(x[k] * (1.0f / scale))) + zero_point;
    count += unclamped < qmin || unclamped > qmax ? 1 : 0;
  }
  return count;
}

Sums block_sums(const TensorView& x, const QParams& qp, std::span<const std::uint8_t> storage,
                const ParamLayout& layout, std::int64_t begin, std::int64_t end,
                const kernels::KernelTable& kt) {
  const bool wide = qp.qdtype.bits() > 16;
  const auto qmin = static_cast<std::int32_t>(qp.qdtype.quant_min());
  const auto qmax = static_cast<std::int32_t>(qp.qdtype.quant_max());
  Sums sums;
  float xs[kChunk];
  float x_hat[kChunk];
  std::int32_t codes[kChunk];
  for (std::int64_t chunk = begin; chunk < end; chunk += kChunk) {
    const std::int64_t n = std::min(end, chunk + kChunk) - chunk;
    decode_floats(x, chunk, n, xs);
    decode_codes(kt, storage, qp.qdtype, chunk, n, codes);
    // A run uses one slot, or (per_element) slot + k for its element k.
    auto each_slot = [&](auto&& f) {
      layout.for_each_run(chunk, chunk + n,
                          [&](std::int64_t b, std::int64_t e, std::int64_t slot, bool per_element) {
                            const std::int64_t length = per_element ? 1 : e - b;
                            for (std::int64_t k = 0; k < (per_element ? e - b : 1); ++k) {
                              f(b - chunk + k, length, static_cast<std::size_t>(slot + k));
                            }
                          });
    };
    each_slot([&](std::int64_t at, std::int64_t length, std::size_t p) {
      reconstruct_run(codes + at, length, qp.scale[p], qp.zero_point[p], wide, x_hat + at);
    });
    add_pairs(kt, xs, x_hat, n, sums);  // x is 0 where it was not finite from here on
    const auto saturated = wide ? &saturated_wide : &saturated_run;
    each_slot([&](std::int64_t at, std::int64_t length, std::size_t p) {
      sums.saturated += saturated(xs + at, length, qp.scale[p], qp.zero_point[p], qmin, qmax);
    });
  }
  return sums;
}

int threads_for_blocks(std::int64_t blocks) {
  return static_cast<int>(std::clamp<std::int64_t>(blocks, 1, num_threads()));
}

// The sums of n elements in fixed blocks of kBlock, block_sums(begin, end) each, in parallel,
// added in block order (so the result does not depend on the thread count).
template <class BlockSums>
ErrorMetrics sum_blocks(std::int64_t n, BlockSums&& block_sums) {
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<Sums> partial(static_cast<std::size_t>(blocks));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_for_blocks(blocks))
#endif
  for (std::int64_t b = 0; b < blocks; ++b)
    partial[static_cast<std::size_t>(b)] = block_sums(b * kBlock, std::min(n, (b + 1) * kBlock));
  Sums total;
  for (const Sums& sums : partial)
    total.add(sums);
  return total.finish();
}

// How many elements of `x` (read as unsigned words of its width) have every bit of
// `exponent` set: the NaN and +-Inf elements when `exponent` is the exponent field.
template <class Bits>
std::int64_t count_all_ones(const TensorView& x, Bits exponent) {
  const auto* bytes = static_cast<const unsigned char*>(x.data);
  const std::int64_t n = x.numel();
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::int64_t count = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(+ : count) num_threads(threads_for_blocks(blocks))
#endif
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t stop = std::min(n, (b + 1) * kBlock);
    std::int64_t block_count = 0;
    for (std::int64_t k = b * kBlock; k < stop; ++k) {
      Bits bits;
      std::memcpy(&bits, bytes + static_cast<std::size_t>(k) * sizeof(Bits), sizeof(Bits));
      block_count += (bits & exponent) == exponent ? 1 : 0;
    }
    count += block_count;
  }
  return count;
}

}  // namespace

void MetricSums::add(const MetricSums& o) {
  count += o.count;
  nonfinite += o.nonfinite;
  saturated += o.saturated;
  errors.sq_error += o.errors.sq_error;
  errors.sq_signal += o.errors.sq_signal;
  errors.sq_reconstruction += o.errors.sq_reconstruction;
  errors.dot += o.errors.dot;
  errors.max_abs_error = std::max(errors.max_abs_error, o.errors.max_abs_error);
}

ErrorMetrics MetricSums::finish() const {
  const ErrorSums& e = errors;
  ErrorMetrics m;
  m.count = count;
  m.nonfinite_count = nonfinite;
  if (count == 0) return m;
  m.mse = e.sq_error / static_cast<double>(count);
  m.rmse = std::sqrt(m.mse);
  m.max_abs_error = e.max_abs_error;
  m.sqnr_db = e.sq_error == 0 ? std::numeric_limits<double>::infinity()
                              : 10.0 * std::log10(e.sq_signal / e.sq_error);
  if (e.sq_signal == 0 && e.sq_reconstruction == 0) {
    m.cosine_similarity = 1.0;
  } else if (e.sq_signal == 0 || e.sq_reconstruction == 0) {
    m.cosine_similarity = 0.0;
  } else {
    m.cosine_similarity = e.dot / std::sqrt(e.sq_signal * e.sq_reconstruction);
  }
  m.fraction_saturated = static_cast<double>(saturated) / static_cast<double>(count);
  return m;
}

void add_pairs(const kernels::KernelTable& kt, float* x, float* x_hat, std::int64_t n,
               MetricSums& sums) {
  for (std::int64_t chunk = 0; chunk < n; chunk += kChunk) {
    const std::int64_t len = std::min(kChunk, n - chunk);
    const std::int64_t nonfinite = zero_nonfinite(x + chunk, x_hat + chunk, len);
    sums.nonfinite += nonfinite;
    sums.count += len - nonfinite;
    kt.accumulate_errors(x + chunk, x_hat + chunk, len, sums.errors);
  }
}

bool saturates(float x, float scale, std::int32_t zero_point, const QDtype& qdtype) {
  return saturated_wide(&x, 1, scale, zero_point, static_cast<std::int32_t>(qdtype.quant_min()),
                        static_cast<std::int32_t>(qdtype.quant_max())) != 0;
}

ErrorMetrics streaming_error_metrics(const TensorView& original, const QParams& qparams,
                                     std::span<const std::uint8_t> storage) {
  if (original.type != ScalarType::float32 && original.type != ScalarType::float16 &&
      original.type != ScalarType::bfloat16) {
    throw Error("error_metrics: original is " + to_string(original.type) +
                " (expected float32, float16 or bfloat16)");
  }
  const std::int64_t n = original.numel();
  qparams.validate_for(original.shape);
  if (static_cast<std::int64_t>(storage.size()) != qparams.qdtype.storage_bytes(n)) {
    throw Error("error_metrics: " + std::to_string(storage.size()) + " bytes of codes for " +
                std::to_string(n) + " elements of " + qparams.qdtype.name() + " (expected " +
                std::to_string(qparams.qdtype.storage_bytes(n)) + ")");
  }
  const ParamLayout layout =
      ParamLayout::make(original.shape, qparams.qscheme, qparams.ch_axis, qparams.group_size);
  const kernels::KernelTable& kt = kernels::active();
  return sum_blocks(n, [&](std::int64_t begin, std::int64_t end) {
    return block_sums(original, qparams, storage, layout, begin, end, kt);
  });
}

ErrorMetrics streaming_error_metrics(const TensorView& original, const TensorView& reconstructed) {
  const TensorView* views[] = {&original, &reconstructed};
  for (const TensorView* v : views) {
    if (!is_kernel_input(v->type)) {
      throw Error(std::string("error_metrics: ") + (v == &original ? "original" : "reconstructed") +
                  " is " + to_string(v->type) + " (expected float32, float16 or bfloat16)");
    }
  }
  const kernels::KernelTable& kt = kernels::active();
  return sum_blocks(original.numel(), [&](std::int64_t begin, std::int64_t end) {
    float xs[kChunk];
    float ys[kChunk];
    Sums sums;
    for (std::int64_t chunk = begin; chunk < end; chunk += kChunk) {
      const std::int64_t len = std::min(end, chunk + kChunk) - chunk;
      decode_floats(original, chunk, len, xs);
      decode_floats(reconstructed, chunk, len, ys);
      add_pairs(kt, xs, ys, len, sums);
    }
    return sums;
  });
}

ErrorMetrics streaming_error_metrics(const TensorView& original, const QuantizedTensor& quantized) {
  if (original.shape != quantized.shape()) {
    throw Error("error_metrics: original shape " + to_string(original.shape) +
                " differs from the quantized tensor's " + to_string(quantized.shape()) +
                " (expected equal shapes)");
  }
  return streaming_error_metrics(original, quantized.qparams(), quantized.storage());
}

std::int64_t count_nonfinite(const TensorView& x) {
  switch (x.type) {
    case ScalarType::float32:
      return count_all_ones<std::uint32_t>(x, 0x7f800000u);
    case ScalarType::float16:
      return count_all_ones<std::uint16_t>(x, 0x7c00u);
    case ScalarType::bfloat16:
      return count_all_ones<std::uint16_t>(x, 0x7f80u);
    case ScalarType::float64:
      return count_all_ones<std::uint64_t>(x, 0x7ff0000000000000u);
    default:
      return 0;
  }
}

}  // namespace lucid::quantization::detail
