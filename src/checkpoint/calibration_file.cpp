// The calibration statistics file (safetensors, format "lucidq.calibration") read into
// TensorCalibration entries.
#include <cmath>
#include <set>
#include <string>

#include "lucid/quantization/checkpoint_algorithms.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/safetensors.hpp"

namespace lucid::quantization {
namespace {

const char* const fields[] = {"hessian", "abs_max", "abs_sum", "square_sum", "rows"};

template <class T>
std::vector<T> read_vector(const SafetensorsFile& file, const std::string& name, ScalarType type,
                           const Shape& shape) {
  const SafetensorsEntry* entry = file.find(name);
  if (entry == nullptr) {
    throw Error(file.path().string() + ": tensor " + name + " is missing (every statistics " +
                "tensor needs .abs_max, .abs_sum, .square_sum and .rows)");
  }
  if (entry->type != type || entry->shape != shape) {
    throw Error(file.path().string() + ": " + name + " is " +
                std::string(to_safetensors_name(entry->type)) + " " + to_string(entry->shape) +
                ", expected " + std::string(to_safetensors_name(type)) + " " + to_string(shape));
  }
  const TensorView view = file.view(*entry);
  const T* data = view.data_as<T>();
  std::vector<T> out(data, data + view.numel());
  for (std::size_t i = 0; i < out.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(out[i])) {
        throw Error(file.path().string() + ": " + name + " element " + std::to_string(i) +
                    " is not finite; expected finite statistics");
      }
    }
  }
  return out;
}

}  // namespace

CalibrationStatistics load_calibration_statistics(const std::filesystem::path& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  const auto format = file.metadata().find("format");
  if (format == file.metadata().end() || format->second != "lucidq.calibration") {
    throw Error(
        path.string() + ": __metadata__ format is " +
        (format == file.metadata().end() ? std::string("missing") : "'" + format->second + "'") +
        ", expected 'lucidq.calibration' (a calibration statistics file, docs/formats.md)");
  }
  std::set<std::string> names;
  for (const SafetensorsEntry& entry : file.header().entries) {
    const auto dot = entry.name.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string field = entry.name.substr(dot + 1);
    for (const char* f : fields) {
      if (field == f) names.insert(entry.name.substr(0, dot));
    }
  }
  CalibrationStatistics stats;
  stats.path = path.string();
  for (const std::string& name : names) {
    TensorCalibration t;
    const SafetensorsEntry* amax = file.find(name + ".abs_max");
    if (amax == nullptr || amax->shape.size() != 1) {
      throw Error(path.string() + ": " + name + ".abs_max is missing or not 1-D");
    }
    t.features = amax->shape[0];
    const Shape k{t.features};
    t.abs_max = read_vector<float>(file, name + ".abs_max", ScalarType::float32, k);
    t.abs_sum = read_vector<double>(file, name + ".abs_sum", ScalarType::float64, k);
    t.square_sum = read_vector<double>(file, name + ".square_sum", ScalarType::float64, k);
    t.rows = read_vector<std::int64_t>(file, name + ".rows", ScalarType::int64, Shape{1})[0];
    if (t.rows < 1) {
      throw Error(path.string() + ": " + name + ".rows is " + std::to_string(t.rows) +
                  "; expected >= 1 calibration row");
    }
    if (file.find(name + ".hessian") != nullptr) {
      t.hessian = read_vector<double>(file, name + ".hessian", ScalarType::float64,
                                      Shape{t.features, t.features});
    }
    stats.tensors.emplace(name, std::move(t));
  }
  file.check_intact();
  return stats;
}

}  // namespace lucid::quantization
