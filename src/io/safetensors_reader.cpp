// Reading safetensors: header parsing and validation, and read-only memory-mapped files.
#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/mapped_file.hpp"
#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/safetensors.hpp"
#include "support/json_excerpt.hpp"

namespace lucid::quantization {
namespace {

using nlohmann::json;

struct DtypeRow {
  ScalarType type;
  std::string_view name;
  std::size_t size;
};

// In the order the reference implementation lists them (widest first).
constexpr DtypeRow kDtypes[] = {
    {ScalarType::float64, "F64", 8},  {ScalarType::float32, "F32", 4},
    {ScalarType::float16, "F16", 2},  {ScalarType::bfloat16, "BF16", 2},
    {ScalarType::int64, "I64", 8},    {ScalarType::int32, "I32", 4},
    {ScalarType::int16, "I16", 2},    {ScalarType::int8, "I8", 1},
    {ScalarType::uint64, "U64", 8},   {ScalarType::uint32, "U32", 4},
    {ScalarType::uint16, "U16", 2},   {ScalarType::uint8, "U8", 1},
    {ScalarType::boolean, "BOOL", 1},
};

const DtypeRow& row_of(ScalarType type) {
  for (const DtypeRow& row : kDtypes) {
    if (row.type == type) return row;
  }
  throw Error("safetensors: ScalarType value " + std::to_string(static_cast<int>(type)) +
              " (expected a member of ScalarType)");
}

constexpr std::uint64_t kInt64Max =
    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

[[noreturn]] void fail(std::string_view file, const std::string& message) {
  throw Error(std::string(file) + ": " + message);
}

[[noreturn]] void fail_tensor(std::string_view file, std::string_view tensor,
                              const std::string& message) {
  throw Error(std::string(file) + ": tensor " + detail::quoted(tensor) + ": " + message);
}

// "number 2.5", "string \"F32\"", "array [1,2]" for messages: a bounded excerpt, whatever the
// value's size or depth.
std::string describe(const json& value) {
  return std::string(value.type_name()) + " " + detail::json_excerpt(value, 60);
}

// "[2, -1]" for a JSON array, shortened when long.
std::string array_text(const json& array) {
  std::string out = "[";
  for (const json& item : array) {
    if (out.size() > 1) out += ", ";
    out += detail::json_excerpt(item, 80);
    if (out.size() > 80) return detail::cut_text(std::move(out), 80) + "]";
  }
  return out + "]";
}

std::string u64(std::uint64_t value) {
  return std::to_string(value);
}

std::string offsets_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + u64(begin) + ", " + u64(end) + "]";
}

std::uint64_t read_le64(const std::byte* p) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | static_cast<std::uint8_t>(p[i]);
  return value;
}

// Arrays and objects nested deeper than this are refused while parsing, as the reference
// implementation's JSON parser does (serde_json's recursion limit of 128): a header needs 3.
constexpr int kMaxHeaderNesting = 127;

[[noreturn]] void fail_nesting(std::string_view file) {
  fail(file, "header nests arrays or objects more than " + std::to_string(kMaxHeaderNesting) +
                 " levels deep (expected an object of tensor entries, 3 levels)");
}

