// safetensors files: validated memory-mapped reading and atomic, streaming writing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lucid/quantization/scalar_type.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// The largest JSON header the format allows, in bytes (as the reference implementation).
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

/// The safetensors dtype string of `type`: "F32", "F16", "BF16", "F64", "I8", "U8", "I16",
/// "U16", "I32", "U32", "I64", "U64" or "BOOL". Thread-safe.
std::string_view to_safetensors_name(ScalarType type);
/// The ScalarType a safetensors dtype string names, or nullopt for any other string
/// (including dtypes of the format this library does not support, e.g. "F8_E4M3").
std::optional<ScalarType> scalar_type_from_safetensors_name(std::string_view name);

/// One tensor as a safetensors header describes it.
struct SafetensorsEntry {
  std::string name;
  ScalarType type = ScalarType::float32;
  Shape shape;
  /// Byte offsets [begin, end) within the data section (which follows the header).
  std::uint64_t begin = 0;
  std::uint64_t end = 0;

  std::uint64_t nbytes() const { return end - begin; }
  friend bool operator==(const SafetensorsEntry&, const SafetensorsEntry&) = default;
};

/// A parsed and validated safetensors header.
struct SafetensorsHeader {
  /// Tensors in data order: sorted by (begin, end, name); they tile the data section exactly.
  std::vector<SafetensorsEntry> entries;
  /// The "__metadata__" map (empty when absent).
  std::map<std::string, std::string> metadata;
  /// Byte offset of the data section in the file: 8 + the header length.
  std::uint64_t data_offset = 0;
  /// Bytes in the data section: the file size - data_offset.
  std::uint64_t data_size = 0;
};

/// Parses and validates the header of the complete safetensors file `file_bytes` by the
/// format's rules: an 8-byte little-endian header length, a JSON header of at most 100 MB
/// that is valid UTF-8 and a JSON object without duplicate keys, known dtypes, shapes of
/// non-negative integers whose product (and byte size) does not overflow, data_offsets
/// [begin, end] whose length equals element count x dtype size, and tensors that tile the
/// data section from 0 to the end of the file with no hole or overlap (they may be listed
/// in any order). Unknown keys inside a tensor entry are ignored, as the reference
/// implementation does. Does not look at the tensor data.
/// Throws Error whose message starts with `display_name` and names the tensor involved,
/// e.g. `model.safetensors: tensor "w": data_offsets [0, 12] hold 12 bytes but F32 [2, 2]
/// needs 16`. Thread-safe (no shared state).
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file_bytes,
                                           std::string_view display_name);

