// Read-only memory mapping of whole files, and releasing a range of their pages.
#include "io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <string>
#include <system_error>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization::detail {
namespace {

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int error) {
  throw Error(path.string() + ": " + what + " (" + std::generic_category().message(error) + ")");
}

}  // namespace

MappedRegion map_file(const std::filesystem::path& path, std::string_view expected) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) fail(path, "cannot open", errno);
  const FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) fail(path, "cannot stat", errno);
  if (!S_ISREG(info.st_mode)) {
    throw Error(path.string() + ": is not a regular file (expected " + std::string(expected) + ")");
  }
  if (static_cast<std::uintmax_t>(info.st_size) > std::numeric_limits<std::size_t>::max()) {
    throw Error(path.string() + ": is too large to map on this system");
  }
  MappedRegion region;
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size > 0) {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) fail(path, "cannot memory-map", errno);
    region.data = static_cast<const std::byte*>(map);
    region.size = size;
  }
  return region;
}

void unmap_file(MappedRegion& region) noexcept {
  if (region.data != nullptr) ::munmap(const_cast<std::byte*>(region.data), region.size);
  region = {};
}

void release_file_pages(const MappedRegion& region, std::uint64_t begin,
                        std::uint64_t end) noexcept {
  if (region.data == nullptr || begin >= end || end > region.size) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(region.data + begin);
  const auto last = reinterpret_cast<std::uintptr_t>(region.data + end);
  const std::uintptr_t from = first / page * page;  // the mapping itself is page aligned
  const std::uintptr_t to = std::min((last + page - 1) / page * page,
                                     reinterpret_cast<std::uintptr_t>(region.data) + region.size);
  ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

}  // namespace lucid::quantization::detail
