// Reading GGUF: header parsing and validation (ggml's rules and more), memory-mapped files.
#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "io/gguf_format.hpp"
#include "io/mapped_file.hpp"
#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf.hpp"

static_assert(std::endian::native == std::endian::little, "GGUF reading assumes little-endian");

namespace lucid::quantization {
namespace {

constexpr std::uint64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kMaxStringBytes = std::uint64_t{1} << 30;  // ggml's historic limit

std::string u64(std::uint64_t value) {
  return std::to_string(value);
}

// Reads little-endian fields from the file bytes; every read is bounds-checked and an error
// names the file, what was being read and where.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, std::string_view file) : bytes_(bytes), file_(file) {}

  std::uint64_t position() const { return position_; }
  std::uint64_t remaining() const { return bytes_.size() - position_; }

  [[noreturn]] void fail(const std::string& context, const std::string& message) const {
    throw Error(std::string(file_) + ": " + (context.empty() ? "" : context + ": ") + message);
  }

  template <class T>
  T read(const std::string& context, std::string_view what) {
    if (remaining() < sizeof(T)) {
      fail(context, "file ends at byte " + u64(bytes_.size()) + " inside the " + std::string(what) +
                        " (expected " + u64(sizeof(T)) + " more bytes: the file is truncated)");
    }
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }

  std::string read_string(const std::string& context, std::string_view what) {
    const auto length = read<std::uint64_t>(context, std::string(what) + " length");
    if (length > kMaxStringBytes) {
      fail(context, std::string(what) + " length " + u64(length) +
                        " exceeds the limit of 1 GiB (expected a length within the file)");
    }
    if (length > remaining()) {
      fail(context, std::string(what) + " length " + u64(length) + " at byte " +
                        u64(position_ - 8) + " runs past the end of the file (" + u64(remaining()) +
                        " bytes left)");
    }
    std::string text(reinterpret_cast<const char*>(bytes_.data() + position_), length);
    position_ += length;
    return text;
  }

 private:
  std::span<const std::byte> bytes_;
  std::string_view file_;
  std::uint64_t position_ = 0;
};

std::string key_context(std::string_view key) {
  return "key " + detail::quoted(key);
}

GgufScalar read_scalar(Cursor& in, GgufValueType type, const std::string& context) {
  switch (type) {
    case GgufValueType::uint8:
      return in.read<std::uint8_t>(context, "u8 value");
    case GgufValueType::int8:
      return in.read<std::int8_t>(context, "i8 value");
    case GgufValueType::uint16:
      return in.read<std::uint16_t>(context, "u16 value");
    case GgufValueType::int16:
      return in.read<std::int16_t>(context, "i16 value");
    case GgufValueType::uint32:
      return in.read<std::uint32_t>(context, "u32 value");
    case GgufValueType::int32:
      return in.read<std::int32_t>(context, "i32 value");
    case GgufValueType::float32:
      return in.read<float>(context, "f32 value");
    case GgufValueType::uint64:
      return in.read<std::uint64_t>(context, "u64 value");
    case GgufValueType::int64:
      return in.read<std::int64_t>(context, "i64 value");
    case GgufValueType::float64:
      return in.read<double>(context, "f64 value");
    case GgufValueType::string:
      return in.read_string(context, "string");
    case GgufValueType::boolean: {
      const auto byte = in.read<std::uint8_t>(context, "bool value");
      if (byte > 1) {
        in.fail(context, "bool byte " + std::to_string(byte) + " at byte " +
                             u64(in.position() - 1) + " (expected 0 or 1)");
      }
      return byte == 1;
    }
    case GgufValueType::array:
      break;
  }
  in.fail(context, "value type array inside an array (expected a scalar type)");
}

// Bytes each element of `type` takes at least (strings: their 8-byte length).
std::uint64_t min_element_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::uint16:
    case GgufValueType::int16:
      return 2;
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::float32:
      return 4;
    default:
      return 8;
  }
}

GgufValueType read_value_type(Cursor& in, const std::string& context, std::string_view what) {
  const auto id = in.read<std::uint32_t>(context, what);
  if (id > 12) {
    in.fail(context, std::string(what) + " " + u64(id) + " at byte " + u64(in.position() - 4) +
                         " is unknown (expected 0-12: u8, i8, u16, i16, u32, i32, f32, bool, "
                         "str, arr, u64, i64, f64)");
  }
  return static_cast<GgufValueType>(id);
}

