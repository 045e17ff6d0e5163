// Reading llama.cpp importance matrices: the GGUF format and the legacy .dat format.
#include "lucid/quantization/imatrix.hpp"

#include <cmath>
#include <cstring>

#include "io/mapped_file.hpp"
#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf.hpp"

namespace lucid::quantization {
namespace {

void check_finite(const std::vector<float>& values, std::string_view file, std::string_view name) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw Error(std::string(file) + ": imatrix entry " + detail::quoted(name) + ": value " +
                  std::to_string(i) + " is " + std::to_string(values[i]) +
                  " (expected finite importance weights)");
    }
  }
}

std::vector<float> floats_of(std::span<const std::byte> file_bytes, const GgufHeader& header,
                             const GgufTensorInfo& info) {
  std::vector<float> out(static_cast<std::size_t>(info.numel()));
  if (!out.empty()) {
    std::memcpy(out.data(), file_bytes.data() + header.data_offset + info.offset,
                out.size() * sizeof(float));
  }
  return out;
}

// Unmaps a mapping when it goes out of scope.
struct Unmapper {
  detail::MappedRegion& region;
  ~Unmapper() { detail::unmap_file(region); }
};

// The legacy reader: bounds-checked little-endian fields.
class LegacyCursor {
 public:
  LegacyCursor(std::span<const std::byte> bytes, std::string_view file)
      : bytes_(bytes), file_(file) {}
  bool at_end() const { return position_ == bytes_.size(); }
  std::int32_t int32(const std::string& what) { return read<std::int32_t>(what); }
  void floats(std::vector<float>& out, std::size_t count, const std::string& what) {
    need(count * sizeof(float), what);
    out.resize(count);
    if (count > 0) std::memcpy(out.data(), bytes_.data() + position_, count * sizeof(float));
    position_ += count * sizeof(float);
  }
  std::string text(std::size_t length, const std::string& what) {
    need(length, what);
    std::string out(reinterpret_cast<const char*>(bytes_.data() + position_), length);
    position_ += length;
    return out;
  }
  [[noreturn]] void fail(const std::string& message) const {
    throw Error(std::string(file_) + ": " + message);
  }

 private:
  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + position_, sizeof(T));
    position_ += sizeof(T);
    return value;
  }
  void need(std::size_t size, const std::string& what) const {
    if (bytes_.size() - position_ < size) {
      fail("legacy imatrix ends at byte " + std::to_string(bytes_.size()) + " inside " + what +
           " (expected " + std::to_string(size) + " more bytes: the file is truncated)");
    }
  }
  std::span<const std::byte> bytes_;
  std::string_view file_;
  std::size_t position_ = 0;
};

}  // namespace

ImportanceMatrix parse_gguf_imatrix(std::span<const std::byte> file_bytes,
                                    std::string_view display_name) {
  const std::string name(display_name);
  const GgufHeader header = parse_gguf_header(file_bytes, display_name);
  const GgufMetadata& m = header.metadata;
  ImportanceMatrix out;
  out.format = "gguf";
  for (const char* key : {"imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"}) {
    if (m.find(key) == nullptr) {
      throw Error(name + ": key \"" + key + "\" is missing (expected llama-imatrix's GGUF " +
                  "format: imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size)");
    }
  }
  const GgufValue& datasets = *m.find("imatrix.datasets");
  if (!datasets.is_array() || datasets.element_type() != GgufValueType::string) {
    throw Error(name + ": key \"imatrix.datasets\": is not a string array (expected one)");
  }
  for (const GgufScalar& item : datasets.items())
    out.datasets.push_back(std::get<std::string>(item));
  out.chunk_count = static_cast<std::int64_t>(m.get_count("imatrix.chunk_count").value_or(0));

  std::map<std::string, std::pair<const GgufTensorInfo*, const GgufTensorInfo*>> pairs;
  for (const GgufTensorInfo& t : header.tensors) {
    std::string_view base = t.name;
    if (base.ends_with(".in_sum2")) {
      pairs[std::string(base.substr(0, base.size() - 8))].first = &t;
    } else if (base.ends_with(".counts")) {
      pairs[std::string(base.substr(0, base.size() - 7))].second = &t;
    }
  }
  if (pairs.empty()) {
    throw Error(name + ": no \"W.in_sum2\" / \"W.counts\" tensors (expected at least one entry)");
  }
  for (const auto& [tensor, p] : pairs) {
    const std::string entry = "imatrix entry " + detail::quoted(tensor);
    const auto [sums, counts] = p;
    if (sums == nullptr || counts == nullptr) {
      throw Error(name + ": " + entry + ": has " +
                  (sums ? "in_sum2 but no counts" : "counts but no in_sum2") +
                  " (expected both tensors)");
    }
    if (sums->type != GgmlType::F32 || counts->type != GgmlType::F32) {
      throw Error(name + ": " + entry + ": in_sum2 and counts must be F32");
    }
    const std::int64_t ne0 = sums->row_length();
    const std::int64_t ne1 = sums->rows();
    if (counts->numel() != ne1) {
      throw Error(name + ": " + entry + ": " + std::to_string(counts->numel()) + " counts for " +
                  std::to_string(ne1) + " rows of in_sum2 (expected one each)");
    }
    const std::vector<float> sum = floats_of(file_bytes, header, *sums);
    const std::vector<float> count = floats_of(file_bytes, header, *counts);
    std::vector<float> weights(sum.size());
    for (std::int64_t j = 0; j < ne1; ++j) {
      for (std::int64_t i = 0; i < ne0; ++i) {
        const auto k = static_cast<std::size_t>(j * ne0 + i);
        weights[k] = count[static_cast<std::size_t>(j)] > 0.0f
                         ? sum[k] / count[static_cast<std::size_t>(j)]
                         : 1.0f;
      }
    }
    check_finite(weights, name, tensor);
    out.entries.emplace(tensor, std::move(weights));
  }
  return out;
}

