// The process's cache of freed large mappings (ByteBuffer storage, large QParams arrays).
#include "core/mapping_cache.hpp"

#include <array>
#include <mutex>

#include "core/large_buffer.hpp"

namespace lucid::quantization::detail {
namespace {

// Reusing a kept mapping skips the page faults a fresh one pays, which in a VM cost several
// memcpys of it. Four entries: one per-group quantize frees three (codes, scales, zero points).
class MappingCache {
 public:
  static constexpr std::size_t max_entries = 4;
  static constexpr std::size_t max_bytes = std::size_t{512} << 20;

  std::pair<void*, std::size_t> take(std::size_t least, std::size_t most) {
    const std::lock_guard lock(mutex_);
    std::size_t best = count_;
    for (std::size_t i = 0; i < count_; ++i) {
      const std::size_t have = entries_[i].second;
      if (have >= least && have <= most && (best == count_ || have < entries_[best].second))
        best = i;
    }
    if (best == count_) return {nullptr, 0};
    return remove(best);
  }

  void put(void* data, std::size_t length) {
    if (length > max_bytes) {
      unmap_large(data, length);
      return;
    }
    const std::lock_guard lock(mutex_);
    while (count_ == max_entries || bytes_ + length > max_bytes) {
      const auto [oldest, oldest_length] = remove(0);
      unmap_large(oldest, oldest_length);
    }
    entries_[count_++] = {data, length};
    bytes_ += length;
  }

  void clear() {
    const std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < count_; ++i)
      unmap_large(entries_[i].first, entries_[i].second);
    count_ = 0;
    bytes_ = 0;
  }

 private:
  // Takes entry i out, keeping the rest oldest first; the caller holds the lock.
  std::pair<void*, std::size_t> remove(std::size_t i) {
    const auto entry = entries_[i];
    for (std::size_t j = i + 1; j < count_; ++j)
      entries_[j - 1] = entries_[j];
    --count_;
    bytes_ -= entry.second;
    return entry;
  }

  std::mutex mutex_;
  std::array<std::pair<void*, std::size_t>, max_entries> entries_{};
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

// Never destroyed: buffers in static objects may be released after it would be.
MappingCache& mapping_cache() {
  static auto* cache = new MappingCache;
  return *cache;
}

}  // namespace

std::pair<void*, std::size_t> take_cached_mapping(std::size_t least, std::size_t most) {
  return mapping_cache().take(least, most);
}

void keep_mapping(void* data, std::size_t length) noexcept {
  mapping_cache().put(data, length);
}

void release_cached_mappings() noexcept {
  mapping_cache().clear();
}

}  // namespace lucid::quantization::detail
