// GGUF metadata values and the ordered metadata map; tensor-info shape helpers.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>

#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf.hpp"

namespace lucid::quantization {
namespace {

constexpr std::array<std::string_view, 13> kTypeNames = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"};

// The variant index of each value type (array has none).
constexpr std::array<GgufValueType, 12> kTypeOfIndex = {
    GgufValueType::uint8,  GgufValueType::int8,   GgufValueType::uint16,  GgufValueType::int16,
    GgufValueType::uint32, GgufValueType::int32,  GgufValueType::float32, GgufValueType::boolean,
    GgufValueType::string, GgufValueType::uint64, GgufValueType::int64,   GgufValueType::float64};

std::string float_text(double value, int digits) {
  char text[40];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

std::string scalar_text(const GgufScalar& scalar) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return detail::quoted(v);
        } else if constexpr (std::is_same_v<T, float>) {
          return float_text(v, 9);
        } else if constexpr (std::is_same_v<T, double>) {
          return float_text(v, 17);
        } else {
          return std::to_string(v);
        }
      },
      scalar);
}

}  // namespace

std::string_view to_string(GgufValueType type) {
  const auto id = static_cast<std::uint32_t>(type);
  return id < kTypeNames.size() ? kTypeNames[id] : std::string_view("unknown");
}

std::optional<GgufValueType> gguf_value_type_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kTypeNames.size(); ++i) {
    if (kTypeNames[i] == name) return static_cast<GgufValueType>(i);
  }
  return std::nullopt;
}

GgufValueType gguf_type_of(const GgufScalar& scalar) {
  return kTypeOfIndex[scalar.index()];
}

GgufValue::GgufValue(GgufScalar scalar)
    : element_type_(gguf_type_of(scalar)), is_array_(false), items_{std::move(scalar)} {}

GgufValue GgufValue::array(GgufValueType element_type, std::vector<GgufScalar> items) {
  if (element_type == GgufValueType::array || static_cast<std::uint32_t>(element_type) > 12) {
    throw Error("GGUF array of element type " + std::string(to_string(element_type)) +
                " (expected a scalar type: GGUF readers refuse arrays of arrays)");
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (gguf_type_of(items[i]) != element_type) {
      throw Error("GGUF array of " + std::string(to_string(element_type)) + ": item " +
                  std::to_string(i) + " is a " + std::string(to_string(gguf_type_of(items[i]))) +
                  " (expected every item of the element type)");
    }
  }
  GgufValue value;
  value.element_type_ = element_type;
  value.is_array_ = true;
  value.items_ = std::move(items);
  return value;
}

const GgufScalar& GgufValue::scalar() const {
  if (is_array_) {
    throw Error("GGUF value is an array of " + std::string(to_string(element_type_)) +
                " (expected a scalar)");
  }
  return items_.front();
}

const std::vector<GgufScalar>& GgufValue::items() const {
  if (!is_array_) {
    throw Error("GGUF value is a " + std::string(to_string(element_type_)) +
                " (expected an array)");
  }
  return items_;
}

std::optional<std::uint64_t> GgufValue::as_count() const {
  if (is_array_) return std::nullopt;
  return std::visit(
      [](const auto& v) -> std::optional<std::uint64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if (v < 0) return std::nullopt;
          return static_cast<std::uint64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      items_.front());
}

std::string format_gguf_value(const GgufValue& value, std::size_t max_items) {
  if (!value.is_array()) return scalar_text(value.scalar());
  const std::vector<GgufScalar>& items = value.items();
  std::string out = "[";
  const std::size_t shown = std::min(items.size(), max_items);
  for (std::size_t i = 0; i < shown; ++i) {
    out += (i == 0 ? "" : ", ") + scalar_text(items[i]);
  }
  if (shown < items.size()) {
    out +=
        (shown == 0 ? "" : ", ") + std::string("... (") + std::to_string(items.size()) + " items)";
  }
  return out + "]";
}

const GgufValue* GgufMetadata::find(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

void GgufMetadata::set(std::string key, GgufValue value) {
  if (key.empty()) throw Error("GGUF metadata key is empty (expected a non-empty key)");
  erase(key);
  entries_.emplace_back(std::move(key), std::move(value));
}

void GgufMetadata::append(std::string key, GgufValue value) {
  if (key.empty()) throw Error("GGUF metadata key is empty (expected a non-empty key)");
  if (find(key) != nullptr) {
    throw Error("GGUF metadata key " + detail::quoted(key) +
                " appears twice (expected unique keys)");
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

bool GgufMetadata::erase(std::string_view key) {
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const Entry& entry) { return entry.first == key; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

std::optional<std::string> GgufMetadata::get_string(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::nullopt;
  const std::string* text = value->get<std::string>();
  return text ? std::optional<std::string>(*text) : std::nullopt;
}

std::optional<std::uint64_t> GgufMetadata::get_count(std::string_view key) const {
  const GgufValue* value = find(key);
  return value ? value->as_count() : std::nullopt;
}

std::int64_t GgufTensorInfo::numel() const {
  std::int64_t count = 1;
  for (const std::int64_t d : ne)
    count *= d;
  return count;
}

std::int64_t GgufTensorInfo::rows() const {
  const std::int64_t row = row_length();
  return row == 0 ? 0 : numel() / row;
}

Shape GgufTensorInfo::shape() const {
  return Shape(ne.rbegin(), ne.rend());
}

std::vector<std::int64_t> gguf_dims_of(const Shape& shape) {
  if (shape.size() > kGgufMaxDims) {
    throw Error("shape " + detail::format_shape(shape) + " has " + std::to_string(shape.size()) +
                " dimensions (expected at most 4 for GGUF)");
  }
  std::vector<std::int64_t> ne(shape.rbegin(), shape.rend());
  while (ne.size() > 1 && ne.back() == 1)
    ne.pop_back();
  if (ne.empty()) ne.push_back(1);
  return ne;
}

}  // namespace lucid::quantization