const std::vector<float>* ImportanceMatrix::find(std::string_view tensor) const {
  const auto it = entries.find(tensor);
  return it == entries.end() ? nullptr : &it->second;
}

ImportanceMatrix parse_legacy_imatrix(std::span<const std::byte> file_bytes,
                                      std::string_view display_name) {
  LegacyCursor in(file_bytes, display_name);
  ImportanceMatrix out;
  out.format = "legacy";
  const std::int32_t n_entries = in.int32("the entry count");
  if (n_entries < 1) {
    in.fail("legacy imatrix entry count " + std::to_string(n_entries) +
            " (expected at least 1; is this an imatrix file?)");
  }
  for (std::int32_t i = 0; i < n_entries; ++i) {
    const std::string where = "entry " + std::to_string(i);
    const std::int32_t length = in.int32(where + "'s name length");
    if (length <= 0) {
      in.fail("legacy imatrix " + where + ": name length " + std::to_string(length) +
              " (expected > 0)");
    }
    std::string name = in.text(static_cast<std::size_t>(length), where + "'s name");
    const std::string entry = "imatrix entry " + detail::quoted(name);
    const std::int32_t ncall = in.int32(entry + "'s ncall");
    const std::int32_t nval = in.int32(entry + "'s value count");
    if (nval < 1) {
      in.fail(entry + ": value count " + std::to_string(nval) + " (expected at least 1)");
    }
    std::vector<float> values;
    in.floats(values, static_cast<std::size_t>(nval), entry + "'s values");
    if (ncall > 0) {
      for (float& v : values)
        v /= static_cast<float>(ncall);
    }
    check_finite(values, display_name, name);
    if (!out.entries.emplace(std::move(name), std::move(values)).second) {
      in.fail(entry + ": appears twice (expected unique tensor names)");
    }
  }
  if (!in.at_end()) {
    out.chunk_count = in.int32("the chunk count");
    const std::int32_t length = in.int32("the dataset name length");
    if (length < 0) {
      in.fail("legacy imatrix dataset name length " + std::to_string(length) + " (expected >= 0)");
    }
    if (length > 0)
      out.datasets.push_back(in.text(static_cast<std::size_t>(length), "the dataset name"));
  }
  return out;
}

ImportanceMatrix load_imatrix(const std::filesystem::path& path) {
  detail::MappedRegion region = detail::map_file(path, "an imatrix file");
  const Unmapper unmap{region};
  const std::span<const std::byte> bytes(region.data, region.size);
  ImportanceMatrix out;
  try {
    out = region.size >= 4 && std::memcmp(region.data, "GGUF", 4) == 0
              ? parse_gguf_imatrix(bytes, path.string())
              : parse_legacy_imatrix(bytes, path.string());
  } catch (const Error&) {
    detail::check_mapping(region, path);  // bytes read as zeros are the shrinking file's fault
    throw;
  }
  detail::check_mapping(region, path);
  out.path = path.string();
  return out;
}

}  // namespace lucid::quantization