// Parses the header JSON, throwing Error on malformed JSON and on any object (at any depth)
// that repeats a key: nlohmann/json would otherwise silently keep the last one.
json parse_json_without_duplicates(std::string_view text, std::string_view file) {
  std::vector<std::set<std::string>> open_objects;
  std::string top_key;  // the enclosing top-level key, for messages about nested objects
  auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::array_start:
        if (depth >= kMaxHeaderNesting) fail_nesting(file);
        break;
      case json::parse_event_t::object_start:
        if (depth >= kMaxHeaderNesting) fail_nesting(file);
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!open_objects.empty() && !open_objects.back().insert(key).second) {
          if (depth == 1 && key == "__metadata__") {
            fail(file, "\"__metadata__\" appears twice in the header (expected it at most once)");
          }
          if (depth == 1) {
            fail_tensor(file, key, "the name appears twice in the header (expected unique names)");
          }
          if (top_key == "__metadata__") {
            fail(file, "__metadata__: key " + detail::quoted(key) +
                           " appears twice (expected unique keys)");
          }
          if (!top_key.empty()) {
            fail_tensor(file, top_key,
                        "key " + detail::quoted(key) + " appears twice (expected unique keys)");
          }
          fail(file,
               "header: key " + detail::quoted(key) + " appears twice (expected unique keys)");
        }
        if (depth == 1) top_key = key;
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    std::string what = e.what();
    if (const auto close = what.find("] ");
        what.starts_with("[json.exception") && close != std::string::npos) {
      what.erase(0, close + 2);
    }
    fail(file, "header is not valid JSON (" + what + ")");
  }
}

// A non-negative JSON integer that fits in uint64, if `value` is one.
std::optional<std::uint64_t> as_u64(const json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  }
  return std::nullopt;
}

