// Bindings of GGUF reading and writing, the ggml block types and the GGUF quantize job.
#include <cstring>

#include "common.hpp"

namespace lucidq_python {
namespace {

Q::GgmlType ggml_type_named(const std::string& name) {
  const auto type = Q::ggml_type_from_name(name);
  if (!type) {
    throw Q::Error("type = \"" + name +
                   "\" is not a ggml type (expected e.g. q8_0, q4_K, q6_K, iq4_nl, f16, bf16)");
  }
  return *type;
}

std::string ggml_name(Q::GgmlType type) {
  return std::string(Q::ggml_type_traits(type).name);
}

py::object scalar_to_python(const Q::GgufScalar& scalar) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          // Metadata strings are UTF-8 by the spec; invalid bytes are replaced, not fatal.
          return py::reinterpret_steal<py::object>(
              PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "replace"));
        } else {
          return py::cast(v);
        }
      },
      scalar);
}

py::object value_to_python(const Q::GgufValue& value) {
  if (!value.is_array()) return scalar_to_python(value.scalar());
  py::list items;
  for (const Q::GgufScalar& item : value.items())
    items.append(scalar_to_python(item));
  return items;
}

Q::GgufValueType value_type_named(const std::string& name, const std::string& key) {
  const auto type = Q::gguf_value_type_from_name(name);
  if (!type || *type == Q::GgufValueType::array) {
    throw Q::Error("metadata[" + key + "]: type \"" + name +
                   "\" (expected u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, bool or str)");
  }
  return *type;
}

template <class T>
T integer_in_range(const py::handle& item, const std::string& key) {
  if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item)) {
    throw Q::Error("metadata[" + key + "]: " + std::string(py::str(py::repr(item))) +
                   " is not an integer");
  }
  try {
    return item.cast<T>();
  } catch (const py::cast_error&) {
    throw Q::Error("metadata[" + key + "]: " + std::string(py::str(item)) +
                   " does not fit the type");
  }
}

Q::GgufScalar scalar_from_python(const py::handle& item, Q::GgufValueType type,
                                 const std::string& key) {
  using V = Q::GgufValueType;
  switch (type) {
    case V::uint8:
      return integer_in_range<std::uint8_t>(item, key);
    case V::int8:
      return integer_in_range<std::int8_t>(item, key);
    case V::uint16:
      return integer_in_range<std::uint16_t>(item, key);
    case V::int16:
      return integer_in_range<std::int16_t>(item, key);
    case V::uint32:
      return integer_in_range<std::uint32_t>(item, key);
    case V::int32:
      return integer_in_range<std::int32_t>(item, key);
    case V::uint64:
      return integer_in_range<std::uint64_t>(item, key);
    case V::int64:
      return integer_in_range<std::int64_t>(item, key);
    case V::float32:
      return item.cast<float>();
    case V::float64:
      return item.cast<double>();
    case V::boolean:
      if (!py::isinstance<py::bool_>(item)) {
        throw Q::Error("metadata[" + key + "]: expected True or False");
      }
      return item.cast<bool>();
    case V::string:
      if (!py::isinstance<py::str>(item)) throw Q::Error("metadata[" + key + "]: expected a str");
      return item.cast<std::string>();
    case V::array:
      break;
  }
  throw Q::Error("metadata[" + key + "]: nested arrays are not allowed");
}

// metadata: a list of (key, type name, is_array, value).
Q::GgufMetadata metadata_from_python(const py::list& entries) {
  Q::GgufMetadata m;
  for (const py::handle& entry : entries) {
    const auto t = entry.cast<py::tuple>();
    const std::string key = t[0].cast<std::string>();
    const Q::GgufValueType type = value_type_named(t[1].cast<std::string>(), key);
    if (t[2].cast<bool>()) {
      std::vector<Q::GgufScalar> items;
      for (const py::handle& item : t[3])
        items.push_back(scalar_from_python(item, type, key));
      m.append(key, Q::GgufValue::array(type, std::move(items)));
    } else {
      m.append(key, Q::GgufValue(scalar_from_python(t[3], type, key)));
    }
  }
  return m;
}

