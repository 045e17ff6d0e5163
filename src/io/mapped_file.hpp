// Internal: read-only memory mapping of a whole file, shared by the safetensors and GGUF readers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace lucid::quantization::detail {

/// A read-only, private mapping of a whole regular file (nothing is mapped for an empty file).
struct MappedRegion {
  const std::byte* data = nullptr;
  std::size_t size = 0;
};

/// Opens and maps `path`. Throws Error naming the path when it cannot be opened, stat'ed or
/// mapped, or is not a regular file ("is not a regular file (expected `expected`)").
MappedRegion map_file(const std::filesystem::path& path, std::string_view expected);
/// Unmaps `region` (which map_file returned) and empties it. Never throws.
void unmap_file(MappedRegion& region) noexcept;
/// madvise(MADV_DONTNEED) on the pages that hold bytes [begin, end) of `region`: they leave
/// the resident set and are read back from the file when touched again. Best effort.
void release_file_pages(const MappedRegion& region, std::uint64_t begin,
                        std::uint64_t end) noexcept;

}  // namespace lucid::quantization::detail
