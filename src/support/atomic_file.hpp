// Internal: writing an output file atomically (temporary file in the same folder, fsync, rename).
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lucid::quantization::detail {

/// An output file written under a temporary name (".NAME.tmp-XXXXXX" in the target's
/// directory) and renamed onto the target by commit(), so readers only ever see the old file
/// or the complete new one. An existing target is replaced only when `overwrite` is true;
/// without it, commit() never replaces a file that appeared meanwhile either. On any error,
/// and on destruction without a successful commit(), the temporary file is removed.
/// New files get mode 0666 & ~umask; an overwritten file keeps its mode. Every Error message
/// starts with the target path. Not thread-safe; move-only.
///
///   AtomicFile out("report.json", /*overwrite=*/false);
///   out.write(text);
///   out.commit();
class AtomicFile {
 public:
  /// Creates the temporary file. Throws Error when the target exists and `overwrite` is
  /// false ("... already exists (expected a new path, or the overwrite option)"), when it is a
  /// directory, or when the temporary file cannot be created.
  AtomicFile(std::filesystem::path target, bool overwrite);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  /// Appends bytes (buffered). Throws Error on an I/O failure; the temporary file is removed
  /// and later calls throw too.
  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  /// Flushes, fsyncs and renames onto the target, then syncs the directory. Throws Error on
  /// failure (the temporary file is removed) or when called twice.
  void commit();
  /// Removes the temporary file now; the object can no longer be written. Never throws.
  void discard() noexcept;

  const std::filesystem::path& target() const { return target_; }
  /// The temporary file's path (empty once committed or discarded).
  const std::filesystem::path& temp_path() const { return temp_; }
  bool committed() const { return committed_; }

 private:
  void flush_buffer();
  void write_all(const std::byte* data, std::size_t size);
  [[noreturn]] void fail(const std::string& what, int error);

  std::filesystem::path target_;
  std::filesystem::path temp_;
  bool overwrite_ = false;
  int fd_ = -1;
  bool committed_ = false;
  std::vector<std::byte> buffer_;
};

/// Writes `contents` to `path` atomically with AtomicFile. Throws Error as AtomicFile does.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                           bool overwrite);

}  // namespace lucid::quantization::detail