std::map<std::string, std::string> parse_metadata(const json& value, std::string_view file) {
  if (!value.is_object()) {
    fail(file, "__metadata__ is " + describe(value) + " (expected an object of string values)");
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      fail(file, "__metadata__: key " + detail::quoted(key) + " holds " + describe(item) +
                     " (expected a string)");
    }
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

const json& member(const json& entry, const char* key, std::string_view file,
                   std::string_view tensor, const char* expected) {
  const auto it = entry.find(key);
  if (it == entry.end()) {
    fail_tensor(file, tensor, std::string("missing \"") + key + "\" (expected " + expected + ")");
  }
  return *it;
}

SafetensorsEntry parse_entry(const std::string& name, const json& value, std::uint64_t data_size,
                             std::string_view file) {
  if (!value.is_object()) {
    fail_tensor(file, name,
                "entry is " + describe(value) +
                    " (expected an object with dtype, shape and "
                    "data_offsets)");
  }
  SafetensorsEntry entry;
  entry.name = name;

  // dtype
  const json& dtype = member(value, "dtype", file, name, "a dtype string such as \"F32\"");
  if (!dtype.is_string()) {
    fail_tensor(file, name,
                "dtype is " + describe(dtype) + " (expected one of " +
                    detail::safetensors_dtype_list() + ")");
  }
  const auto& dtype_name = dtype.get_ref<const std::string&>();
  const auto type = scalar_type_from_safetensors_name(dtype_name);
  if (!type) {
    fail_tensor(file, name,
                "unknown dtype " + detail::quoted(dtype_name) + " (expected one of " +
                    detail::safetensors_dtype_list() + ")");
  }
  entry.type = *type;

  // shape
  const json& shape = member(value, "shape", file, name, "an array of dimensions");
  if (!shape.is_array()) {
    fail_tensor(file, name,
                "shape is " + describe(shape) + " (expected an array of non-negative integers)");
  }
  entry.shape.reserve(shape.size());
  for (const json& dim : shape) {
    const auto size = as_u64(dim);
    if (!size) {
      if (dim.is_number_integer()) {
        fail_tensor(file, name,
                    "shape " + array_text(shape) + " has a negative dimension " +
                        detail::json_excerpt(dim) + " (expected non-negative integers)");
      }
      fail_tensor(file, name,
                  "shape " + array_text(shape) + " has a dimension that is " + describe(dim) +
                      " (expected non-negative integers)");
    }
    if (*size > kInt64Max) {
      fail_tensor(file, name,
                  "shape " + array_text(shape) + " has a dimension " + u64(*size) +
                      " (expected at most 2^63 - 1)");
    }
    entry.shape.push_back(static_cast<std::int64_t>(*size));
  }
  std::uint64_t numel = 1;
  for (const std::int64_t dim : entry.shape) {
    const auto d = static_cast<std::uint64_t>(dim);
    if (d != 0 && numel > kInt64Max / d) {
      fail_tensor(file, name,
                  "shape " + detail::cut_text(detail::format_shape(entry.shape), 80) +
                      " has more elements than 2^63 - 1 (expected a product of dimensions that "
                      "does not overflow)");
    }
    numel *= d;
  }
  const std::uint64_t element = detail::safetensors_dtype_size(entry.type);
  if (numel > std::numeric_limits<std::uint64_t>::max() / element) {
    fail_tensor(file, name,
                std::string(to_safetensors_name(entry.type)) + " " +
                    detail::cut_text(detail::format_shape(entry.shape), 80) +
                    " needs more than 2^64 bytes (expected a byte size that does not overflow)");
  }
  const std::uint64_t needed = numel * element;

  // data_offsets
  const json& offsets = member(value, "data_offsets", file, name, "[begin, end]");
  std::optional<std::uint64_t> begin_value, end_value;
  if (offsets.is_array() && offsets.size() == 2) {
    begin_value = as_u64(offsets[0]);
    end_value = as_u64(offsets[1]);
  }
  if (!begin_value || !end_value) {
    fail_tensor(file, name,
                "data_offsets is " + describe(offsets) +
                    " (expected [begin, end], two non-negative integers)");
  }
  const std::uint64_t begin = *begin_value;
  const std::uint64_t end = *end_value;
  if (end < begin) {
    fail_tensor(file, name,
                "data_offsets " + offsets_text(begin, end) +
                    " end before they begin (expected begin <= end)");
  }
  if (end - begin != needed) {
    fail_tensor(file, name,
                "data_offsets " + offsets_text(begin, end) + " hold " + u64(end - begin) +
                    " bytes but " + std::string(to_safetensors_name(entry.type)) + " " +
                    detail::cut_text(detail::format_shape(entry.shape), 80) + " needs " +
                    u64(needed));
  }
  if (end > data_size) {
    fail_tensor(file, name,
                "data_offsets " + offsets_text(begin, end) +
                    " run past the end of the file (the data section holds " + u64(data_size) +
                    " bytes; expected end <= " + u64(data_size) + ")");
  }
  entry.begin = begin;
  entry.end = end;
  return entry;
}

// The tensors, sorted by offsets, must tile [0, data_size) exactly.
void check_tiling(const std::vector<SafetensorsEntry>& entries, std::uint64_t data_size,
                  std::string_view file) {
  std::uint64_t cursor = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& entry : entries) {
    if (entry.begin < cursor) {
      fail_tensor(file, entry.name,
                  "data_offsets " + offsets_text(entry.begin, entry.end) + " overlap tensor " +
                      detail::quoted(previous->name) + " at " +
                      offsets_text(previous->begin, previous->end) + " (expected it to begin at " +
                      u64(cursor) + ", tensors side by side)");
    }
    if (entry.begin > cursor) {
      const std::string after = previous == nullptr
                                    ? std::string("the start of the data section")
                                    : "tensor " + detail::quoted(previous->name) + " at " +
                                          offsets_text(previous->begin, previous->end);
      fail_tensor(file, entry.name,
                  "data_offsets " + offsets_text(entry.begin, entry.end) + " leave a hole of " +
                      u64(entry.begin - cursor) + " bytes after " + after +
                      " (expected it to begin at " + u64(cursor) + ", tensors side by side)");
    }
    cursor = entry.end;
    previous = &entry;
  }
  if (cursor != data_size) {
    fail(file, "the data section holds " + u64(data_size) + " bytes but the tensors cover only " +
                   u64(cursor) + " (expected tensors to fill it up to the end of the file)");
  }
}

}  // namespace

// --- dtype names ---------------------------------------------------------------------------

std::string_view to_safetensors_name(ScalarType type) {
  return row_of(type).name;
}

