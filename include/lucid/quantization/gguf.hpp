// GGUF v3 files (llama.cpp's format): metadata values, validated memory-mapped reading and
// atomic writing that reproduces ggml's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lucid/quantization/ggml_type.hpp"
#include "lucid/quantization/tensor.hpp"

namespace lucid::quantization {

/// The only GGUF version read and written (ggml's GGUF_VERSION).
inline constexpr std::uint32_t kGgufVersion = 3;
/// The data alignment when a file has no "general.alignment" key.
inline constexpr std::uint32_t kGgufDefaultAlignment = 32;
/// The longest tensor name ggml accepts, in bytes (GGML_MAX_NAME - 1).
inline constexpr std::size_t kGgufMaxTensorName = 63;
/// The most dimensions a tensor may have (GGML_MAX_DIMS).
inline constexpr std::size_t kGgufMaxDims = 4;

/// The type of a metadata value, with GGUF's numeric ids.
enum class GgufValueType : std::uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};

/// ggml's short name of a value type: "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
/// "str", "arr", "u64", "i64", "f64".
std::string_view to_string(GgufValueType type);
/// The value type a short name (as to_string prints it) names, or nullopt.
std::optional<GgufValueType> gguf_value_type_from_name(std::string_view name);

/// One scalar metadata value; the alternative held is its GGUF type.
using GgufScalar =
    std::variant<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t,
                 std::int32_t, float, bool, std::string, std::uint64_t, std::int64_t, double>;
/// The GGUF type of the alternative `scalar` holds (never GgufValueType::array).
GgufValueType gguf_type_of(const GgufScalar& scalar);

/// A metadata value: a scalar, or an array of scalars of one type (GGUF arrays of arrays
/// exist in the spec but ggml refuses them, and so does this library).
class GgufValue {
 public:
  /// A scalar value.
  GgufValue(GgufScalar scalar);  // NOLINT(google-explicit-constructor): values read naturally
  /// A scalar from one of GgufScalar's types: GgufValue(std::uint32_t{32}), GgufValue(true).
  template <class T, class = std::enable_if_t<std::is_constructible_v<GgufScalar, T&&> &&
                                              !std::is_same_v<std::decay_t<T>, GgufScalar> &&
                                              !std::is_same_v<std::decay_t<T>, GgufValue>>>
  GgufValue(T&& value)  // NOLINT(google-explicit-constructor)
      : GgufValue(GgufScalar(std::forward<T>(value))) {}
  /// An array of `element_type` values. Throws Error when element_type is array or an item
  /// holds another type.
  static GgufValue array(GgufValueType element_type, std::vector<GgufScalar> items);

  bool is_array() const { return is_array_; }
  /// GgufValueType::array for arrays, else the scalar's type.
  GgufValueType type() const { return is_array_ ? GgufValueType::array : element_type_; }
  /// The type of the array's elements, or of the scalar.
  GgufValueType element_type() const { return element_type_; }
  /// The scalar. Throws Error for an array.
  const GgufScalar& scalar() const;
  /// The array's elements. Throws Error for a scalar.
  const std::vector<GgufScalar>& items() const;
  /// The scalar as T when it holds a T, else nullptr (also for arrays).
  template <class T>
  const T* get() const {
    return is_array_ ? nullptr : std::get_if<T>(&items_.front());
  }
  /// An unsigned or non-negative signed integer scalar as uint64, else nullopt.
  std::optional<std::uint64_t> as_count() const;

  friend bool operator==(const GgufValue&, const GgufValue&) = default;

 private:
  GgufValue() = default;
  GgufValueType element_type_ = GgufValueType::uint8;
  bool is_array_ = false;
  std::vector<GgufScalar> items_;  // a scalar is one item
};

/// The value as text for listings: `42`, `3.1415927`, `true`, `"text"` (JSON-escaped),
/// `[1, -2, 3]`; arrays longer than `max_items` show their first items, then
/// `... (N items)`.
std::string format_gguf_value(const GgufValue& value, std::size_t max_items = 8);

/// Metadata in file order. Keys are unique and non-empty.
class GgufMetadata {
 public:
  using Entry = std::pair<std::string, GgufValue>;

