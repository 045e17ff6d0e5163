// Internal: counting bin indices into a histogram, four interleaved tables to avoid store stalls.
#pragma once

#include <cstdint>
#include <vector>

namespace lucid::quantization::detail {

/// Counts bin indices in [0, bins); the index `bins` means "skip this element".
/// Four interleaved 32-bit tables (small enough for L1 at 2048 bins) break the
/// store-to-load chains that a run of equal indices (e.g. the zeros of ReLU
/// outputs) would otherwise serialise on; they are folded into 64-bit totals
/// before any of them could overflow.
class BinCounter {
 public:
  explicit BinCounter(std::int64_t bins);
  /// Counts idx[0, n); every index must lie in [0, bins].
  void add(const std::int32_t* idx, std::int64_t n);
  /// The counts per bin (skipped elements left out).
  std::vector<std::int64_t> counts();

 private:
  void flush();

  std::int64_t bins_;
  std::vector<std::uint32_t> tables_;  // 4 x (bins + 1)
  std::vector<std::int64_t> totals_;   // bins + 1
  std::int64_t pending_ = 0;           // elements counted in tables_ since the last flush
};

/// Elements per chunk when computing indices before counting them.
inline constexpr std::int64_t kIndexChunk = 4096;

}  // namespace lucid::quantization::detail
