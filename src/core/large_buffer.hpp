// Internal: output buffers for large results, backed by transparent huge pages where the OS allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace lucid::quantization::detail {

/// Buffers at least this large ask for transparent huge pages.
inline constexpr std::size_t huge_page_threshold = std::size_t{4} << 20;

/// `count` zero bytes. For large counts the memory is advised MADV_HUGEPAGE
/// before it is first touched: a fresh 256 MB output then costs ~128 page
/// faults instead of ~65000, which in a VM dominate the whole call.
inline std::vector<std::uint8_t> zeroed_bytes(std::size_t count) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(count);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (count >= huge_page_threshold) {
    constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
    const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
    const std::uintptr_t first = (begin + huge - 1) & ~(huge - 1);
    const std::uintptr_t last = (begin + count) & ~(huge - 1);
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#endif
  bytes.resize(count);
  return bytes;
}

}  // namespace lucid::quantization::detail
