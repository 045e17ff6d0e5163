// Internal: opening input files (regular files only) and read-only memory mappings of whole
// files, shared by the safetensors, GGUF and imatrix readers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace lucid::quantization::detail {

/// A read-only, private mapping of a whole regular file (nothing is mapped for an empty file).
/// `guard` is its slot in mapping_faults.hpp (-1: unguarded).
struct MappedRegion {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  int guard = -1;
};

/// Opens `path` read-only after checking that it is a regular file, without ever blocking
/// (a FIFO is refused at once). Returns the descriptor; the caller closes it. Throws Error
/// naming the path: "cannot open (...)", or "is not a regular file (it is a FIFO; expected
/// `expected`)" for a FIFO, directory, device or socket.
int open_input_file(const std::filesystem::path& path, std::string_view expected);
/// The first `count` bytes of `path` (fewer when the file is shorter), read with
/// open_input_file. Throws Error as open_input_file does, or when reading fails.
std::string read_file_head(const std::filesystem::path& path, std::size_t count,
                           std::string_view expected);

/// Opens and maps `path`, guarded against bus errors (mapping_faults.hpp). Throws Error naming
/// the path when it cannot be opened, stat'ed or mapped, or is not a regular file.
MappedRegion map_file(const std::filesystem::path& path, std::string_view expected);
/// Throws Error("PATH: the file shrank while it was being read (...)") when a bus error hit
/// `region` since map_file(): the bytes read since then were zeros, not the file's.
void check_mapping(const MappedRegion& region, const std::filesystem::path& path);
/// Unmaps `region` (which map_file returned) and empties it. Never throws.
void unmap_file(MappedRegion& region) noexcept;
/// madvise(MADV_DONTNEED) on the pages that hold bytes [begin, end) of `region`: they leave
/// the resident set and are read back from the file when touched again. Best effort.
void release_file_pages(const MappedRegion& region, std::uint64_t begin,
                        std::uint64_t end) noexcept;

}  // namespace lucid::quantization::detail
