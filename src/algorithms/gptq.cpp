// GPTQ: column-by-column quantization with error feedback through the Cholesky factor of H⁻¹ (lazy
// blocks).
#include "lucid/quantization/gptq.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "algorithms/linalg.hpp"
#include "algorithms/weight_matrix.hpp"
#include "kernels/parallel.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"

namespace lucid::quantization {
namespace {

void check_options(const GptqOptions& options) {
  options.grid.validate();
  if (!std::isfinite(options.percent_damp) || options.percent_damp < 0) {
    throw Error("gptq: percent_damp is " + std::to_string(options.percent_damp) +
                "; expected a finite value >= 0 (0.01 = 1 % of mean(diag H))");
  }
  if (options.block_size < 1) {
    throw Error("gptq: block_size is " + std::to_string(options.block_size) + "; expected >= 1");
  }
}

}  // namespace

GptqResult gptq_quantize(const TensorView& weight, std::span<const double> hessian,
                         const GptqOptions& options) {
  check_options(options);
  const auto w = detail::read_weight(weight, "gptq weight");
  const std::int64_t n = w.rows;
  const std::int64_t k = w.cols;
  detail::check_hessian(hessian, k, "gptq hessian");
  const WeightGrid& grid = options.grid;
  const std::int64_t g = grid.group_size;
  const std::int64_t groups = grid.groups(k);
  GptqResult result;

  std::vector<double> wd(w.values.begin(), w.values.end());
  std::vector<double> h(hessian.begin(), hessian.end());
  for (std::int64_t j = 0; j < k; ++j) {  // dead inputs: never active, weights zeroed
    if (h[j * k + j] == 0) {
      h[j * k + j] = 1;
      for (std::int64_t r = 0; r < n; ++r)
        wd[r * k + j] = 0;
      ++result.dead_columns;
    }
  }

  std::vector<float> scale(static_cast<std::size_t>(n * groups));
  std::vector<std::int32_t> zero(scale.size());
  if (g == 0) {
    detail::row_group_qparams(wd.data(), n, k, 0, k, grid, scale.data(), zero.data(), 1);
  } else if (options.static_groups) {  // from the original weight, in original column order
    for (std::int64_t gi = 0; gi < groups; ++gi) {
      detail::row_group_qparams(wd.data(), n, k, gi * g, std::min(g, k - gi * g), grid,
                                scale.data() + gi, zero.data() + gi, groups);
    }
  }

  std::vector<std::int64_t> perm(static_cast<std::size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  if (options.act_order) {
    std::stable_sort(perm.begin(), perm.end(),
                     [&](std::int64_t a, std::int64_t b) { return h[a * k + a] > h[b * k + b]; });
  }
  std::vector<double> wp;  // W and H with columns (and H's rows) in quantization order
  std::vector<double> u;
  if (options.act_order) {
    wp.resize(wd.size());
    u.resize(h.size());
    for (std::int64_t r = 0; r < n; ++r) {
      for (std::int64_t c = 0; c < k; ++c)
        wp[r * k + c] = wd[r * k + perm[c]];
    }
    for (std::int64_t i = 0; i < k; ++i) {
      for (std::int64_t j = 0; j < k; ++j)
        u[i * k + j] = h[perm[i] * k + perm[j]];
    }
  } else {
    wp = std::move(wd);
    u = std::move(h);
  }
  double mean_diag = 0;
  for (std::int64_t j = 0; j < k; ++j)
    mean_diag += u[j * k + j];
  const double damp = options.percent_damp * mean_diag / static_cast<double>(k);
  for (std::int64_t j = 0; j < k; ++j)
    u[j * k + j] += damp;
  if (!detail::inverse_cholesky_upper(u, k)) {
    result.fell_back_to_rtn = true;
    result.warning =
        "gptq: the Cholesky factorization of the damped Hessian failed (not positive "
        "definite; raise percent_damp); fell back to RTN";
    std::fill(u.begin(), u.end(), 0.0);
    for (std::int64_t j = 0; j < k; ++j)
      u[j * k + j] = 1;
  }

  // Written in place: the dequantized weight in the original column order, the codes in the
  // stored layout (activation order when the groups are formed in it).
  const bool groups_in_activation_order = options.act_order && !options.static_groups && g > 0;
  result.dequantized = Tensor(ScalarType::float32, Shape{n, k});
  float* out = result.dequantized.data_as<float>();
  std::vector<std::int32_t> stored(wp.size());
  std::vector<double> row_loss(static_cast<std::size_t>(n), 0.0);
  std::vector<double> block;
  std::vector<double> errors;
  const int threads = kernels::threads_for(n * k);
  for (std::int64_t i1 = 0; i1 < k; i1 += options.block_size) {
    const std::int64_t i2 = std::min(i1 + options.block_size, k);
    const std::int64_t count = i2 - i1;
    // The group of each column of the block; groups starting in the block take their parameters
    // from the weights as they stood at the start of the block (wp has no in-block updates).
    std::vector<std::int64_t> group_of(static_cast<std::size_t>(count), 0);
    for (std::int64_t i = 0; i < count && g > 0; ++i) {
      const std::int64_t col = i1 + i;
      group_of[i] = options.static_groups ? perm[col] / g : col / g;
      if (!options.static_groups && col % g == 0) {
        detail::row_group_qparams(wp.data(), n, k, col, std::min(g, k - col), grid,
                                  scale.data() + group_of[i], zero.data() + group_of[i], groups);
      }
    }
    block.resize(static_cast<std::size_t>(n * count));
    errors.resize(block.size());
    // Rows are independent within a block: each row's columns are quantized in order, each error
    // spread over the row's later block columns (the same operations, in the same order, as
    // column by column over all rows), so the codes do not depend on the thread count.
    kernels::parallel_pieces(n, threads, 1, [&](int, std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) {
        double* row = block.data() + r * count;
        double* row_errors = errors.data() + r * count;
        std::copy_n(wp.data() + r * k + i1, count, row);
        double sum = 0;
        for (std::int64_t i = 0; i < count; ++i) {
          const std::int64_t col = i1 + i;
          const float s = scale[r * groups + group_of[i]];
          const std::int32_t z = zero[r * groups + group_of[i]];
          const std::int32_t code = quantize_value(static_cast<float>(row[i]), s, z, grid.qdtype);
          const float q = dequantize_value(code, s, z);
          stored[r * k + (groups_in_activation_order ? col : perm[col])] = code;
          out[r * k + perm[col]] = q;
          const double err = (row[i] - q) / u[col * k + col];
          sum += err * err;
          const double* urow = u.data() + col * k + i1;
          for (std::int64_t j = i; j < count; ++j)
            row[j] -= err * urow[j];
          row_errors[i] = err;
        }
        row_loss[r] += sum;
      }
    });
    if (i2 < k) {  // the lazy update of every later column: W[:, i2:] -= E · U[i1:i2, i2:]
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n),
                  static_cast<int>(k - i2), static_cast<int>(count), -1.0, errors.data(),
                  static_cast<int>(count), u.data() + i1 * k + i2, static_cast<int>(k), 1.0,
                  wp.data() + i2, static_cast<int>(k));
    }
  }
  const double loss = std::accumulate(row_loss.begin(), row_loss.end(), 0.0);
  result.loss = loss / 2;

  result.g_idx.assign(static_cast<std::size_t>(k), 0);
  for (std::int64_t c = 0; c < k; ++c) {
    if (g > 0) {
      result.g_idx[perm[c]] =
          static_cast<std::int32_t>(groups_in_activation_order ? c / g : perm[c] / g);
    }
  }
  result.permutation = perm;
  result.permuted_columns = groups_in_activation_order;
  result.quantized = detail::make_quantized(n, k, stored, grid, std::move(scale), std::move(zero));
  return result;
}

}  // namespace lucid::quantization