/// A safetensors file opened read-only and memory-mapped; the mapping lives as long as the
/// object (it is unmapped on destruction). Views point into the mapping: no copies.
///
/// Alignment: a view's data is only as aligned as the file makes it. Files whose header
/// length is a multiple of 8 (as this library and the reference writer produce) keep every
/// element naturally aligned, but other writers may not, so consumers must read elements
/// with memcpy or other unaligned-safe access (or take an owning copy, Tensor::copy_of).
///
/// The file must not be truncated or modified while it is mapped (the OS would raise
/// SIGBUS or show the new bytes). Move-only. All const members are thread-safe.
///
///   auto file = SafetensorsFile::open("model.safetensors");
///   for (const auto& entry : file.entries()) use(entry.name, file.view(entry));
class SafetensorsFile {
 public:
  /// Opens, maps and validates `path` (see parse_safetensors_header). Throws Error naming
  /// the path when it cannot be opened or mapped, is not a regular file, or is invalid.
  static SafetensorsFile open(const std::filesystem::path& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  /// The tensors in data order (sorted by begin offset).
  const std::vector<SafetensorsEntry>& entries() const { return header_.entries; }
  /// The "__metadata__" map (empty when the file has none).
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  /// The whole parsed header (entries, metadata, data section position and size).
  const SafetensorsHeader& header() const { return header_; }
  /// The entry named `name`, or nullptr.
  const SafetensorsEntry* find(std::string_view name) const;
  /// A view of `entry` (which must come from this file's entries()), pointing into the
  /// mapping; valid while this object lives. May be unaligned (see the class comment).
  TensorView view(const SafetensorsEntry& entry) const;
  /// A view of the tensor named `name`. Throws Error naming the file and tensor when absent.
  TensorView view(std::string_view name) const;
  /// The raw bytes of `entry` inside the mapping.
  std::span<const std::byte> bytes(const SafetensorsEntry& entry) const;
  /// Tells the OS this process is done with `entry`'s bytes for now: the memory pages that
  /// hold them leave the process's resident set (madvise MADV_DONTNEED; the OS page cache
  /// may keep them). Views stay valid: reading them again loads the same bytes back. Lets a
  /// pass over a large file keep its memory near one tensor's size. Pages shared with the
  /// neighbouring tensors are released too. Best effort: never throws.
  void release_pages(const SafetensorsEntry& entry) const noexcept;
  /// Throws Error ("PATH: the file shrank while it was being read (...)") when the file was
  /// truncated, or its storage failed, while it was mapped: a read of the mapping then gets
  /// zeros instead of killing the process with SIGBUS, and this call reports it. The jobs of
  /// this library call it after each tensor and before they commit an output; call it too
  /// after reading views of a file that another program may change.
  void check_intact() const;
  /// The path given to open().
  const std::filesystem::path& path() const { return path_; }

 private:
  SafetensorsFile() = default;
  void release() noexcept;

  std::filesystem::path path_;
  SafetensorsHeader header_;
  std::map<std::string, std::size_t, std::less<>> index_;
  const std::byte* map_ = nullptr;  // nullptr when nothing is mapped (an empty file)
  std::size_t map_size_ = 0;
  int guard_ = -1;  // the mapping's bus-error guard (-1: none)
};

/// The name, element type and shape of one tensor to write.
struct SafetensorsTensorSpec {
  std::string name;
  ScalarType type = ScalarType::float32;
  Shape shape;
};

/// Writes a safetensors file in a streaming way: the constructor takes every tensor's name,
/// type and shape and writes the header; then each tensor's bytes follow, in the order
/// given (whole with write(), or in pieces with append()); commit() puts the file in place.
/// The output is written to a temporary file in the same directory and renamed on commit,
/// so a failure never leaves a partial output: destroying the writer without commit()
/// removes the temporary file, and so does any Error a member throws, which also abandons
/// the output (later calls throw). An existing file is replaced only with `overwrite`.
/// The header is padded with spaces so the data starts at an 8-byte aligned offset.
/// Not thread-safe; move-only.
///
///   SafetensorsWriter out("q.safetensors", {{"w", ScalarType::int8, {64, 32}}});
///   out.write("w", codes);  // a TensorView, or raw bytes
///   out.commit();
class SafetensorsWriter {
 public:
  /// Validates the specs (unique UTF-8 names other than "__metadata__", known types,
  /// non-negative dimensions, sizes that do not overflow, a header within 100 MB) and
  /// writes the header. Throws Error naming the path (and tensor) on bad input, when `path`
  /// exists and `overwrite` is false, or when the temporary file cannot be written.
  SafetensorsWriter(const std::filesystem::path& path, std::vector<SafetensorsTensorSpec> tensors,
                    const std::map<std::string, std::string>& metadata = {},
                    bool overwrite = false);
  SafetensorsWriter(SafetensorsWriter&& other) noexcept;
  SafetensorsWriter& operator=(SafetensorsWriter&& other) noexcept;
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~SafetensorsWriter();

  /// Writes all bytes of the next tensor, which must be named `name` and not yet started;
  /// (tensors of zero bytes may be skipped); `bytes` must hold exactly its size. Throws
  /// Error naming the file and tensor otherwise, e.g. when written out of order.
  void write(std::string_view name, std::span<const std::byte> bytes);
  /// As write(name, bytes) for a view, whose type and shape must also match the spec
  /// (its data may be unaligned).
  void write(std::string_view name, const TensorView& view);
  /// Appends `bytes` to the tensor being written, moving on to the next tensor once one is
  /// complete; throws Error when `bytes` would run past the last tensor. For tensors too
  /// large to hold in memory at once.
  void append(std::span<const std::byte> bytes);
  /// The name of the tensor whose bytes come next, or nullopt when all are written.
  std::optional<std::string_view> next_tensor() const;
  /// Flushes, fsyncs and renames the file into place (never over a file that appeared
  /// meanwhile unless `overwrite`). Throws Error when a tensor is missing or incomplete,
  /// when the target exists, or on an I/O failure.
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes `tensors` (data in the given order) and optional `metadata` to `path` atomically
/// with SafetensorsWriter. Throws Error as SafetensorsWriter does, and when a view has no
/// data but a non-zero size. Thread-safe for distinct paths.
void write_safetensors(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, TensorView>>& tensors,
                       const std::map<std::string, std::string>& metadata = {},
                       bool overwrite = false);

}  // namespace lucid::quantization