GgufValue read_value(Cursor& in, const std::string& context) {
  const GgufValueType type = read_value_type(in, context, "value type");
  if (type != GgufValueType::array) return read_scalar(in, type, context);
  const GgufValueType element = read_value_type(in, context, "array element type");
  if (element == GgufValueType::array) {
    in.fail(context,
            "array of arrays (nested arrays are refused, as ggml does; expected an "
            "array of a scalar type)");
  }
  const auto count = in.read<std::uint64_t>(context, "array length");
  if (count > in.remaining() / min_element_bytes(element)) {
    in.fail(context, "array of " + u64(count) + " " + std::string(to_string(element)) +
                         " items needs more than the " + u64(in.remaining()) +
                         " bytes left in the file");
  }
  std::vector<GgufScalar> items;
  items.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    items.push_back(read_scalar(in, element, context + ": item " + u64(i)));
  }
  return GgufValue::array(element, std::move(items));
}

std::string dims_text(std::span<const std::int64_t> ne) {
  std::string out = "[";
  for (std::size_t i = 0; i < ne.size(); ++i)
    out += (i == 0 ? "" : ", ") + std::to_string(ne[i]);
  return out + "]";
}

}  // namespace

namespace detail {

std::uint64_t gguf_align(std::uint64_t offset, std::uint64_t alignment) {
  const std::uint64_t rest = offset % alignment;
  if (rest == 0) return offset;
  const std::uint64_t pad = alignment - rest;
  return offset > std::numeric_limits<std::uint64_t>::max() - pad
             ? std::numeric_limits<std::uint64_t>::max()
             : offset + pad;
}

// "0xFF" for messages.
std::string hex_byte(char byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02X",
                static_cast<unsigned>(static_cast<unsigned char>(byte)));
  return text;
}

std::pair<GgmlType, std::uint64_t> check_gguf_tensor(std::string_view name,
                                                     std::span<const std::int64_t> ne,
                                                     std::uint32_t type_id) {
  const std::string tensor = "tensor " + quoted(name);
  if (name.empty()) throw Error(tensor + ": empty name (expected 1-63 bytes)");
  if (name.size() > kGgufMaxTensorName) {
    throw Error(tensor + ": name of " + std::to_string(name.size()) +
                " bytes is too long (expected at most 63, ggml's GGML_MAX_NAME - 1)");
  }
  if (const std::size_t bad = find_invalid_utf8(name); bad != std::string_view::npos) {
    throw Error(tensor + ": name is not valid UTF-8 (byte " + hex_byte(name[bad]) + " at offset " +
                std::to_string(bad) + "; expected UTF-8, as GGUF strings are)");
  }
  if (ne.empty() || ne.size() > kGgufMaxDims) {
    throw Error(tensor + ": " + std::to_string(ne.size()) +
                " dimensions (expected 1 to 4, ggml's GGML_MAX_DIMS)");
  }
  std::uint64_t count = 1;
  for (std::size_t i = 0; i < ne.size(); ++i) {
    if (ne[i] < 0) {
      throw Error(tensor + ": dimension " + std::to_string(i) + " is " + std::to_string(ne[i]) +
                  " (expected >= 0)");
    }
    const auto d = static_cast<std::uint64_t>(ne[i]);
    if (d != 0 && count > kInt64Max / d) {
      throw Error(tensor + ": dimensions " + dims_text(ne) +
                  " hold more than 2^63 - 1 elements (expected a representable count)");
    }
    count *= d;
  }
  const auto traits = ggml_type_traits(type_id);
  if (!traits || traits->block_size == 0) {
    throw Error(tensor + ": ggml type id " + std::to_string(type_id) +
                " is unknown or removed (expected an id of ggml_type_traits, e.g. 0 F32, 1 F16, "
                "8 Q8_0, 12 Q4_K)");
  }
  if (ne[0] % traits->block_size != 0) {
    throw Error(tensor + ": row length " + std::to_string(ne[0]) + " is not a multiple of " +
                std::string(traits->name) + "'s block size " + std::to_string(traits->block_size));
  }
  const std::uint64_t blocks = count / static_cast<std::uint64_t>(traits->block_size);
  if (blocks > kInt64Max / static_cast<std::uint64_t>(traits->type_size)) {
    throw Error(tensor + ": dimensions " + dims_text(ne) + " of " + std::string(traits->name) +
                " need more than 2^63 - 1 bytes");
  }
  return {traits->type, blocks * static_cast<std::uint64_t>(traits->type_size)};
}

std::uint64_t gguf_alignment(const GgufMetadata& metadata) {
  const GgufValue* value = metadata.find("general.alignment");
  if (value == nullptr) return kGgufDefaultAlignment;
  const std::uint32_t* alignment = value->get<std::uint32_t>();
  if (alignment == nullptr) {
    throw Error("key \"general.alignment\": is a " +
                std::string(value->is_array() ? "array" : to_string(value->type())) +
                " (expected u32)");
  }
  if (*alignment == 0 || !std::has_single_bit(*alignment) || *alignment > kGgufMaxAlignment) {
    throw Error("key \"general.alignment\": " + std::to_string(*alignment) +
                " (expected a power of two from 1 to 1048576)");
  }
  return *alignment;
}

}  // namespace detail

