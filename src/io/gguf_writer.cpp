// Writing GGUF: ggml's exact header bytes and padding, streamed to an atomic output file.
#include <bit>
#include <cstring>
#include <set>

#include "io/gguf_format.hpp"
#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf.hpp"
#include "support/atomic_file.hpp"

static_assert(std::endian::native == std::endian::little, "GGUF writing assumes little-endian");

namespace lucid::quantization {
namespace {

class Bytes {
 public:
  template <class T>
  void put(T value) {
    put_raw(&value, sizeof(T));
  }
  void put_string(std::string_view text) {
    put<std::uint64_t>(text.size());
    put_raw(text.data(), text.size());
  }
  void put_scalar(const GgufScalar& scalar) {
    std::visit(
        [this](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            put_string(v);
          } else if constexpr (std::is_same_v<T, bool>) {
            put<std::uint8_t>(v ? 1 : 0);
          } else {
            put<T>(v);
          }
        },
        scalar);
  }
  void pad(std::uint64_t alignment) { out_.resize(detail::gguf_align(out_.size(), alignment)); }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  void put_raw(const void* data, std::size_t size) {
    const std::size_t at = out_.size();
    out_.resize(at + size);
    if (size > 0) std::memcpy(out_.data() + at, data, size);
  }

  std::vector<std::byte> out_;
};

// The specs checked, with their types and byte sizes.
std::vector<GgufTensorInfo> plan_tensors(const std::vector<GgufTensorSpec>& tensors,
                                         std::uint64_t alignment) {
  std::vector<GgufTensorInfo> infos;
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const GgufTensorSpec& spec : tensors) {
    if (!names.insert(spec.name).second) {
      throw Error("tensor " + detail::quoted(spec.name) +
                  ": appears twice (expected unique names)");
    }
    GgufTensorInfo info;
    info.name = spec.name;
    info.ne = spec.ne;
    std::tie(info.type, info.nbytes) =
        detail::check_gguf_tensor(spec.name, spec.ne, static_cast<std::uint32_t>(spec.type));
    info.offset = offset;
    offset += detail::gguf_align(info.nbytes, alignment);
    infos.push_back(std::move(info));
  }
  return infos;
}

std::vector<std::byte> encode(const GgufMetadata& metadata,
                              const std::vector<GgufTensorInfo>& infos, std::uint64_t alignment) {
  Bytes out;
  out.put<std::uint32_t>(0x46554747u);  // "GGUF"
  out.put<std::uint32_t>(kGgufVersion);
  out.put<std::int64_t>(static_cast<std::int64_t>(infos.size()));
  out.put<std::int64_t>(static_cast<std::int64_t>(metadata.size()));
  for (const auto& [key, value] : metadata.entries()) {
    out.put_string(key);
    if (value.is_array()) {
      out.put<std::uint32_t>(static_cast<std::uint32_t>(GgufValueType::array));
      out.put<std::uint32_t>(static_cast<std::uint32_t>(value.element_type()));
      out.put<std::uint64_t>(value.items().size());
      for (const GgufScalar& item : value.items())
        out.put_scalar(item);
    } else {
      out.put<std::uint32_t>(static_cast<std::uint32_t>(value.type()));
      out.put_scalar(value.scalar());
    }
  }
  for (const GgufTensorInfo& info : infos) {
    out.put_string(info.name);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(info.ne.size()));
    for (const std::int64_t d : info.ne)
      out.put<std::int64_t>(d);
    out.put<std::uint32_t>(static_cast<std::uint32_t>(info.type));
    out.put<std::uint64_t>(info.offset);
  }
  out.pad(alignment);
  return out.take();
}

}  // namespace

std::vector<std::byte> encode_gguf_header(const GgufMetadata& metadata,
                                          const std::vector<GgufTensorSpec>& tensors,
                                          std::string_view display_name) {
  try {
    const std::uint64_t alignment = detail::gguf_alignment(metadata);
    return encode(metadata, plan_tensors(tensors, alignment), alignment);
  } catch (const Error& e) {
    throw Error(std::string(display_name) + ": " + e.what());
  }
}

struct GgufWriter::Impl {
  std::filesystem::path path;
  detail::AtomicFile file;
  std::vector<GgufTensorInfo> infos;
  std::uint64_t alignment = kGgufDefaultAlignment;
  std::size_t next = 0;
  bool broken = false;

  [[noreturn]] void abandon(const std::string& message) {
    broken = true;
    file.discard();
    throw Error(path.string() + ": " + message);
  }
};

GgufWriter::GgufWriter(const std::filesystem::path& path, const GgufMetadata& metadata,
                       std::vector<GgufTensorSpec> tensors, bool overwrite) {
  std::uint64_t alignment = 0;
  std::vector<GgufTensorInfo> infos;
  std::vector<std::byte> header;
  try {
    alignment = detail::gguf_alignment(metadata);
    infos = plan_tensors(tensors, alignment);
    header = encode(metadata, infos, alignment);
  } catch (const Error& e) {
    throw Error(path.string() + ": " + e.what());
  }
  impl_ = std::make_unique<Impl>(
      Impl{path, detail::AtomicFile(path, overwrite), std::move(infos), alignment, 0, false});
  try {
    impl_->file.write(header);
  } catch (const Error&) {
    impl_->broken = true;
    throw;
  }
}

GgufWriter::GgufWriter(GgufWriter&& other) noexcept = default;
GgufWriter& GgufWriter::operator=(GgufWriter&& other) noexcept = default;
GgufWriter::~GgufWriter() = default;

void GgufWriter::write(std::string_view name, std::span<const std::byte> bytes) {
  Impl& w = *impl_;
  if (w.broken) throw Error(w.path.string() + ": the output was abandoned after an earlier error");
  if (w.next >= w.infos.size()) {
    w.abandon("tensor " + detail::quoted(name) + ": every tensor is already written");
  }
  const GgufTensorInfo& info = w.infos[w.next];
  if (info.name != name) {
    w.abandon("tensor " + detail::quoted(name) + ": written out of order (expected " +
              detail::quoted(info.name) + " next)");
  }
  if (bytes.size() != info.nbytes) {
    w.abandon("tensor " + detail::quoted(name) + ": " + std::to_string(bytes.size()) +
              " bytes given (expected " + std::to_string(info.nbytes) + " for " +
              std::string(ggml_type_traits(info.type).name) + ")");
  }
  try {
    w.file.write(bytes);
    static constexpr std::byte kZeros[256] = {};
    std::uint64_t pad = detail::gguf_align(info.nbytes, w.alignment) - info.nbytes;
    while (pad > 0) {
      const std::uint64_t n = std::min<std::uint64_t>(pad, sizeof kZeros);
      w.file.write(std::span<const std::byte>(kZeros, n));
      pad -= n;
    }
  } catch (const Error&) {
    w.broken = true;
    throw;
  }
  ++w.next;
}

std::optional<std::string_view> GgufWriter::next_tensor() const {
  if (impl_->next >= impl_->infos.size()) return std::nullopt;
  return impl_->infos[impl_->next].name;
}

void GgufWriter::commit() {
  Impl& w = *impl_;
  if (w.broken) throw Error(w.path.string() + ": the output was abandoned after an earlier error");
  if (w.next < w.infos.size()) {
    w.abandon("tensor " + detail::quoted(w.infos[w.next].name) + ": not written (expected all " +
              std::to_string(w.infos.size()) + " tensors before commit)");
  }
  w.file.commit();
}

}  // namespace lucid::quantization