py::array_t<std::uint8_t> bytes_array(std::span<const std::byte> bytes) {
  py::array_t<std::uint8_t> out(static_cast<py::ssize_t>(bytes.size()));
  if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace

void bind_gguf(py::module_& m) {
  m.def(
      "_gguf_read",
      [](const std::string& path) {
        const Q::GgufFile file = Q::GgufFile::open(path);
        py::list metadata;
        for (const auto& [key, value] : file.metadata().entries()) {
          metadata.append(py::make_tuple(key, std::string(Q::to_string(value.element_type())),
                                         value.is_array(), value_to_python(value)));
        }
        py::list tensors;
        for (const Q::GgufTensorInfo& t : file.tensors()) {
          tensors.append(py::make_tuple(t.name, ggml_name(t.type), t.shape(), t.offset, t.nbytes));
        }
        return py::make_tuple(file.header().version, file.header().alignment,
                              file.header().data_offset, metadata, tensors);
      },
      py::arg("path"), "Native part of lucidq.gguf.read.");

  m.def(
      "_gguf_tensor",
      [](const std::string& path, const std::string& name, bool decode) -> py::array {
        const Q::GgufFile file = Q::GgufFile::open(path);
        const Q::GgufTensorInfo* t = file.find(name);
        if (t == nullptr) throw Q::Error(path + ": no tensor named \"" + name + "\"");
        const auto bytes = file.bytes(*t);
        if (!decode) {
          py::array copy = bytes_array(bytes);
          file.check_intact();  // a copy read from a shrinking file holds zeros
          return copy;
        }
        py::array_t<float> out(t->shape());
        if (t->numel() > 0) {
          py::gil_scoped_release release;
          Q::ggml_dequantize_rows(t->type, bytes.data(), out.mutable_data(), t->rows(),
                                  t->row_length());
        }
        file.check_intact();
        return out;
      },
      py::arg("path"), py::arg("name"), py::arg("decode"), "Native part of lucidq.gguf reads.");

  m.def(
      "_gguf_write",
      [](const std::string& path, const py::list& metadata, const std::vector<std::string>& names,
         const std::vector<std::string>& types,
         const std::vector<std::vector<std::int64_t>>& shapes, const std::vector<py::array>& blobs,
         bool overwrite) {
        std::vector<Q::GgufTensorSpec> specs;
        for (std::size_t i = 0; i < names.size(); ++i) {
          specs.push_back({names[i], Q::gguf_dims_of(shapes[i]), ggml_type_named(types[i])});
        }
        Q::GgufWriter writer(path, metadata_from_python(metadata), specs, overwrite);
        for (std::size_t i = 0; i < names.size(); ++i) {
          const auto* data = static_cast<const std::byte*>(blobs[i].data());
          writer.write(names[i], std::span<const std::byte>(
                                     data, static_cast<std::size_t>(blobs[i].nbytes())));
        }
        writer.commit();
      },
      py::arg("path"), py::arg("metadata"), py::arg("names"), py::arg("types"), py::arg("shapes"),
      py::arg("blobs"), py::arg("overwrite"), "Native part of lucidq.gguf.write.");

  m.def(
      "_gguf_quantize_file",
      [](const std::string& input, const std::string& output, const std::string& preset,
         const std::optional<std::string>& imatrix_path, bool pure, bool leave_output_tensor,
         const std::optional<std::string>& output_tensor_type,
         const std::optional<std::string>& token_embedding_type,
         const std::optional<std::string>& recipe_json,
         const std::optional<std::string>& recipe_path, const py::list& metadata,
         bool allow_requantize, bool overwrite, const py::object& progress) {
        Q::GgufQuantizeOptions options;
        const auto file_type = Q::llama_file_type_from_name(preset);
        if (!file_type) {
          throw Q::Error("type = \"" + preset + "\" is not a preset (expected one of " +
                         Q::llama_file_type_names() + ")");
        }
        options.mixture.file_type = *file_type;
        options.mixture.pure = pure;
        options.mixture.leave_output_tensor = leave_output_tensor;
        if (output_tensor_type) {
          options.mixture.output_tensor_type = ggml_type_named(*output_tensor_type);
        }
        if (token_embedding_type) {
          options.mixture.token_embedding_type = ggml_type_named(*token_embedding_type);
        }
        options.recipe = recipe_from(recipe_json, recipe_path);
        options.metadata = metadata_from_python(metadata);
        options.allow_requantize = allow_requantize;
        options.overwrite = overwrite;
        options.progress = progress_callback(progress);
        std::optional<Q::ImportanceMatrix> imatrix;
        if (imatrix_path) {
          imatrix = Q::load_importance_matrix(*imatrix_path);
          options.imatrix = &*imatrix;
        }
        Q::CheckpointReport report;
        {
          py::gil_scoped_release release;
          report = Q::quantize_gguf(input, output, options);
        }
        return Q::report_to_json(report);
      },
      py::arg("input"), py::arg("output"), py::arg("type"), py::arg("imatrix"), py::arg("pure"),
      py::arg("leave_output_tensor"), py::arg("output_tensor_type"),
      py::arg("token_embedding_type"), py::arg("recipe_json"), py::arg("recipe_path"),
      py::arg("metadata"), py::arg("allow_requantize"), py::arg("overwrite"), py::arg("progress"),
      "Native part of lucidq.gguf.quantize_file; returns the report as JSON text.");

  m.def(
      "_gguf_dequantize_file",
      [](const std::string& input, const std::string& output, bool overwrite) {
        Q::DequantizeGgufOptions options;
        options.overwrite = overwrite;
        options.progress = progress_callback(py::none());  // Ctrl-C stops it between tensors
        Q::DequantizeSummary s;
        {
          py::gil_scoped_release release;
          s = Q::dequantize_gguf(input, output, options);
        }
        return py::make_tuple(s.dequantized, s.copied);
      },
      py::arg("input"), py::arg("output"), py::arg("overwrite"),
      "Native part of lucidq.gguf.dequantize_file.");
}

}  // namespace lucidq_python
