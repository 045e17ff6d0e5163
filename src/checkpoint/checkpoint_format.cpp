// lucidq checkpoint format 1: stored-tensor layout, metadata encoding, reading and checking.
#include "checkpoint/checkpoint_format.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "support/json_excerpt.hpp"

namespace lucid::quantization {
namespace {

using nlohmann::json;

[[noreturn]] void fail_tensor(std::string_view file, std::string_view tensor,
                              const std::string& message) {
  throw Error(std::string(file) + ": tensor " + detail::quoted(tensor) + ": " + message);
}

std::string packing_name(Storage storage) {
  return storage == Storage::packed4 || storage == Storage::packed2 ? to_string(storage) : "none";
}

// Reads the typed value of metadata key `key`, naming the file, tensor and key on failure.
class Fields {
 public:
  Fields(const json& object, std::string_view name, std::string_view file)
      : object_(object), name_(name), file_(file) {}

  const json& get(const char* key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) fail(key, "is missing (expected it in format 1)");
    return *it;
  }
  std::string string(const char* key) const {
    const json& value = get(key);
    if (!value.is_string()) fail(key, "is " + shown(value) + " (expected a string)");
    return value.get<std::string>();
  }
  std::int64_t integer(const char* key, std::int64_t min, std::int64_t max) const {
    const json& value = get(key);
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() &&
         value.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) ||
        value.get<std::int64_t>() < min || value.get<std::int64_t>() > max) {
      fail(key, "is " + shown(value) + " (expected an integer in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "])");
    }
    return value.get<std::int64_t>();
  }
  [[noreturn]] void fail(const char* key, const std::string& message) const {
    fail_tensor(file_, name_,
                "metadata " +
                    detail::quoted(std::string(checkpoint_tensor_key_prefix) + std::string(name_)) +
                    ": \"" + key + "\" " + message);
  }
  static std::string shown(const json& value) { return detail::json_excerpt(value, 60); }

 private:
  const json& object_;
  std::string_view name_;
  std::string_view file_;
};

// Checks that stored tensor `name` exists with `type` and `shape`; returns it.
const SafetensorsEntry& expect_stored(const SafetensorsFile& file, const std::string& name,
                                      ScalarType type, const Shape& shape, std::string_view owner,
                                      const char* role) {
  const std::string path = file.path().string();
  const SafetensorsEntry* entry = file.find(name);
  if (entry == nullptr) {
    fail_tensor(path, owner,
                std::string("its ") + role + " tensor " + detail::quoted(name) +
                    " is missing (expected " + std::string(to_safetensors_name(type)) + " " +
                    detail::format_shape(shape) + ")");
  }
  if (entry->type != type || entry->shape != shape) {
    fail_tensor(path, owner,
                std::string("its ") + role + " tensor " + detail::quoted(name) + " is " +
                    std::string(to_safetensors_name(entry->type)) + " " +
                    detail::format_shape(entry->shape) + " (expected " +
                    std::string(to_safetensors_name(type)) + " " + detail::format_shape(shape) +
                    " as the metadata implies)");
  }
  return *entry;
}