GgufHeader parse_gguf_header(std::span<const std::byte> file_bytes, std::string_view display_name) {
  Cursor in(file_bytes, display_name);
  GgufHeader header;
  if (file_bytes.size() < 4 || std::memcmp(file_bytes.data(), "GGUF", 4) != 0) {
    std::string seen;
    for (std::size_t i = 0; i < 4 && i < file_bytes.size(); ++i) {
      const auto c = static_cast<unsigned char>(file_bytes[i]);
      seen += (c >= 0x20 && c < 0x7F) ? static_cast<char>(c) : '?';
    }
    in.fail("", "magic \"" + seen + "\" (expected \"GGUF\": not a GGUF file" +
                    (file_bytes.size() < 4 ? ", or truncated" : "") + ")");
  }
  in.read<std::uint32_t>("", "magic");
  header.version = in.read<std::uint32_t>("", "version");
  if (header.version != kGgufVersion) {
    const bool swapped = (header.version & 0xFFFFu) == 0 && header.version != 0;
    in.fail("",
            "GGUF version " + u64(header.version) + " (expected 3" +
                (swapped              ? "; this looks byte-swapped: a big-endian file?"
                 : header.version < 3 ? "; versions 1 and 2 are outdated: convert the model again"
                                      : "") +
                ")");
  }
  const auto tensor_count = in.read<std::int64_t>("", "tensor count");
  const auto kv_count = in.read<std::int64_t>("", "metadata count");
  // A KV pair takes at least 13 bytes (key length, type, one byte); a tensor info 32.
  if (tensor_count < 0 || static_cast<std::uint64_t>(tensor_count) > in.remaining() / 32) {
    in.fail("", "tensor count " + std::to_string(tensor_count) +
                    " does not fit in the file (expected 0 to " + u64(in.remaining() / 32) +
                    " for its " + u64(in.remaining()) + " bytes after the header)");
  }
  if (kv_count < 0 || static_cast<std::uint64_t>(kv_count) > in.remaining() / 13) {
    in.fail("", "metadata count " + std::to_string(kv_count) +
                    " does not fit in the file (expected 0 to " + u64(in.remaining() / 13) +
                    " for its " + u64(in.remaining()) + " bytes after the header)");
  }

  std::set<std::string, std::less<>> keys;
  for (std::int64_t i = 0; i < kv_count; ++i) {
    const std::string where = "metadata entry " + std::to_string(i);
    std::string key = in.read_string(where, "key");
    if (key.empty()) in.fail(where, "empty key (expected a non-empty key)");
    const std::string context = key_context(key);
    if (!keys.insert(key).second) in.fail(context, "appears twice (expected unique keys)");
    GgufValue value = read_value(in, context);
    header.metadata.append(std::move(key), std::move(value));
  }
  try {
    header.alignment = detail::gguf_alignment(header.metadata);
  } catch (const Error& e) {
    in.fail("", e.what());
  }

  std::set<std::string, std::less<>> names;
  header.tensors.reserve(static_cast<std::size_t>(tensor_count));
  for (std::int64_t i = 0; i < tensor_count; ++i) {
    const std::string where = "tensor info " + std::to_string(i);
    GgufTensorInfo info;
    info.name = in.read_string(where, "name");
    const std::string context = "tensor " + detail::quoted(info.name);
    if (!names.insert(info.name).second) in.fail(context, "appears twice (expected unique names)");
    const auto n_dims = in.read<std::uint32_t>(context, "dimension count");
    if (n_dims == 0 || n_dims > kGgufMaxDims) {
      in.fail(context, u64(n_dims) + " dimensions (expected 1 to 4, ggml's GGML_MAX_DIMS)");
    }
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      info.ne.push_back(in.read<std::int64_t>(context, "dimensions"));
    }
    const auto type_id = in.read<std::uint32_t>(context, "type");
    info.offset = in.read<std::uint64_t>(context, "offset");
    try {
      std::tie(info.type, info.nbytes) = detail::check_gguf_tensor(info.name, info.ne, type_id);
    } catch (const Error& e) {
      in.fail("", e.what());
    }
    header.tensors.push_back(std::move(info));
  }

  header.data_offset =
      tensor_count > 0 ? detail::gguf_align(in.position(), header.alignment) : in.position();
  std::uint64_t expected = 0;
  for (const GgufTensorInfo& info : header.tensors) {
    const std::string context = "tensor " + detail::quoted(info.name);
    if (info.offset != expected) {
      const std::string why = info.offset % header.alignment != 0
                                  ? "it is not a multiple of the alignment " + u64(header.alignment)
                              : info.offset < expected ? "it overlaps the tensor before"
                                                       : "there is a gap after the tensor before";
      in.fail(context, "offset " + u64(info.offset) + " (expected " + u64(expected) + ": " + why +
                           "; tensor data must follow back to back in file order, each padded "
                           "to the alignment " +
                           u64(header.alignment) + ")");
    }
    const std::uint64_t padded = detail::gguf_align(info.nbytes, header.alignment);
    if (padded > kInt64Max - expected) {
      in.fail(context, "data ends past 2^63 bytes (expected a file that fits)");
    }
    expected += padded;
  }
  header.data_size = expected;
  if (header.data_offset > file_bytes.size() ||
      header.data_size > file_bytes.size() - header.data_offset) {
    in.fail("", "file is " + u64(file_bytes.size()) + " bytes but its " +
                    u64(header.tensors.size()) + " tensors need " + u64(header.data_offset) +
                    " + " + u64(header.data_size) + " (header, then the data padded to " +
                    u64(header.alignment) + "): the file is truncated");
  }
  return header;
}

