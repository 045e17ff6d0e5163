// llama.cpp importance matrices (llama-imatrix's GGUF and legacy .dat files): per-column weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lucid::quantization {

/// An importance matrix: for each tensor name, one weight per input column (the mean squared
/// activation llama-imatrix measured), n_per_row values for a 2-D weight and n_per_row x
/// n_expert for a 3-D expert tensor (expert e uses the values at e * n_per_row).
struct ImportanceMatrix {
  std::map<std::string, std::vector<float>, std::less<>> entries;
  std::vector<std::string> datasets;  ///< the calibration files named in the file
  std::int64_t chunk_count = 0;       ///< chunks it was computed on (0 when not recorded)
  std::string format;                 ///< "gguf" or "legacy"
  std::string path;                   ///< the file it was read from (load_imatrix)

  /// The weights of `tensor`, or nullptr.
  const std::vector<float>* find(std::string_view tensor) const;
};

/// Parses llama-imatrix's GGUF format (what `lucidq quantize --imatrix` reads; docs/formats.md):
/// "imatrix.datasets" (string array), "imatrix.chunk_count" and "imatrix.chunk_size" (u32),
/// and per tensor W the F32 tensors "W.in_sum2" (ne [n, m]) and "W.counts" (ne [1, m]); the
/// weights are in_sum2 / count per matrix row j, or 1 where count is 0, as llama-quantize
/// computes them. Throws Error naming `display_name` and the tensor for a missing key, a
/// sums tensor without counts (or the reverse), wrong types or shapes, or a non-finite weight.
ImportanceMatrix parse_gguf_imatrix(std::span<const std::byte> file_bytes,
                                    std::string_view display_name);

/// Parses the legacy binary format: int32 entry count (>= 1); per entry int32 name length
/// (> 0), the name, int32 ncall, int32 value count (>= 1) and that many float32 (divided by
/// ncall when ncall > 0, as llama-quantize does); then optionally int32 chunk count, int32
/// dataset-name length and the name. All little-endian. Throws Error naming `display_name`
/// and the entry when truncated or malformed, or for a non-finite weight.
ImportanceMatrix parse_legacy_imatrix(std::span<const std::byte> file_bytes,
                                      std::string_view display_name);

/// Reads an imatrix file of either format (GGUF when it starts with "GGUF", else legacy).
/// Throws Error naming the path.
ImportanceMatrix load_imatrix(const std::filesystem::path& path);

}  // namespace lucid::quantization
