// Row-wise quantized embedding tables (int8, or int4 as torch's quint4x2) and their lookups.
//
// Each row r of a table [rows, dim] has its own float scale s_r and bias b_r (the row
// minimum; torch's zero point z_r = −b_r / s_r) and decodes as w[r, d] = q[r, d] · s_r + b_r
// (float32 multiply, then add). Rows are stored in torch's prepacked layout
// (torch.ops.quantized.embedding_bag_byte_prepack / embedding_bag_4bit_prepack):
//   8 bits: dim uint8 codes, then s_r and b_r as float32 (dim + 8 bytes);
//   4 bits: ceil(dim / 2) bytes, element 2i in the low nibble and 2i + 1 in the high one,
//           then s_r and b_r as float16 (ceil(dim / 2) + 4 bytes).
// A lookup decodes only the rows it reads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lucid::quantization {

class QuantizedEmbeddingTable {
 public:
  QuantizedEmbeddingTable() = default;

  /// Quantizes float32 rows (row r at w + r · dim) as torch's prepack: s_r = (max − min) /
  /// (2^bits − 1), b_r = min (for 4 bits both rounded to float16 first, and s_r = 1 for a
  /// constant row), q = clamp(nearbyint((w − b_r) / s_r)) (8 bits: (w − b_r) · (255 /
  /// (max − min + 1e-8)), as torch). Throws Error for bits other than 4 or 8, rows or dim < 1,
  /// or a non-finite weight (naming row and column).
  static QuantizedEmbeddingTable quantize(const float* w, std::int64_t rows, std::int64_t dim,
                                          int bits);

  /// Adopts bytes in the prepacked layout above (rows · row_bytes(dim, bits) bytes).
  static QuantizedEmbeddingTable from_prepacked(const std::uint8_t* bytes, std::int64_t rows,
                                                std::int64_t dim, int bits);

  /// Bytes of one prepacked row.
  static std::int64_t row_bytes(std::int64_t dim, int bits);

  std::int64_t rows() const { return rows_; }
  std::int64_t dim() const { return dim_; }
  int bits() const { return bits_; }
  /// The prepacked table (rows · row_bytes bytes).
  std::span<const std::uint8_t> bytes() const { return bytes_; }
  float scale(std::int64_t row) const;
  float bias(std::int64_t row) const;
  /// The code of element (row, d) (0..255 or 0..15).
  std::int32_t code(std::int64_t row, std::int64_t d) const;
  /// Decodes row `row` into out[dim].
  void decode_row(std::int64_t row, float* out) const;

 private:
  std::int64_t rows_ = 0, dim_ = 0;
  int bits_ = 8;
  std::vector<std::uint8_t> bytes_;
};

/// out[i, :] = decoded row indices[i], for i < count. Throws Error (writing nothing) for an
/// index outside [0, rows) (naming its position and value).
void embedding_lookup(const QuantizedEmbeddingTable& table, const std::int64_t* indices,
                      std::int64_t count, float* out);

enum class EmbeddingBagMode { sum, mean, max };

/// Bags as torch.nn.EmbeddingBag with 1-D indices and offsets.
struct EmbeddingBagOptions {
  EmbeddingBagMode mode = EmbeddingBagMode::sum;
  /// offsets has one more entry than there are bags, the last = count (torch's flag).
  bool include_last_offset = false;
  /// Entries with this index are skipped (they neither add nor count); −1 for none.
  std::int64_t padding_idx = -1;
};

/// Bag b covers indices[offsets[b] .. offsets[b + 1]) (the last bag ends at count) and
/// out[b, :] is the sum of its decoded rows (each times per_sample_weights[i] when given:
/// mode sum only, as torch), their mean, or their elementwise max; an empty bag gives
/// zeros. Rows are added in index order in float32. Bags = offset_count, or offset_count − 1
/// with include_last_offset. Throws Error for bad indices, offsets not starting at 0, not
/// ascending or past count, or per_sample_weights with a mode other than sum.
void embedding_bag(const QuantizedEmbeddingTable& table, const std::int64_t* indices,
                   std::int64_t count, const std::int64_t* offsets, std::int64_t offset_count,
                   const float* per_sample_weights, const EmbeddingBagOptions& options, float* out);

/// The number of bags embedding_bag() writes for offset_count offsets.
std::int64_t embedding_bag_count(std::int64_t offset_count, const EmbeddingBagOptions& options);

}  // namespace lucid::quantization
