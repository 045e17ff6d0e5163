// BinCounter: histogram counting over four interleaved 32-bit tables.
#include "observers/bin_counter.hpp"

#include <algorithm>

namespace lucid::quantization::detail {
namespace {
// Below 2^32 per table: each of the four tables sees at most a quarter of the pending elements.
constexpr std::int64_t kFlushEvery = std::int64_t{1} << 32;
}  // namespace

BinCounter::BinCounter(std::int64_t bins)
    : bins_(bins),
      tables_(static_cast<std::size_t>(4 * (bins + 1)), 0),
      totals_(static_cast<std::size_t>(bins + 1), 0) {}

void BinCounter::add(const std::int32_t* idx, std::int64_t n) {
  const auto stride = static_cast<std::size_t>(bins_ + 1);
  for (std::int64_t done = 0; done < n;) {
    if (pending_ + 4 >= kFlushEvery) flush();
    const std::int64_t m = std::min(n - done, kFlushEvery - 4 - pending_);
    const std::int32_t* p = idx + done;
    std::uint32_t* t0 = tables_.data();
    std::uint32_t* t1 = t0 + stride;
    std::uint32_t* t2 = t1 + stride;
    std::uint32_t* t3 = t2 + stride;
    std::int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      ++t0[p[i]];
      ++t1[p[i + 1]];
      ++t2[p[i + 2]];
      ++t3[p[i + 3]];
    }
    for (; i < m; ++i)
      ++t0[p[i]];
    done += m;
    pending_ += m;
  }
}

void BinCounter::flush() {
  const auto stride = totals_.size();
  for (std::size_t b = 0; b < stride; ++b) {
    totals_[b] += std::int64_t{tables_[b]} + tables_[stride + b] + tables_[2 * stride + b] +
                  tables_[3 * stride + b];
  }
  std::fill(tables_.begin(), tables_.end(), 0u);
  pending_ = 0;
}

std::vector<std::int64_t> BinCounter::counts() {
  flush();
  return {totals_.begin(), totals_.end() - 1};
}

}  // namespace lucid::quantization::detail