// Copies the elements of a stored tensor (possibly unaligned in the mapping) into a Vector.
template <class T, class Vector = std::vector<T>>
Vector copy_elements(const SafetensorsFile& file, const SafetensorsEntry& entry) {
  const std::span<const std::byte> bytes = file.bytes(entry);
  Vector out(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

ParamArray<std::int32_t> read_zero_points(const SafetensorsFile& file,
                                          const SafetensorsEntry& entry) {
  auto widen = [](const auto& values) {
    return ParamArray<std::int32_t>(values.begin(), values.end());
  };
  switch (entry.type) {
    case ScalarType::int8:
      return widen(copy_elements<std::int8_t>(file, entry));
    case ScalarType::uint8:
      return widen(copy_elements<std::uint8_t>(file, entry));
    case ScalarType::int16:
      return widen(copy_elements<std::int16_t>(file, entry));
    case ScalarType::uint16:
      return widen(copy_elements<std::uint16_t>(file, entry));
    default:
      return copy_elements<std::int32_t, ParamArray<std::int32_t>>(file, entry);
  }
}

}  // namespace

// --- QuantizedTensorLayout ------------------------------------------------------------------

std::optional<std::string> QuantizedTensorLayout::zero_point_name() const {
  if (is_symmetric(settings.qscheme)) return std::nullopt;
  return name + ".zero_point";
}

ScalarType QuantizedTensorLayout::code_type() const {
  switch (settings.qdtype.storage()) {
    case Storage::int8:
      return ScalarType::int8;
    case Storage::int16:
      return ScalarType::int16;
    case Storage::uint16:
      return ScalarType::uint16;
    case Storage::int32:
      return ScalarType::int32;
    default:  // uint8 and the packed storages
      return ScalarType::uint8;
  }
}

Shape QuantizedTensorLayout::code_shape() const {
  const Storage storage = settings.qdtype.storage();
  if (storage == Storage::packed4 || storage == Storage::packed2) {
    return {settings.qdtype.storage_bytes(shape_numel(shape))};
  }
  return shape;
}

Shape QuantizedTensorLayout::param_shape() const {
  QParams qparams;
  qparams.qscheme = settings.qscheme;
  qparams.ch_axis = settings.axis;
  qparams.group_size = settings.group_size;
  return qparams.param_shape(shape);
}

ScalarType QuantizedTensorLayout::zero_point_type() const {
  const QDtype& d = settings.qdtype;
  if (d.bits() <= 8) return d.is_signed() ? ScalarType::int8 : ScalarType::uint8;
  if (d.bits() <= 16) return d.is_signed() ? ScalarType::int16 : ScalarType::uint16;
  return ScalarType::int32;
}

std::vector<SafetensorsTensorSpec> QuantizedTensorLayout::stored_tensors() const {
  std::vector<SafetensorsTensorSpec> specs{{name, code_type(), code_shape()},
                                           {scale_name(), ScalarType::float32, param_shape()}};
  if (const auto zp = zero_point_name()) specs.push_back({*zp, zero_point_type(), param_shape()});
  return specs;
}

std::uint64_t QuantizedTensorLayout::nbytes() const {
  std::uint64_t total = 0;
  for (const SafetensorsTensorSpec& spec : stored_tensors()) {
    total += static_cast<std::uint64_t>(shape_numel(spec.shape)) * element_size(spec.type);
  }
  return total;
}

// --- metadata -------------------------------------------------------------------------------

namespace detail {

QuantizedTensorLayout make_layout(std::string name, const Shape& shape, ScalarType original_type,
                                  const QuantSettings& settings) {
  QuantizedTensorLayout layout;
  layout.name = std::move(name);
  layout.shape = shape;
  layout.original_type = original_type;
  layout.settings = settings;
  return layout;
}

std::string encode_tensor_metadata(const QuantizedTensorLayout& layout) {
  const QuantSettings& s = layout.settings;
  nlohmann::ordered_json value = nlohmann::ordered_json::object();
  value["dtype"] = s.qdtype.name();
  value["scheme"] = to_string(s.qscheme);
  value["axis"] = s.axis;
  value["group_size"] = s.group_size;
  value["quant_min"] = s.qdtype.quant_min();
  value["quant_max"] = s.qdtype.quant_max();
  value["packing"] = packing_name(s.qdtype.storage());
  value["shape"] = layout.shape;
  value["original_dtype"] = std::string(to_safetensors_name(layout.original_type));
  value["scale"] = layout.scale_name();
  if (const auto zp = layout.zero_point_name()) value["zero_point"] = *zp;
  return value.dump();
}

QuantizedTensorLayout decode_tensor_metadata(std::string_view name, std::string_view json_text,
                                             std::string_view file) {
  const std::string key = std::string(checkpoint_tensor_key_prefix) + std::string(name);
  json value;
  try {
    value = json::parse(json_text);
  } catch (const json::exception&) {
    fail_tensor(file, name,
                "metadata " + detail::quoted(key) + " is not valid JSON (expected an object)");
  }
  if (!value.is_object()) {
    fail_tensor(file, name,
                "metadata " + detail::quoted(key) + " is " + Fields::shown(value) +
                    " (expected a JSON object)");
  }
  const Fields f(value, name, file);
  QuantSettings s;
  try {
    s.qdtype = qdtype_from_string(f.string("dtype"));
  } catch (const Error& e) {
    f.fail("dtype", e.what());
  }
  try {
    s.qscheme = qscheme_from_string(f.string("scheme"));
  } catch (const Error& e) {
    f.fail("scheme", e.what());
  }
  s.group_size = f.integer("group_size", 0, std::numeric_limits<std::int64_t>::max());
  if (f.integer("quant_min", INT32_MIN, INT32_MAX) != s.qdtype.quant_min() ||
      f.integer("quant_max", INT32_MIN, INT32_MAX) != s.qdtype.quant_max()) {
    f.fail("quant_min", "and \"quant_max\" differ from the range of dtype " + s.qdtype.name());
  }
  if (f.string("packing") != packing_name(s.qdtype.storage())) {
    f.fail("packing", "is " + Fields::shown(f.get("packing")) + " (expected \"" +
                          packing_name(s.qdtype.storage()) + "\" for " + s.qdtype.name() + ")");
  }
  const json& shape = f.get("shape");
  Shape dims;
  const bool shape_ok =
      shape.is_array() && std::all_of(shape.begin(), shape.end(), [](const json& d) {
        return d.is_number_integer() && d.get<std::int64_t>() >= 0;
      });
  if (!shape_ok)
    f.fail("shape", "is " + Fields::shown(shape) + " (expected an array of integers >= 0)");
  for (const json& dim : shape)
    dims.push_back(dim.get<std::int64_t>());
  try {
    shape_numel(dims);
  } catch (const Error&) {
    f.fail("shape", "has more elements than 2^63 - 1 (expected a product that does not overflow)");
  }
  const std::string original = f.string("original_dtype");
  const auto original_type = scalar_type_from_safetensors_name(original);
  if (!original_type || !is_floating_point(*original_type)) {
    f.fail("original_dtype",
           "is " + detail::quoted(original) + " (expected F32, F16, BF16 or F64)");
  }
  const auto rank = static_cast<std::int64_t>(dims.size());
  s.axis = static_cast<int>(f.integer("axis", 0, is_per_channel(s.qscheme) ? rank - 1 : 0));
  if (s.group_size > 0 && !is_per_channel(s.qscheme)) {
    f.fail("group_size", "is " + std::to_string(s.group_size) + " with " + to_string(s.qscheme) +
                             " (expected 0)");
  }
  QuantizedTensorLayout layout = make_layout(std::string(name), dims, *original_type, s);
  if (f.string("scale") != layout.scale_name()) {
    f.fail("scale", "is " + Fields::shown(f.get("scale")) + " (expected " +
                        detail::quoted(layout.scale_name()) + ")");
  }
  const auto zp = layout.zero_point_name();
  if (zp && f.string("zero_point") != *zp) {
    f.fail("zero_point",
           "is " + Fields::shown(f.get("zero_point")) + " (expected " + detail::quoted(*zp) + ")");
  }
  if (!zp && value.contains("zero_point")) {
    f.fail("zero_point", "is given for the symmetric scheme " + to_string(s.qscheme) +
                             " (expected none: the zero point is fixed)");
  }
  return layout;
}

}  // namespace detail

// --- reading --------------------------------------------------------------------------------

CheckpointContents read_checkpoint_contents(const SafetensorsFile& file) {
  const std::string path = file.path().string();
  CheckpointContents contents;
  std::vector<QuantizedTensorLayout> layouts;
  for (const auto& [key, value] : file.metadata()) {
    if (key == checkpoint_format_key) {
      contents.format_version = value;
    } else if (key.starts_with(checkpoint_tensor_key_prefix)) {
      const std::string name = key.substr(checkpoint_tensor_key_prefix.size());
      layouts.push_back(detail::decode_tensor_metadata(name, value, path));
    } else if (!key.starts_with("lucidq.")) {
      contents.user_metadata.emplace(key, value);
    }
  }
  if (!contents.format_version) {
    if (!layouts.empty()) {
      fail_tensor(
          path, layouts.front().name,
          "has " +
              detail::quoted(std::string(checkpoint_tensor_key_prefix) + layouts.front().name) +
              " metadata but the file has no \"lucidq.format\" (expected both)");
    }
  } else if (*contents.format_version != checkpoint_format_version) {
    throw Error(path + ": lucidq checkpoint format " + detail::quoted(*contents.format_version) +
                " (expected \"1\"; the file was written by another version of lucidq)");
  }

  std::map<std::string, const QuantizedTensorLayout*, std::less<>> by_name;
  std::set<std::string, std::less<>> companions;
  for (const QuantizedTensorLayout& layout : layouts) {
    expect_stored(file, layout.name, layout.code_type(), layout.code_shape(), layout.name, "codes");
    expect_stored(file, layout.scale_name(), ScalarType::float32, layout.param_shape(), layout.name,
                  "scale");
    companions.insert(layout.scale_name());
    if (const auto zp = layout.zero_point_name()) {
      expect_stored(file, *zp, layout.zero_point_type(), layout.param_shape(), layout.name,
                    "zero_point");
      companions.insert(*zp);
    }
    by_name.emplace(layout.name, &layout);
  }
  for (const SafetensorsEntry& entry : file.entries()) {
    const auto it = by_name.find(entry.name);
    if (it != by_name.end() && companions.contains(entry.name)) {
      fail_tensor(path, entry.name,
                  "is both a quantized tensor and another one's scale or zero point (expected "
                  "distinct names)");
    }
    if (companions.contains(entry.name)) continue;
    CheckpointTensor tensor{entry, std::nullopt};
    if (it != by_name.end()) tensor.quantized = *it->second;
    contents.tensors.push_back(std::move(tensor));
  }
  return contents;
}

QuantizedTensor load_quantized_tensor(const SafetensorsFile& file,
                                      const QuantizedTensorLayout& layout) {
  const std::string path = file.path().string();
  const QuantSettings& s = layout.settings;
  const SafetensorsEntry& codes = expect_stored(file, layout.name, layout.code_type(),
                                                layout.code_shape(), layout.name, "codes");
  const SafetensorsEntry& scale = expect_stored(file, layout.scale_name(), ScalarType::float32,
                                                layout.param_shape(), layout.name, "scale");
  QParams qparams;
  qparams.qscheme = s.qscheme;
  qparams.qdtype = s.qdtype;
  qparams.ch_axis = s.axis;
  qparams.group_size = s.group_size;
  qparams.scale = copy_elements<float, ParamArray<float>>(file, scale);
  if (const auto zp = layout.zero_point_name()) {
    qparams.zero_point =
        read_zero_points(file, expect_stored(file, *zp, layout.zero_point_type(),
                                             layout.param_shape(), layout.name, "zero_point"));
  } else {
    qparams.zero_point.assign(qparams.scale.size(),
                              static_cast<std::int32_t>(s.qdtype.symmetric_zero_point()));
  }
  const std::span<const std::byte> bytes = file.bytes(codes);
  ByteBuffer storage(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  try {
    return QuantizedTensor(layout.shape, std::move(qparams), std::move(storage));
  } catch (const Error& e) {
    fail_tensor(path, layout.name, e.what());
  }
}

void detail::check_not_lucidq_checkpoint(const SafetensorsFile& file) {
  for (const auto& [key, value] : file.metadata()) {
    if (key.starts_with("lucidq.")) {
      throw Error(file.path().string() + ": already a lucidq checkpoint (__metadata__ holds " +
                  detail::quoted(key) +
                  "; expected a plain safetensors file: dequantize it first)");
    }
  }
}

}  // namespace lucid::quantization