  const std::vector<Entry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  /// The value of `key`, or nullptr.
  const GgufValue* find(std::string_view key) const;
  /// Sets `key` as ggml's gguf_set_* do: an existing entry is removed and the new one
  /// appended at the end. Throws Error for an empty key.
  void set(std::string key, GgufValue value);
  /// Appends a new entry (the reader's order). Throws Error for an empty or duplicate key.
  void append(std::string key, GgufValue value);
  /// Removes `key`; false when absent.
  bool erase(std::string_view key);
  /// The string value of `key`, or nullopt when absent or not a string.
  std::optional<std::string> get_string(std::string_view key) const;
  /// The integer value of `key` (see GgufValue::as_count), or nullopt.
  std::optional<std::uint64_t> get_count(std::string_view key) const;

  friend bool operator==(const GgufMetadata&, const GgufMetadata&) = default;

 private:
  std::vector<Entry> entries_;
};

/// One tensor as a GGUF tensor-info record describes it.
struct GgufTensorInfo {
  std::string name;
  /// Dimensions as stored: innermost first (ne[0] is the row length; 1 to 4 of them).
  std::vector<std::int64_t> ne;
  GgmlType type = GgmlType::F32;
  /// Byte offset within the data section (a multiple of the alignment).
  std::uint64_t offset = 0;
  /// Bytes of the tensor's data (without padding).
  std::uint64_t nbytes = 0;

  std::int64_t numel() const;
  std::int64_t row_length() const { return ne.empty() ? 1 : ne.front(); }
  /// numel() / row_length() (0 for an empty tensor).
  std::int64_t rows() const;
  /// The shape in PyTorch order (outermost first): ne reversed.
  Shape shape() const;
  friend bool operator==(const GgufTensorInfo&, const GgufTensorInfo&) = default;
};

/// A parsed and validated GGUF header.
struct GgufHeader {
  std::uint32_t version = kGgufVersion;
  GgufMetadata metadata;
  /// The tensors in file order; their data is back to back in this order.
  std::vector<GgufTensorInfo> tensors;
  /// "general.alignment", or 32.
  std::uint64_t alignment = kGgufDefaultAlignment;
  /// Byte offset of the data section in the file.
  std::uint64_t data_offset = 0;
  /// Bytes of the data section: every tensor padded to the alignment.
  std::uint64_t data_size = 0;
};

/// Parses and validates the GGUF file `file_bytes` at least as strictly as ggml's
/// gguf_init_from_file with data loading: magic "GGUF", version 3 (1 and 2 are refused,
/// as is a byte-swapped version), counts that fit the bytes present, non-empty unique keys,
/// value types 0-12 and no arrays of arrays, bools 0 or 1, strings and arrays inside the
/// file, "general.alignment" a u32 power of two (at most 1 MiB), unique tensor names of
/// 1-63 bytes, 1-4 non-negative dimensions whose product and byte size do not overflow,
/// known ggml types (not removed ids) with a row length that is a multiple of the block
/// size, offsets exactly back to back in file order (each tensor padded to the alignment),
/// and a file that holds the whole padded data section. Throws Error whose message starts
/// with `display_name` and names the key or tensor, e.g. `m.gguf: tensor "blk.0.attn_q.weight":
/// offset 224 (expected 256: ...)`. Does not read tensor data. Thread-safe.
GgufHeader parse_gguf_header(std::span<const std::byte> file_bytes, std::string_view display_name);

/// A GGUF file opened read-only, memory-mapped and validated (parse_gguf_header). Views and
/// byte spans point into the mapping and live as long as the object. Tensor data is only as
/// aligned as the file's alignment makes it. The file must not change while mapped.
/// Move-only; const members are thread-safe.
///
///   auto file = GgufFile::open("model.gguf");
///   for (const auto& t : file.tensors()) use(t.name, t.type, file.bytes(t));
class GgufFile {
 public:
  /// Throws Error naming the path when it cannot be opened or mapped, or is invalid.
  static GgufFile open(const std::filesystem::path& path);

