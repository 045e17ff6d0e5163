// Internal: page mappings for large buffers, backed by transparent huge pages where the OS allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

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

/// Advises MADV_HUGEPAGE on the whole 2 MiB pages inside [data, data + bytes), memory that
/// nothing has touched yet (a fresh large malloc block, such as a just-reserved std::vector's),
/// so that its first touch takes a few huge-page faults instead of one fault per 4 KiB, and
/// faults the range in with one call where the kernel can. Hints: the memory stays the
/// allocator's, its contents are unchanged.
inline void advise_huge_pages(void* data, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + huge_page - 1) & ~(huge_page - 1);
  const std::uintptr_t last = (begin + bytes) & ~(huge_page - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#if defined(MADV_POPULATE_WRITE)
  // Fault the whole range in with one call (Linux >= 5.14; older kernels refuse, harmlessly).
  const std::uintptr_t page = 4096;
  const std::uintptr_t head = begin & ~(page - 1);
  const std::uintptr_t tail = (begin + bytes + page - 1) & ~(page - 1);
  madvise(reinterpret_cast<void*>(head), tail - head, MADV_POPULATE_WRITE);
#endif
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
inline void advise_huge_pages(void*, std::size_t) {}
inline void unmap_large(void*, std::size_t) {}
#endif

/// Whether a buffer of `size` bytes is to be a map_large mapping.
inline bool is_large(std::size_t size) {
  return maps_large && size >= huge_page_threshold;
}

/// Resizes an empty vector to `count` copies of `value`; a large one is advised huge pages
/// before the fill first touches it (per-group parameters of a big tensor are megabytes, and
/// 4 KiB faults on them cost as much as quantizing the tensor).
template <class T>
void fill_fresh(std::vector<T>& v, std::size_t count, T value) {
  v.reserve(count);
  if (is_large(count * sizeof(T))) advise_huge_pages(v.data(), count * sizeof(T));
  v.assign(count, value);
}

}  // namespace lucid::quantization::detail
