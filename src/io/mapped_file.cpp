// Opening input files (regular files only, never blocking on a FIFO), read-only memory
// mapping of whole files guarded against bus errors, and releasing a range of their pages.
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

#include "io/mapping_faults.hpp"
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

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

}  // namespace

int open_input_file(const std::filesystem::path& path, std::string_view expected) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) fail(path, "cannot open", errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    fail(path, "cannot stat", error);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw Error(path.string() + ": is not a regular file (it is " + kind_of(info.st_mode) +
                "; expected " + std::string(expected) + ")");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string read_file_head(const std::filesystem::path& path, std::size_t count,
                           std::string_view expected) {
  const FdCloser closer{open_input_file(path, expected)};
  std::string head(count, '\0');
  std::size_t got = 0;
  while (got < count) {
    const ssize_t done = ::read(closer.fd, head.data() + got, count - got);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) fail(path, "cannot read", errno);
    if (done == 0) break;
    got += static_cast<std::size_t>(done);
  }
  head.resize(got);
  return head;
}

MappedRegion map_file(const std::filesystem::path& path, std::string_view expected) {
  const FdCloser closer{open_input_file(path, expected)};
  struct stat info {};
  if (::fstat(closer.fd, &info) != 0) fail(path, "cannot stat", errno);
  if (static_cast<std::uintmax_t>(info.st_size) > std::numeric_limits<std::size_t>::max()) {
    throw Error(path.string() + ": is too large to map on this system");
  }
  MappedRegion region;
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size > 0) {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, closer.fd, 0);
    if (map == MAP_FAILED) fail(path, "cannot memory-map", errno);
    region.data = static_cast<const std::byte*>(map);
    region.size = size;
    region.guard = guard_mapping(region.data, region.size);
  }
  return region;
}

void check_mapping(const MappedRegion& region, const std::filesystem::path& path) {
  if (!mapping_faulted(region.guard)) return;
  const std::string was = std::to_string(region.size);
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && static_cast<std::uintmax_t>(info.st_size) < region.size) {
    throw Error(path.string() + ": the file shrank while it was being read (" + was +
                " bytes when it was opened, " + std::to_string(info.st_size) +
                " now; expected it unchanged until the job ends: was it still being written "
                "or replaced?)");
  }
  throw Error(path.string() +
              ": the file shrank while it was being read, or its storage "
              "failed (a bus error reading its " +
              was + " mapped bytes; expected it unchanged and readable until the job ends)");
}

void unmap_file(MappedRegion& region) noexcept {
  unguard_mapping(region.guard);
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
