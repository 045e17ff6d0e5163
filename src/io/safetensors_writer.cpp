// Writing safetensors: header encoding, the streaming SafetensorsWriter, write_safetensors().
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>

#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/safetensors.hpp"
#include "support/atomic_file.hpp"

namespace lucid::quantization {

namespace detail {

std::string encode_safetensors_header(const std::vector<SafetensorsEntry>& entries,
                                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata)
      meta[key] = value;
    root["__metadata__"] = std::move(meta);
  }
  for (const SafetensorsEntry& entry : entries) {
    nlohmann::ordered_json item = nlohmann::ordered_json::object();
    item["dtype"] = std::string(to_safetensors_name(entry.type));
    item["shape"] = entry.shape;
    item["data_offsets"] = nlohmann::ordered_json::array({entry.begin, entry.end});
    root[entry.name] = std::move(item);
  }
  std::string text = root.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out(8, '\0');
  std::uint64_t length = text.size();
  for (char& byte : out) {
    byte = static_cast<char>(length & 0xFFu);
    length >>= 8;
  }
  return out + text;
}

}  // namespace detail

namespace {

constexpr std::uint64_t kInt64Max =
    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& message) {
  throw Error(path.string() + ": " + message);
}

[[noreturn]] void fail_tensor(const std::filesystem::path& path, std::string_view tensor,
                              const std::string& message) {
  throw Error(path.string() + ": tensor " + detail::quoted(tensor) + ": " + message);
}

void check_utf8(const std::filesystem::path& path, std::string_view text, const std::string& what) {
  if (const std::size_t bad = detail::find_invalid_utf8(text); bad != std::string_view::npos) {
    fail(path, what + " " + detail::quoted(text) + " is not valid UTF-8 (bad byte at offset " +
                   std::to_string(bad) + "; expected UTF-8 text)");
  }
}

// Validates the specs and lays the tensors out back to back in the given order.
std::vector<SafetensorsEntry> lay_out(const std::filesystem::path& path,
                                      std::vector<SafetensorsTensorSpec>& specs) {
  std::vector<SafetensorsEntry> entries;
  entries.reserve(specs.size());
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (SafetensorsTensorSpec& spec : specs) {
    check_utf8(path, spec.name, "tensor name");
    if (spec.name == "__metadata__") {
      fail(path, "tensor name \"__metadata__\" is reserved (expected another name)");
    }
    if (!names.insert(spec.name).second) {
      fail_tensor(path, spec.name, "the name is given twice (expected unique names)");
    }
    std::size_t element = 0;
    try {
      element = detail::safetensors_dtype_size(spec.type);
    } catch (const Error& e) {
      fail_tensor(path, spec.name, e.what());
    }
    std::uint64_t numel = 1;
    for (const std::int64_t dim : spec.shape) {
      if (dim < 0) {
        fail_tensor(path, spec.name,
                    "shape " + detail::format_shape(spec.shape) + " has a negative dimension " +
                        std::to_string(dim) + " (expected non-negative integers)");
      }
      const auto d = static_cast<std::uint64_t>(dim);
      if (d != 0 && numel > kInt64Max / d) {
        fail_tensor(path, spec.name,
                    "shape " + detail::format_shape(spec.shape) +
                        " has more elements than 2^63 - 1 (expected a product that does not "
                        "overflow)");
      }
      numel *= d;
    }
    if (numel > (std::numeric_limits<std::uint64_t>::max() - offset) / element) {
      fail_tensor(path, spec.name,
                  "shape " + detail::format_shape(spec.shape) +
                      " takes the file past 2^64 bytes (expected a size that does not overflow)");
    }
    const std::uint64_t nbytes = numel * element;
    entries.push_back({spec.name, spec.type, spec.shape, offset, offset + nbytes});
    offset += nbytes;
  }
  return entries;
}

}  // namespace