std::optional<ScalarType> scalar_type_from_safetensors_name(std::string_view name) {
  for (const DtypeRow& row : kDtypes) {
    if (row.name == name) return row.type;
  }
  return std::nullopt;
}

namespace detail {

std::size_t safetensors_dtype_size(ScalarType type) {
  return row_of(type).size;
}

std::string safetensors_dtype_list() {
  std::string list;
  for (const DtypeRow& row : kDtypes) {
    if (!list.empty()) list += ", ";
    list += row.name;
  }
  return list;
}

std::size_t find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;   // no overlong forms
      if (c == 0xED) high = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;   // no overlong forms
      if (c == 0xF4) high = 0x8F;  // nothing above U+10FFFF
    } else {
      return i;
    }
    if (n - i < length) return i;
    if (s[i + 1] < low || s[i + 1] > high) return i;
    for (std::size_t k = 2; k < length; ++k) {
      if ((s[i + k] & 0xC0u) != 0x80u) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

std::string quoted(std::string_view text) {
  constexpr std::size_t kLimit = 120;
  std::string shown(text.substr(0, kLimit));
  const bool cut = text.size() > kLimit;
  std::string out = json(shown).dump(-1, ' ', false, json::error_handler_t::replace);
  if (cut) out.insert(out.size() - 1, "...");
  return out;
}

std::string format_shape(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace detail

// --- header ---------------------------------------------------------------------------------

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file_bytes,
                                           std::string_view display_name) {
  const std::string_view file = display_name;
  const std::uint64_t size = file_bytes.size();
  if (size < 8) {
    fail(file, "file is " + u64(size) +
                   " bytes (expected at least 8: a little-endian u64 header length, then the "
                   "JSON header)");
  }
  const std::uint64_t header_length = read_le64(file_bytes.data());
  if (header_length > kSafetensorsMaxHeaderBytes || header_length > size - 8) {
    // A header that does not start with '{' means another format (named when it is GGUF);
    // one that does is a safetensors file cut short.
    const bool json = size > 8 && static_cast<char>(file_bytes[8]) == '{';
    const bool gguf = std::memcmp(file_bytes.data(), "GGUF", 4) == 0;
    const std::string what = gguf   ? "is a GGUF file, not a safetensors file (GGUF files are "
                                      "read by lucidq inspect, lucidq quantize and lucidq "
                                      "dequantize; this reads safetensors): "
                             : json ? ""
                                    : "is not a safetensors file (no JSON header after the "
                                      "first 8 bytes): ";
    if (header_length > kSafetensorsMaxHeaderBytes) {
      fail(file, what + "header length " + u64(header_length) + " exceeds the limit of " +
                     u64(kSafetensorsMaxHeaderBytes) +
                     " bytes (expected a header of at most 100 MB)");
    }
    fail(file, what + "header length " + u64(header_length) + " runs past the end of the file (" +
                   u64(size) + " bytes; expected at most " + u64(size - 8) + ")");
  }
  const std::string_view text(reinterpret_cast<const char*>(file_bytes.data()) + 8,
                              static_cast<std::size_t>(header_length));
  if (const std::size_t bad = detail::find_invalid_utf8(text); bad != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X",
                  static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
    fail(file, "header is not valid UTF-8 (byte " + std::string(hex) + " at header offset " +
                   u64(bad) + "; expected UTF-8 JSON)");
  }

  // The reference implementation parses the header with serde_json::from_str: JSON whitespace
  // may pad it on either side, a byte-order mark or a NUL byte may not (nlohmann/json would
  // skip the one and stop reading at the other).
  if (text.starts_with("\xEF\xBB\xBF")) {
    fail(file,
         "header starts with a UTF-8 byte-order mark (expected the JSON object right away, "
         "optionally after spaces)");
  }
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    fail(file, "header holds a NUL byte at header offset " + u64(nul) +
                   " (expected JSON text; padding after it must be spaces)");
  }

  SafetensorsHeader header;
  header.data_offset = 8 + header_length;
  header.data_size = size - header.data_offset;

  const json root = parse_json_without_duplicates(text, file);
  if (!root.is_object()) {
    fail(file, "header is a JSON " + std::string(root.type_name()) +
                   " (expected an object mapping tensor names to dtype, shape and data_offsets)");
  }
  header.entries.reserve(root.size());
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      header.metadata = parse_metadata(value, file);
    } else {
      header.entries.push_back(parse_entry(key, value, header.data_size, file));
    }
  }
  std::sort(header.entries.begin(), header.entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              if (a.begin != b.begin) return a.begin < b.begin;
              if (a.end != b.end) return a.end < b.end;
              return a.name < b.name;
            });
  check_tiling(header.entries, header.data_size, file);
  return header;
}

