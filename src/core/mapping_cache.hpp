// Internal: freed large mappings (map_large) kept for reuse by the next buffer of a similar size.
#pragma once

#include <cstddef>
#include <utility>

namespace lucid::quantization::detail {

/// A kept mapping of between `least` and `most` bytes (the smallest such), removed from the cache;
/// {nullptr, 0} when there is none. Its contents are whatever its last owner left.
std::pair<void*, std::size_t> take_cached_mapping(std::size_t least, std::size_t most);

/// Keeps a mapping of `length` bytes from map_large for a later take_cached_mapping, unmapping
/// the oldest kept ones past the cache's limits (4 mappings, 512 MiB per process); one larger
/// than the byte limit is unmapped at once. Thread-safe, as is take_cached_mapping.
void keep_mapping(void* data, std::size_t length) noexcept;

/// Unmaps every kept mapping.
void release_cached_mappings() noexcept;

}  // namespace lucid::quantization::detail
