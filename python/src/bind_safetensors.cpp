// Bindings of safetensors reading and atomic writing (NumPy arrays in and out).
#include <map>

#include "common.hpp"

namespace lucidq_python {

void bind_safetensors(py::module_& m) {
  m.def(
      "_load_safetensors",
      [](const std::string& path, const std::optional<std::vector<std::string>>& names) {
        const Q::SafetensorsFile file = Q::SafetensorsFile::open(path);
        py::dict tensors;
        const auto load = [&](const Q::SafetensorsEntry& entry) {
          tensors[py::str(entry.name)] = tensor_to_numpy(Q::Tensor::copy_of(file.view(entry)));
        };
        if (!names) {
          for (const Q::SafetensorsEntry& entry : file.entries())
            load(entry);
        } else {
          for (const std::string& name : *names) {
            const Q::SafetensorsEntry* entry = file.find(name);
            if (entry == nullptr) {
              throw Q::Error(path + ": no tensor named \"" + name + "\" (the file holds " +
                             std::to_string(file.entries().size()) + " tensors)");
            }
            load(*entry);
          }
        }
        file.check_intact();  // a copy read from a shrinking file holds zeros
        return py::make_tuple(tensors, file.metadata());
      },
      py::arg("path"), py::arg("names"), "Native part of lucidq.load_safetensors.");

  m.def(
      "_save_safetensors",
      [](const std::string& path, const std::vector<std::string>& names,
         const std::vector<std::string>& types, const std::vector<py::array>& arrays,
         const std::map<std::string, std::string>& metadata, bool overwrite) {
        std::vector<Q::SafetensorsTensorSpec> specs;
        for (std::size_t i = 0; i < names.size(); ++i) {
          specs.push_back({names[i], Q::scalar_type_from_string(types[i]), shape_of(arrays[i])});
        }
        Q::SafetensorsWriter writer(path, specs, metadata, overwrite);
        for (std::size_t i = 0; i < names.size(); ++i) {
          const auto* bytes = static_cast<const std::byte*>(arrays[i].data());
          writer.write(names[i], std::span<const std::byte>(
                                     bytes, static_cast<std::size_t>(arrays[i].nbytes())));
        }
        writer.commit();
      },
      py::arg("path"), py::arg("names"), py::arg("types"), py::arg("arrays"), py::arg("metadata"),
      py::arg("overwrite"), "Native part of lucidq.save_safetensors.");
}

}  // namespace lucidq_python