// --- SafetensorsFile ------------------------------------------------------------------------

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  const detail::MappedRegion region = detail::map_file(path, "a safetensors file");
  SafetensorsFile file;
  file.path_ = path;
  file.map_ = region.data;
  file.map_size_ = region.size;
  file.guard_ = region.guard;
  try {
    file.header_ = parse_safetensors_header({file.map_, file.map_size_}, path.string());
  } catch (const Error&) {
    file.check_intact();  // a header read as zeros is the shrinking file's fault
    throw;
  }
  file.check_intact();
  for (std::size_t i = 0; i < file.header_.entries.size(); ++i) {
    file.index_.emplace(file.header_.entries[i].name, i);
  }
  return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      header_(std::move(other.header_)),
      index_(std::move(other.index_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      guard_(std::exchange(other.guard_, -1)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    header_ = std::move(other.header_);
    index_ = std::move(other.index_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    guard_ = std::exchange(other.guard_, -1);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  release();
}

void SafetensorsFile::release() noexcept {
  detail::MappedRegion region{map_, map_size_, guard_};
  detail::unmap_file(region);
  map_ = nullptr;
  map_size_ = 0;
  guard_ = -1;
}

void SafetensorsFile::check_intact() const {
  detail::check_mapping({map_, map_size_, guard_}, path_);
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.entries[it->second];
}

std::span<const std::byte> SafetensorsFile::bytes(const SafetensorsEntry& entry) const {
  if (entry.begin > entry.end || entry.end > header_.data_size || map_ == nullptr) {
    fail_tensor(path_.string(), entry.name,
                "data_offsets " + offsets_text(entry.begin, entry.end) +
                    " are outside this file's data section of " + u64(header_.data_size) +
                    " bytes (expected an entry of this file)");
  }
  return {map_ + header_.data_offset + entry.begin, static_cast<std::size_t>(entry.nbytes())};
}

void SafetensorsFile::release_pages(const SafetensorsEntry& entry) const noexcept {
  if (entry.begin >= entry.end || entry.end > header_.data_size) return;
  detail::release_file_pages({map_, map_size_}, header_.data_offset + entry.begin,
                             header_.data_offset + entry.end);
}

TensorView SafetensorsFile::view(const SafetensorsEntry& entry) const {
  return TensorView(bytes(entry).data(), entry.type, entry.shape);
}

TensorView SafetensorsFile::view(std::string_view name) const {
  if (const SafetensorsEntry* entry = find(name)) return view(*entry);
  std::string names;
  constexpr std::size_t kShown = 8;
  for (std::size_t i = 0; i < header_.entries.size() && i < kShown; ++i) {
    names += (i == 0 ? "" : ", ") + detail::quoted(header_.entries[i].name);
  }
  if (header_.entries.size() > kShown) names += ", ...";
  fail(path_.string(), "no tensor named " + detail::quoted(name) + " (the file holds " +
                           u64(header_.entries.size()) + " tensors" +
                           (names.empty() ? std::string() : ": " + names) + ")");
}

}  // namespace lucid::quantization