struct SafetensorsWriter::Impl {
  std::filesystem::path path;
  detail::AtomicFile file;
  std::vector<SafetensorsEntry> entries;
  std::unordered_map<std::string_view, std::size_t> index;  // views into entries' names
  std::uint64_t total = 0;                                  // bytes of the data section
  std::uint64_t written = 0;                                // data bytes written so far
  std::size_t current = 0;                                  // first tensor write() may still write
  bool broken = false;                                      // an error abandoned the output

  // Abandons the output (the temporary file is removed) and throws.
  [[noreturn]] void abandon(const std::string& message) {
    broken = true;
    file.discard();
    throw Error(message);
  }
  std::string prefix() const { return path.string() + ": "; }
  std::string tensor_prefix(std::string_view name) const {
    return prefix() + "tensor " + detail::quoted(name) + ": ";
  }
  // The tensor holding data byte `written`, if any.
  const SafetensorsEntry* pending() const {
    for (std::size_t i = current == 0 ? 0 : current - 1; i < entries.size(); ++i) {
      if (entries[i].end > written) return &entries[i];
    }
    return nullptr;
  }
  void check_usable() const {
    if (broken) throw Error(prefix() + "the output was abandoned after an earlier error");
    if (file.committed()) throw Error(prefix() + "already committed");
  }
  void put(std::span<const std::byte> bytes) {
    try {
      file.write(bytes);
    } catch (...) {
      broken = true;  // the AtomicFile removed the temporary file
      throw;
    }
    written += bytes.size();
  }
};

SafetensorsWriter::SafetensorsWriter(const std::filesystem::path& path,
                                     std::vector<SafetensorsTensorSpec> tensors,
                                     const std::map<std::string, std::string>& metadata,
                                     bool overwrite) {
  std::vector<SafetensorsEntry> entries = lay_out(path, tensors);
  for (const auto& [key, value] : metadata) {
    check_utf8(path, key, "__metadata__ key");
    check_utf8(path, value, "__metadata__ value");
  }
  const std::string header = detail::encode_safetensors_header(entries, metadata);
  if (header.size() - 8 > kSafetensorsMaxHeaderBytes) {
    fail(path, "the header would take " + std::to_string(header.size() - 8) +
                   " bytes (expected at most 100000000: fewer or shorter names)");
  }
  const std::uint64_t total = entries.empty() ? 0 : entries.back().end;
  impl_.reset(new Impl{path, detail::AtomicFile(path, overwrite), std::move(entries), {}, total});
  for (std::size_t i = 0; i < impl_->entries.size(); ++i) {
    impl_->index.emplace(impl_->entries[i].name, i);
  }
  try {
    impl_->file.write(header);
  } catch (...) {
    impl_->broken = true;
    throw;
  }
}

SafetensorsWriter::SafetensorsWriter(SafetensorsWriter&& other) noexcept = default;
SafetensorsWriter& SafetensorsWriter::operator=(SafetensorsWriter&& other) noexcept = default;
SafetensorsWriter::~SafetensorsWriter() = default;

void SafetensorsWriter::write(std::string_view name, std::span<const std::byte> bytes) {
  if (!impl_) throw Error("SafetensorsWriter: used after being moved from");
  Impl& s = *impl_;
  s.check_usable();
  const auto it = s.index.find(name);
  if (it == s.index.end()) {
    s.abandon(s.tensor_prefix(name) + "is not among the " + std::to_string(s.entries.size()) +
              " tensors given to the writer (expected one of them)");
  }
  const SafetensorsEntry& entry = s.entries[it->second];
  if (it->second < s.current || entry.begin < s.written) {
    const SafetensorsEntry* next = s.pending();
    if (next != nullptr && next->name == entry.name) {
      s.abandon(s.tensor_prefix(name) + "is partly written (" +
                std::to_string(s.written - entry.begin) + " of " + std::to_string(entry.nbytes()) +
                " bytes; expected append() to finish it)");
    }
    s.abandon(s.tensor_prefix(name) + "was already written (expected each tensor once)");
  }
  if (entry.begin > s.written) {
    const SafetensorsEntry* next = s.pending();
    s.abandon(s.tensor_prefix(name) + "written before tensor " + detail::quoted(next->name) +
              " (expected tensors in the order given to the writer)");
  }
  if (bytes.size() != entry.nbytes()) {
    s.abandon(s.tensor_prefix(name) + std::to_string(bytes.size()) + " bytes given but " +
              std::string(to_safetensors_name(entry.type)) + " " +
              detail::format_shape(entry.shape) + " needs " + std::to_string(entry.nbytes()));
  }
  s.put(bytes);
  s.current = it->second + 1;
}

