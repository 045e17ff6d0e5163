// embedding_lookup() and embedding_bag(): validation, then only the rows used are decoded.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "lucid/quantization/embedding.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

void check_indices(const char* fn, const QuantizedEmbeddingTable& t, const std::int64_t* indices,
                   std::int64_t count) {
  if (count < 0)
    throw Error(std::string(fn) + ": count = " + std::to_string(count) + " (expected >= 0)");
  if (count > 0 && indices == nullptr) throw Error(std::string(fn) + ": indices is null");
  for (std::int64_t i = 0; i < count; ++i) {
    if (indices[i] < 0 || indices[i] >= t.rows()) {
      throw Error(std::string(fn) + ": indices[" + std::to_string(i) + "] = " +
                  std::to_string(indices[i]) + " (expected 0.." + std::to_string(t.rows() - 1) +
                  ", the table has " + std::to_string(t.rows()) + " rows)");
    }
  }
}

}  // namespace

void embedding_lookup(const QuantizedEmbeddingTable& table, const std::int64_t* indices,
                      std::int64_t count, float* out) {
  check_indices("embedding", table, indices, count);
  for (std::int64_t i = 0; i < count; ++i)
    table.decode_row(indices[i], out + i * table.dim());
}

std::int64_t embedding_bag_count(std::int64_t offset_count, const EmbeddingBagOptions& options) {
  return options.include_last_offset ? std::max<std::int64_t>(offset_count - 1, 0) : offset_count;
}

void embedding_bag(const QuantizedEmbeddingTable& table, const std::int64_t* indices,
                   std::int64_t count, const std::int64_t* offsets, std::int64_t offset_count,
                   const float* per_sample_weights, const EmbeddingBagOptions& options,
                   float* out) {
  constexpr const char* fn = "embedding_bag";
  check_indices(fn, table, indices, count);
  if (offset_count < 0 || (offset_count > 0 && offsets == nullptr))
    throw Error(std::string(fn) + ": offsets is null or offset_count < 0");
  if (offset_count > 0 && offsets[0] != 0)
    throw Error(std::string(fn) + ": offsets[0] = " + std::to_string(offsets[0]) + " (expected 0)");
  for (std::int64_t b = 1; b < offset_count; ++b) {
    if (offsets[b] < offsets[b - 1] || offsets[b] > count) {
      throw Error(std::string(fn) + ": offsets[" + std::to_string(b) +
                  "] = " + std::to_string(offsets[b]) + " (expected ascending offsets within 0.." +
                  std::to_string(count) + ")");
    }
  }
  if (per_sample_weights != nullptr && options.mode != EmbeddingBagMode::sum)
    throw Error(std::string(fn) + ": per_sample_weights are only supported with mode \"sum\"");
  const std::int64_t bags = embedding_bag_count(offset_count, options);
  const std::int64_t dim = table.dim();
  std::vector<float> row(static_cast<std::size_t>(dim));
  for (std::int64_t b = 0; b < bags; ++b) {
    const std::int64_t begin = offsets[b];
    const std::int64_t end = b + 1 < offset_count ? offsets[b + 1] : count;
    float* o = out + b * dim;
    const bool max_mode = options.mode == EmbeddingBagMode::max;
    std::fill(o, o + dim, max_mode ? -std::numeric_limits<float>::infinity() : 0.0f);
    std::int64_t used = 0;
    for (std::int64_t i = begin; i < end; ++i) {
      if (indices[i] == options.padding_idx) continue;
      ++used;
      table.decode_row(indices[i], row.data());
      if (max_mode) {
        for (std::int64_t d = 0; d < dim; ++d)
          o[d] = std::max(o[d], row[d]);
      } else if (per_sample_weights != nullptr) {
        const float weight = per_sample_weights[i];
        for (std::int64_t d = 0; d < dim; ++d)
          o[d] += row[d] * weight;
      } else {
        for (std::int64_t d = 0; d < dim; ++d)
          o[d] += row[d];
      }
    }
    if (used == 0) {
      std::fill(o, o + dim, 0.0f);
    } else if (options.mode == EmbeddingBagMode::mean) {
      const auto n = static_cast<float>(used);
      for (std::int64_t d = 0; d < dim; ++d)
        o[d] /= n;
    }
  }
}

}  // namespace lucid::quantization
