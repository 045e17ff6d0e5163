// Streaming error metrics of a quantized tensor against its original (fixed blocks, parallel).
#include "io/checkpoint_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/param_layout.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/runtime.hpp"

namespace lucid::quantization::detail {
namespace {

constexpr std::int64_t kBlock = std::int64_t{1} << 16;  // elements per block (fixed)
constexpr std::int64_t kChunk = 1024;                   // elements decoded at a time

// The sums error_metrics folds into ErrorMetrics.
struct Sums {
  std::int64_t count = 0;
  std::int64_t nonfinite = 0;
  std::int64_t saturated = 0;
  double sum_sq_error = 0;
  double sum_sq_signal = 0;
  double sum_sq_reconstruction = 0;
  double dot = 0;
  double max_abs_error = 0;

  void add(const Sums& o) {
    count += o.count;
    nonfinite += o.nonfinite;
    saturated += o.saturated;
    sum_sq_error += o.sum_sq_error;
    sum_sq_signal += o.sum_sq_signal;
    sum_sq_reconstruction += o.sum_sq_reconstruction;
    dot += o.dot;
    max_abs_error = std::max(max_abs_error, o.max_abs_error);
  }

  // The same formulas as error_metrics (src/core/metrics.cpp).
  ErrorMetrics finish() const {
    ErrorMetrics m;
    m.count = count;
    m.nonfinite_count = nonfinite;
    if (count == 0) return m;
    m.mse = sum_sq_error / static_cast<double>(count);
    m.rmse = std::sqrt(m.mse);
    m.max_abs_error = max_abs_error;
    m.sqnr_db = sum_sq_error == 0 ? std::numeric_limits<double>::infinity()
                                  : 10.0 * std::log10(sum_sq_signal / sum_sq_error);
    if (sum_sq_signal == 0 && sum_sq_reconstruction == 0) {
      m.cosine_similarity = 1.0;
    } else if (sum_sq_signal == 0 || sum_sq_reconstruction == 0) {
      m.cosine_similarity = 0.0;
    } else {
      m.cosine_similarity = dot / std::sqrt(sum_sq_signal * sum_sq_reconstruction);
    }
    m.fraction_saturated = static_cast<double>(saturated) / static_cast<double>(count);
    return m;
  }
};

// Elements [begin, begin + n) of a float view as float32.
void decode_floats(const TensorView& x, std::int64_t begin, std::int64_t n, float* out) {
  const auto* bytes = static_cast<const unsigned char*>(x.data);
  if (x.type == ScalarType::float32) {
    std::memcpy(out, bytes + 4 * begin, static_cast<std::size_t>(4 * n));
    return;
  }
  std::uint16_t bits[kChunk];
  std::memcpy(bits, bytes + 2 * begin, static_cast<std::size_t>(2 * n));
  if (x.type == ScalarType::bfloat16) {
    for (std::int64_t k = 0; k < n; ++k)
      out[k] = bfloat16_to_float(bits[k]);
  } else {
    for (std::int64_t k = 0; k < n; ++k)
      out[k] = float16_to_float(bits[k]);
  }
}

// `n` codes of `Bits` bits packed low-bits-first from `bytes` (starting at a byte), as int32,
// sign-extended when `is_signed`.
template <int Bits>
void unpack_fields(const std::uint8_t* bytes, std::int64_t n, bool is_signed, std::int32_t* out) {
  constexpr int per_byte = 8 / Bits;
  constexpr unsigned mask = (1u << Bits) - 1;
  constexpr int shift = 32 - Bits;
  std::int32_t all[kChunk + per_byte];
  const std::int64_t byte_count = (n + per_byte - 1) / per_byte;
  for (std::int64_t i = 0; i < byte_count; ++i) {
    for (int j = 0; j < per_byte; ++j)
      all[i * per_byte + j] = static_cast<std::int32_t>((bytes[i] >> (Bits * j)) & mask);
  }
  if (is_signed) {
    for (std::int64_t k = 0; k < n; ++k)  // sign-extend through the top of a 32-bit word
      out[k] = static_cast<std::int32_t>(static_cast<std::uint32_t>(all[k]) << shift) >> shift;
  } else {
    std::memcpy(out, all, static_cast<std::size_t>(n) * sizeof(std::int32_t));
  }
}

// Codes [begin, begin + n) of `q` as int32; begin is a multiple of 4 (byte aligned).
void decode_codes(const QuantizedTensor& q, std::int64_t begin, std::int64_t n,
                  std::int32_t* out) {
  const std::uint8_t* s = q.storage().data();
  const QDtype& d = q.qdtype();
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
      unpack_fields<4>(s + begin / 2, n, d.is_signed(), out);
      return;
    case Storage::packed2:
      unpack_fields<2>(s + begin / 4, n, d.is_signed(), out);
      return;
  }
}

// Adds elements [0, n) that all use one (scale, zero point) to `sums`. A SIMD reduction:
// the compiler may add the elements in vector lanes, an order that depends only on the
// data (never on the thread count).
void add_run(const float* x, const std::int32_t* code, std::int64_t n, float scale,
             std::int32_t zero_point, const QDtype& d, Sums& sums) {
  const double s = scale;
  double sq_error = 0, sq_signal = 0, sq_reconstruction = 0, dot = 0, max_error = 0;
  std::int64_t finite = 0, on_edge = 0;
  const auto qmin = static_cast<std::int32_t>(d.quant_min());
  const auto qmax = static_cast<std::int32_t>(d.quant_max());
#ifdef _OPENMP
#pragma omp simd reduction(+ : sq_error, sq_signal, sq_reconstruction, dot, finite, on_edge) \
    reduction(max : max_error)
#endif
  for (std::int64_t k = 0; k < n; ++k) {
    std::uint32_t bits;
    std::memcpy(&bits, &x[k], 4);
    const bool is_finite = (bits & 0x7f800000u) != 0x7f800000u;
    const auto x_hat = static_cast<float>(s * static_cast<double>(code[k] - zero_point));
    const double xd = is_finite ? static_cast<double>(x[k]) : 0.0;
    const double hd = is_finite ? static_cast<double>(x_hat) : 0.0;
    const double error = hd - xd;
    sq_error += error * error;
    sq_signal += xd * xd;
    sq_reconstruction += hd * hd;
    dot += xd * hd;
    max_error = std::max(max_error, std::abs(error));
    finite += is_finite ? 1 : 0;
    on_edge += (code[k] == qmin) | (code[k] == qmax);
  }
  sums.count += finite;
  sums.nonfinite += n - finite;
  sums.sum_sq_error += sq_error;
  sums.sum_sq_signal += sq_signal;
  sums.sum_sq_reconstruction += sq_reconstruction;
  sums.dot += dot;
  sums.max_abs_error = std::max(sums.max_abs_error, max_error);
  if (on_edge == 0) return;  // only a code on the grid's edge can have been clamped
  const float inverse = 1.0f / scale;
  for (std::int64_t k = 0; k < n; ++k) {
    if ((code[k] == qmin || code[k] == qmax) && std::isfinite(x[k])) {
      const double unclamped = static_cast<double>(std::nearbyint(x[k] * inverse)) + zero_point;
      if (unclamped < qmin || unclamped > qmax) ++sums.saturated;
    }
  }
}

Sums block_sums(const TensorView& x, const QuantizedTensor& q, const ParamLayout& layout,
                std::int64_t begin, std::int64_t end) {
  const QParams& qp = q.qparams();
  Sums sums;
  float xs[kChunk];
  std::int32_t codes[kChunk];
  for (std::int64_t chunk = begin; chunk < end; chunk += kChunk) {
    const std::int64_t stop = std::min(end, chunk + kChunk);
    decode_floats(x, chunk, stop - chunk, xs);
    decode_codes(q, chunk, stop - chunk, codes);
    layout.for_each_run(chunk, stop, [&](std::int64_t b, std::int64_t e, std::int64_t slot,
                                         bool per_element) {
      const std::int64_t at = b - chunk;
      if (!per_element) {
        const auto p = static_cast<std::size_t>(slot);
        add_run(xs + at, codes + at, e - b, qp.scale[p], qp.zero_point[p], qp.qdtype, sums);
        return;
      }
      for (std::int64_t k = 0; k < e - b; ++k) {
        const auto p = static_cast<std::size_t>(slot + k);
        add_run(xs + at + k, codes + at + k, 1, qp.scale[p], qp.zero_point[p], qp.qdtype, sums);
      }
    });
  }
  return sums;
}

int threads_for_blocks(std::int64_t blocks) {
  return static_cast<int>(std::clamp<std::int64_t>(blocks, 1, num_threads()));
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

ErrorMetrics streaming_error_metrics(const TensorView& original, const QuantizedTensor& quantized) {
  if (original.shape != quantized.shape()) {
    throw Error("error_metrics: original shape " + to_string(original.shape) +
                " differs from the quantized tensor's " + to_string(quantized.shape()) +
                " (expected equal shapes)");
  }
  if (original.type != ScalarType::float32 && original.type != ScalarType::float16 &&
      original.type != ScalarType::bfloat16) {
    throw Error("error_metrics: original is " + to_string(original.type) +
                " (expected float32, float16 or bfloat16)");
  }
  const QParams& qp = quantized.qparams();
  const ParamLayout layout = ParamLayout::make(original.shape, qp.qscheme, qp.ch_axis,
                                               qp.group_size);
  const std::int64_t n = original.numel();
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<Sums> partial(static_cast<std::size_t>(blocks));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_for_blocks(blocks))
#endif
  for (std::int64_t b = 0; b < blocks; ++b) {
    partial[static_cast<std::size_t>(b)] =
        block_sums(original, quantized, layout, b * kBlock, std::min(n, (b + 1) * kBlock));
  }
  Sums total;
  for (const Sums& sums : partial)
    total.add(sums);
  return total.finish();
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
