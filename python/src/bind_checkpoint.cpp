// Bindings of the checkpoint job (quantize / dequantize a safetensors file, read what it holds).
#include <filesystem>

#include "common.hpp"

namespace lucidq_python {

// A ProgressCallback that calls `callback(done, total, bytes_done, bytes_total, tensor)` with
// the GIL held, and turns a pending signal (Ctrl-C) or a raised exception into a C++
// exception, which aborts the job: the output is never left half written.
Q::ProgressCallback progress_callback(const py::object& callback) {
  return [callback](const Q::CheckpointProgress& p) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (!callback.is_none()) {
      callback(p.tensors_done, p.tensor_count, p.bytes_done, p.bytes_total, std::string(p.tensor));
    }
  };
}

Q::QuantRecipe recipe_from(const std::optional<std::string>& recipe_json,
                           const std::optional<std::string>& recipe_path) {
  if (recipe_json && recipe_path) {
    throw Q::Error("recipe: give either a recipe object or a file path, not both");
  }
  if (recipe_json) return Q::parse_recipe(*recipe_json, "recipe");
  if (recipe_path) return Q::load_recipe(*recipe_path);
  return {};
}

namespace {

py::dict quantized_layout_dict(const Q::QuantizedTensorLayout& layout) {
  py::dict d;
  d["qscheme"] = layout.settings.qscheme;
  d["qdtype"] = layout.settings.qdtype;
  d["axis"] = layout.settings.axis;
  d["group_size"] = layout.settings.group_size;
  d["original_dtype"] = Q::to_string(layout.original_type);
  return d;
}

}  // namespace

void bind_checkpoint(py::module_& m) {
  m.def(
      "_quantize_checkpoint",
      [](const std::string& input, const std::string& output, const Q::QScheme scheme,
         const Q::QDtype& dtype, int axis, std::int64_t group_size,
         const std::vector<std::string>& include, const std::vector<std::string>& exclude,
         const std::optional<std::string>& recipe_json,
         const std::optional<std::string>& recipe_path, bool overwrite, bool strict,
         const py::object& progress) {
        Q::QuantizeCheckpointOptions options;
        const Q::QuantSettings settings{scheme, dtype, axis, group_size};
        options.recipe =
            Q::compose_recipe(exclude, recipe_from(recipe_json, recipe_path), include, settings);
        options.overwrite = overwrite;
        options.strict = strict;
        options.progress = progress_callback(progress);
        Q::CheckpointReport report;
        {
          py::gil_scoped_release release;
          report = Q::quantize_checkpoint(input, output, options);
        }
        return Q::report_to_json(report);
      },
      py::arg("input"), py::arg("output"), py::arg("scheme"), py::arg("dtype"), py::arg("axis"),
      py::arg("group_size"), py::arg("include"), py::arg("exclude"), py::arg("recipe_json"),
      py::arg("recipe_path"), py::arg("overwrite"), py::arg("strict"), py::arg("progress"),
      "Native part of lucidq.quantize_checkpoint; returns the report as JSON text.");

  m.def(
      "_dequantize_checkpoint",
      [](const std::string& input, const std::string& output,
         const std::optional<std::string>& dtype, bool overwrite, const py::object& progress) {
        Q::DequantizeCheckpointOptions options;
        options.dtype = std::nullopt;
        if (dtype) options.dtype = Q::scalar_type_from_string(*dtype);
        options.overwrite = overwrite;
        options.progress = progress_callback(progress);
        Q::DequantizeSummary summary;
        {
          py::gil_scoped_release release;
          summary = Q::dequantize_checkpoint(input, output, options);
        }
        py::dict d;
        d["dequantized"] = summary.dequantized;
        d["copied"] = summary.copied;
        d["input_bytes"] = summary.input_bytes;
        d["output_bytes"] = summary.output_bytes;
        return d;
      },
      py::arg("input"), py::arg("output"), py::arg("dtype"), py::arg("overwrite"),
      py::arg("progress"), "Native part of lucidq.dequantize_checkpoint.");

  m.def(
      "_inspect_checkpoint",
      [](const std::string& path) {
        const Q::SafetensorsFile file = Q::SafetensorsFile::open(path);
        const Q::CheckpointContents contents = Q::read_checkpoint_contents(file);
        py::list tensors;
        for (const Q::CheckpointTensor& t : contents.tensors) {
          py::dict d;
          d["name"] = t.entry.name;
          d["dtype"] = std::string(Q::to_safetensors_name(t.entry.type));
          d["shape"] = shape_tuple(t.quantized ? t.quantized->shape : t.entry.shape);
          d["nbytes"] = t.quantized ? t.quantized->nbytes() : t.entry.nbytes();
          d["quantized"] = t.quantized ? py::object(quantized_layout_dict(*t.quantized))
                                       : py::object(py::none());
          tensors.append(d);
        }
        py::dict result;
        result["format_version"] = contents.format_version
                                       ? py::object(py::str(*contents.format_version))
                                       : py::object(py::none());
        result["metadata"] = contents.user_metadata;
        result["tensors"] = tensors;
        return result;
      },
      py::arg("path"), "Native part of lucidq.inspect_checkpoint.");

  m.def(
      "_load_quantized_tensor",
      [](const std::string& path, const std::string& name) {
        const Q::SafetensorsFile file = Q::SafetensorsFile::open(path);
        for (const Q::CheckpointTensor& t : Q::read_checkpoint_contents(file).tensors) {
          if (t.entry.name == name && t.quantized) {
            try {
              Q::QuantizedTensor q = Q::load_quantized_tensor(file, *t.quantized);
              file.check_intact();  // a copy read from a shrinking file holds zeros
              return q;
            } catch (const Q::Error&) {
              file.check_intact();  // zeros read from a shrinking file: report that instead
              throw;
            }
          }
        }
        throw Q::Error(path + ": no quantized tensor named \"" + name +
                       "\" (inspect_checkpoint() lists what the file holds)");
      },
      py::arg("path"), py::arg("name"), "Native part of lucidq.load_quantized_tensor.");
}

}  // namespace lucidq_python
