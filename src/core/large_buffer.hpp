// Internal: page mappings for large buffers, backed by transparent huge pages where the OS allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace lucid::quantization::detail {

/// Buffers at least this large are mapped from the OS (see map_large).
inline constexpr std::size_t huge_page_threshold = std::size_t{4} << 20;
inline constexpr std::size_t huge_page = std::size_t{2} << 20;

/// The length of the mapping that holds `size` bytes: whole huge pages.
inline std::size_t mapped_length(std::size_t size) {
  return (size + huge_page - 1) & ~(huge_page - 1);
}

#if defined(__linux__) && defined(MADV_HUGEPAGE)
inline constexpr bool maps_large = true;

/// A private anonymous mapping of mapped_length(size) bytes starting on a 2 MiB
/// boundary, advised MADV_HUGEPAGE before anything touches it: its pages are
/// zero, and a fresh 256 MB output costs ~128 page faults instead of ~65000
/// (which in a VM dominate the whole call), each taken by the thread that first
/// writes there. Throws std::bad_alloc when the OS refuses.
inline void* map_large(std::size_t size) {
  const std::size_t length = mapped_length(size);
  // Over-map by one huge page, then trim the unaligned head and tail.
  void* raw =
      mmap(nullptr, length + huge_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto begin = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (begin + huge_page - 1) & ~(huge_page - 1);
  if (aligned > begin) munmap(raw, aligned - begin);
  const std::size_t tail = begin + length + huge_page - (aligned + length);
  if (tail) munmap(reinterpret_cast<void*>(aligned + length), tail);
  madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

/// Returns a mapping of `length` bytes from map_large to the OS.
inline void unmap_large(void* data, std::size_t length) {
  munmap(data, length);
}
#else
inline constexpr bool maps_large = false;
inline void* map_large(std::size_t) {
  throw std::bad_alloc();
}
inline void unmap_large(void*, std::size_t) {}
#endif

/// Whether a buffer of `size` bytes is to be a map_large mapping.
inline bool is_large(std::size_t size) {
  return maps_large && size >= huge_page_threshold;
}

}  // namespace lucid::quantization::detail