void SafetensorsWriter::write(std::string_view name, const TensorView& view) {
  if (!impl_) throw Error("SafetensorsWriter: used after being moved from");
  Impl& s = *impl_;
  s.check_usable();
  const auto it = s.index.find(name);
  if (it != s.index.end()) {
    const SafetensorsEntry& entry = s.entries[it->second];
    if (view.type != entry.type || view.shape != entry.shape) {
      s.abandon(s.tensor_prefix(name) + "the view is " +
                std::string(to_safetensors_name(view.type)) + " " +
                detail::format_shape(view.shape) + " (expected " +
                std::string(to_safetensors_name(entry.type)) + " " +
                detail::format_shape(entry.shape) + " as given to the writer)");
    }
    if (view.data == nullptr && entry.nbytes() > 0) {
      s.abandon(s.tensor_prefix(name) + "the view has no data (expected " +
                std::to_string(entry.nbytes()) + " bytes)");
    }
    write(name, std::span(static_cast<const std::byte*>(view.data),
                          static_cast<std::size_t>(entry.nbytes())));
    return;
  }
  write(name, std::span<const std::byte>());  // reports the unknown name
}

void SafetensorsWriter::append(std::span<const std::byte> bytes) {
  if (!impl_) throw Error("SafetensorsWriter: used after being moved from");
  Impl& s = *impl_;
  s.check_usable();
  if (bytes.size() > s.total - s.written) {
    s.abandon(s.prefix() + "append of " + std::to_string(bytes.size()) + " bytes runs past the " +
              "last tensor (" + std::to_string(s.total - s.written) +
              " bytes remain; expected exactly the tensors' sizes)");
  }
  s.put(bytes);
  while (s.current < s.entries.size() && s.entries[s.current].begin < s.written)
    ++s.current;
}

std::optional<std::string_view> SafetensorsWriter::next_tensor() const {
  if (!impl_) return std::nullopt;
  const SafetensorsEntry* next = impl_->pending();
  if (next == nullptr) return std::nullopt;
  return std::string_view(next->name);
}

void SafetensorsWriter::commit() {
  if (!impl_) throw Error("SafetensorsWriter: used after being moved from");
  Impl& s = *impl_;
  s.check_usable();
  if (s.written != s.total) {
    const SafetensorsEntry* next = s.pending();
    s.abandon(s.prefix() + "commit with " + std::to_string(s.written) + " of " +
              std::to_string(s.total) + " data bytes written (tensor " +
              detail::quoted(next->name) + " is next; expected every tensor before commit)");
  }
  try {
    s.file.commit();
  } catch (...) {
    s.broken = true;
    throw;
  }
}

void write_safetensors(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, TensorView>>& tensors,
                       const std::map<std::string, std::string>& metadata, bool overwrite) {
  std::vector<SafetensorsTensorSpec> specs;
  specs.reserve(tensors.size());
  for (const auto& [name, view] : tensors)
    specs.push_back({name, view.type, view.shape});
  SafetensorsWriter writer(path, std::move(specs), metadata, overwrite);
  for (const auto& [name, view] : tensors)
    writer.write(name, view);
  writer.commit();
}

}  // namespace lucid::quantization
