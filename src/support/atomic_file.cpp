// Internal: atomic output files (temporary file in the same folder, fsync, rename into place).
#include "support/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization::detail {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 16;

std::string errno_text(int error) {
  return std::generic_category().message(error);
}

std::string exists_message(const std::filesystem::path& target) {
  return target.string() + ": already exists (expected a new path, or the overwrite option)";
}

// The process umask, read without changing it (umask(2) can only read by setting).
mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0) {
      try {
        return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
      } catch (...) {
        break;
      }
    }
  }
  return 022;
}

// Renames `from` onto `to` unless `to` exists. Returns 0 or an errno value.
int rename_no_replace(const char* from, const char* to) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
#endif
  // No RENAME_NOREPLACE on this system or file system: link(2) never replaces either.
  if (::link(from, to) == 0) {
    ::unlink(from);
    return 0;
  }
  if (errno == EEXIST) return EEXIST;
  // No hard links either (e.g. FAT): check, then rename; a narrow race remains.
  struct stat info {};
  if (::lstat(to, &info) == 0) return EEXIST;
  return ::rename(from, to) == 0 ? 0 : errno;
}

void sync_directory(const std::filesystem::path& dir) {
  const std::string name = dir.empty() ? std::string(".") : dir.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);  // best effort: the rename has happened; some file systems refuse this
  ::close(fd);
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target, bool overwrite)
    : target_(std::move(target)), overwrite_(overwrite) {
  const std::string name = target_.string();
  if (target_.empty()) throw Error("output path is empty (expected a file path)");
  if (!target_.has_filename()) throw Error(name + ": is a directory path (expected a file path)");

  mode_t mode = 0666 & ~current_umask();
  struct stat info {};
  if (::lstat(target_.c_str(), &info) == 0) {
    struct stat followed {};
    const bool resolves = ::stat(target_.c_str(), &followed) == 0;
    if (resolves && S_ISDIR(followed.st_mode)) {
      throw Error(name + ": is a directory (expected a file path)");
    }
    if (!overwrite_) throw Error(exists_message(target_));
    if (resolves) mode = followed.st_mode & 07777;
  } else if (errno != ENOENT) {
    throw Error(name + ": cannot check whether it exists (" + errno_text(errno) + ")");
  }

  const std::filesystem::path dir = target_.parent_path();
  std::string temp_name = ".";  // (built piecewise: GCC 12 warns falsely on "." + string)
  temp_name += target_.filename().string();
  temp_name += ".tmp-XXXXXX";
  std::string pattern = (dir / temp_name).string();
  fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    throw Error(name + ": cannot create a temporary file in " +
                (dir.empty() ? std::string(".") : dir.string()) + " (" + errno_text(error) + ")");
  }
  temp_ = pattern;
  ::fchmod(fd_, mode);  // best effort: mkstemp creates 0600
  buffer_.reserve(kBufferBytes);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)),
      temp_(std::exchange(other.temp_, {})),
      overwrite_(other.overwrite_),
      fd_(std::exchange(other.fd_, -1)),
      committed_(other.committed_),
      buffer_(std::move(other.buffer_)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    target_ = std::move(other.target_);
    temp_ = std::exchange(other.temp_, {});
    overwrite_ = other.overwrite_;
    fd_ = std::exchange(other.fd_, -1);
    committed_ = other.committed_;
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  buffer_.clear();
}

void AtomicFile::fail(const std::string& what, int error) {
  discard();
  throw Error(target_.string() + ": " + what + " (" + errno_text(error) + ")");
}

void AtomicFile::write_all(const std::byte* data, std::size_t size) {
  while (size > 0) {
    const ssize_t done = ::write(fd_, data, size);
    if (done < 0) {
      if (errno == EINTR) continue;
      fail("cannot write to the temporary file " + temp_.string(), errno);
    }
    data += done;
    size -= static_cast<std::size_t>(done);
  }
}

void AtomicFile::flush_buffer() {
  if (buffer_.empty()) return;
  write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) {
    throw Error(target_.string() +
                ": cannot write: the output was already committed or discarded after an error");
  }
  if (buffer_.size() + bytes.size() > kBufferBytes) flush_buffer();
  if (bytes.size() >= kBufferBytes) {
    write_all(bytes.data(), bytes.size());
  } else {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  }
}

void AtomicFile::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void AtomicFile::commit() {
  if (committed_) throw Error(target_.string() + ": already committed");
  if (fd_ < 0) {
    throw Error(target_.string() + ": cannot commit: the output was discarded after an error");
  }
  flush_buffer();
  if (::fsync(fd_) != 0) fail("cannot sync the temporary file " + temp_.string(), errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail("cannot close the temporary file " + temp_.string(), errno);

  if (overwrite_) {
    if (::rename(temp_.c_str(), target_.c_str()) != 0) {
      fail("cannot rename " + temp_.string() + " onto it", errno);
    }
  } else if (const int error = rename_no_replace(temp_.c_str(), target_.c_str()); error != 0) {
    if (error == EEXIST) {
      discard();
      throw Error(exists_message(target_));
    }
    fail("cannot rename " + temp_.string() + " onto it", error);
  }
  temp_.clear();
  committed_ = true;
  sync_directory(target_.parent_path());
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                           bool overwrite) {
  AtomicFile file(path, overwrite);
  file.write(contents);
  file.commit();
}

}  // namespace lucid::quantization::detail