  GgufFile(GgufFile&& other) noexcept;
  GgufFile& operator=(GgufFile&& other) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const GgufHeader& header() const { return header_; }
  const GgufMetadata& metadata() const { return header_.metadata; }
  const std::vector<GgufTensorInfo>& tensors() const { return header_.tensors; }
  /// The tensor named `name`, or nullptr.
  const GgufTensorInfo* find(std::string_view name) const;
  /// The tensor's bytes inside the mapping (`info` must be one of tensors()).
  std::span<const std::byte> bytes(const GgufTensorInfo& info) const;
  /// A view of an F32, F16, BF16, F64, I8, I16, I32 or I64 tensor with its PyTorch shape.
  /// Throws Error naming the file and tensor for a block-quantized type.
  TensorView view(const GgufTensorInfo& info) const;
  /// Drops the tensor's pages from the resident set (they reload on access). Never throws.
  void release_pages(const GgufTensorInfo& info) const noexcept;
  /// Throws Error ("PATH: the file shrank while it was being read (...)") when the file was
  /// truncated, or its storage failed, while it was mapped: a read of the mapping then gets
  /// zeros instead of killing the process with SIGBUS, and this call reports it. The jobs of
  /// this library call it after each tensor and before they commit an output; call it too
  /// after reading views of a file that another program may change.
  void check_intact() const;
  const std::filesystem::path& path() const { return path_; }
  /// Bytes of the whole file.
  std::uint64_t file_size() const { return map_size_; }

 private:
  GgufFile() = default;
  void release() noexcept;

  std::filesystem::path path_;
  GgufHeader header_;
  const std::byte* map_ = nullptr;
  std::size_t map_size_ = 0;
  int guard_ = -1;  // the mapping's bus-error guard (-1: none)
};

/// True when `path` names a GGUF file: it starts with the GGUF magic, or (so that a damaged
/// file gets GGUF's error messages) its extension is ".gguf" in any case.
bool is_gguf_path(const std::filesystem::path& path);

/// The name, stored dimensions (innermost first) and type of a tensor to write.
struct GgufTensorSpec {
  std::string name;
  std::vector<std::int64_t> ne;
  GgmlType type = GgmlType::F32;
};

/// The ne (innermost first) of a tensor of PyTorch `shape`, with trailing 1s dropped as
/// ggml's writer does (at least one dimension). Throws Error for more than 4 dimensions.
std::vector<std::int64_t> gguf_dims_of(const Shape& shape);

/// Writes a GGUF v3 file as ggml's gguf_write_to_file does, byte for byte: magic, version,
/// the counts as int64, the metadata in order, the tensor infos with contiguous offsets,
/// zero padding to the alignment, then each tensor's bytes padded with zeros to the
/// alignment (the last one too). The alignment is "general.alignment" when the metadata has
/// it (which must be a u32 power of two) else 32, so the file is always consistent with
/// what it declares. The output is written under a temporary name and renamed by commit();
/// an error or destruction without commit() leaves no output. Not thread-safe; move-only.
///
///   GgufWriter out("m.gguf", metadata, {{"w", {256, 4}, GgmlType::Q8_0}});
///   out.write("w", q8_bytes);
///   out.commit();
class GgufWriter {
 public:
  /// Validates the metadata and specs (as parse_gguf_header would) and writes the header.
  /// Throws Error naming the path (and key or tensor) on bad input, when `path` exists and
  /// `overwrite` is false, or on an I/O failure.
  GgufWriter(const std::filesystem::path& path, const GgufMetadata& metadata,
             std::vector<GgufTensorSpec> tensors, bool overwrite = false);
  GgufWriter(GgufWriter&& other) noexcept;
  GgufWriter& operator=(GgufWriter&& other) noexcept;
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;
  ~GgufWriter();

  /// Writes all bytes of the next tensor, which must be named `name`; `bytes` must hold its
  /// exact size. Throws Error naming the file and tensor otherwise.
  void write(std::string_view name, std::span<const std::byte> bytes);
  /// The name of the tensor whose bytes come next, or nullopt when all are written.
  std::optional<std::string_view> next_tensor() const;
  /// Renames the file into place. Throws Error when a tensor is missing or on I/O failure.
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The bytes ggml writes before the data section for `metadata` and `tensors` (offsets
/// assigned contiguously), padded to the alignment. Throws Error (naming `display_name`) on
/// input GgufWriter refuses.
std::vector<std::byte> encode_gguf_header(const GgufMetadata& metadata,
                                          const std::vector<GgufTensorSpec>& tensors,
                                          std::string_view display_name);

}  // namespace lucid::quantization