bool is_gguf_path(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  for (char& c : extension)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (extension == ".gguf") return true;
  try {
    return detail::read_file_head(path, 4, "a GGUF file") == "GGUF";
  } catch (const Error&) {
    return false;  // not a readable regular file: the reader that opens it says why
  }
}

// --- GgufFile ------------------------------------------------------------------------------

GgufFile GgufFile::open(const std::filesystem::path& path) {
  detail::MappedRegion region = detail::map_file(path, "a GGUF file");
  GgufFile file;
  file.path_ = path;
  file.map_ = region.data;
  file.map_size_ = region.size;
  file.guard_ = region.guard;
  try {
    file.header_ = parse_gguf_header({file.map_, file.map_size_}, path.string());
  } catch (const Error&) {
    file.check_intact();  // a header read as zeros is the shrinking file's fault
    throw;
  }
  file.check_intact();
  return file;
}

GgufFile::GgufFile(GgufFile&& other) noexcept
    : path_(std::move(other.path_)),
      header_(std::move(other.header_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      guard_(std::exchange(other.guard_, -1)) {}

GgufFile& GgufFile::operator=(GgufFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    header_ = std::move(other.header_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    guard_ = std::exchange(other.guard_, -1);
  }
  return *this;
}

GgufFile::~GgufFile() {
  release();
}

void GgufFile::release() noexcept {
  detail::MappedRegion region{map_, map_size_, guard_};
  detail::unmap_file(region);
  map_ = nullptr;
  map_size_ = 0;
  guard_ = -1;
}

void GgufFile::check_intact() const {
  detail::check_mapping({map_, map_size_, guard_}, path_);
}

const GgufTensorInfo* GgufFile::find(std::string_view name) const {
  for (const GgufTensorInfo& info : header_.tensors) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::span<const std::byte> GgufFile::bytes(const GgufTensorInfo& info) const {
  if (info.offset > header_.data_size || info.nbytes > header_.data_size - info.offset) {
    throw Error(path_.string() + ": tensor " + detail::quoted(info.name) + ": bytes [" +
                u64(info.offset) + ", +" + u64(info.nbytes) +
                ") are outside this file's data section (expected a tensor of this file)");
  }
  if (info.nbytes == 0) return {};
  return {map_ + header_.data_offset + info.offset, static_cast<std::size_t>(info.nbytes)};
}

TensorView GgufFile::view(const GgufTensorInfo& info) const {
  std::optional<ScalarType> type;
  switch (info.type) {
    case GgmlType::F32:
      type = ScalarType::float32;
      break;
    case GgmlType::F16:
      type = ScalarType::float16;
      break;
    case GgmlType::BF16:
      type = ScalarType::bfloat16;
      break;
    case GgmlType::F64:
      type = ScalarType::float64;
      break;
    case GgmlType::I8:
      type = ScalarType::int8;
      break;
    case GgmlType::I16:
      type = ScalarType::int16;
      break;
    case GgmlType::I32:
      type = ScalarType::int32;
      break;
    case GgmlType::I64:
      type = ScalarType::int64;
      break;
    default:
      break;
  }
  if (!type) {
    throw Error(path_.string() + ": tensor " + detail::quoted(info.name) + ": type " +
                std::string(ggml_type_traits(info.type).name) +
                " is block-quantized (expected a plain element type; dequantize it first)");
  }
  return TensorView(bytes(info).data(), *type, info.shape());
}

void GgufFile::release_pages(const GgufTensorInfo& info) const noexcept {
  detail::release_file_pages({map_, map_size_}, header_.data_offset + info.offset,
                             header_.data_offset + info.offset + info.nbytes);
}

}  // namespace lucid::quantization
