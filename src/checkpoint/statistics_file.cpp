// Statistics files told apart by content (lucidq calibration safetensors, llama.cpp imatrix
// GGUF or legacy .dat), and lucidq statistics read as an importance matrix.
#include <string>

#include "io/mapped_file.hpp"
#include "lucid/quantization/checkpoint_algorithms.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization {

StatisticsFileKind statistics_file_kind(const std::filesystem::path& path) {
  const std::string head =
      detail::read_file_head(path, 9, "a lucidq calibration safetensors or a llama.cpp imatrix");
  if (head.starts_with("GGUF")) return StatisticsFileKind::gguf_imatrix;
  // safetensors: a little-endian u64 header length, then the JSON header's '{'.
  if (head.size() == 9 && head[8] == '{') return StatisticsFileKind::lucidq_calibration;
  return StatisticsFileKind::legacy_imatrix;
}

ImportanceMatrix importance_matrix_of(const CalibrationStatistics& stats) {
  ImportanceMatrix out;
  out.format = "lucidq.calibration";
  out.path = stats.path;
  for (const auto& [name, t] : stats.tensors) {
    std::vector<float> weights(t.square_sum.size());
    for (std::size_t j = 0; j < weights.size(); ++j) {
      weights[j] = static_cast<float>(t.square_sum[j] / static_cast<double>(t.rows));
    }
    out.entries.emplace(name, std::move(weights));
  }
  return out;
}

namespace {

// load_imatrix, saying how a file that is neither safetensors nor GGUF was taken.
ImportanceMatrix load_imatrix_of_kind(const std::filesystem::path& path, StatisticsFileKind kind) {
  if (kind != StatisticsFileKind::legacy_imatrix) return load_imatrix(path);
  try {
    return load_imatrix(path);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (" + path.string() +
                " is neither safetensors nor GGUF, so it was read as a legacy llama.cpp imatrix)");
  }
}

}  // namespace

ImportanceMatrix load_importance_matrix(const std::filesystem::path& path) {
  const StatisticsFileKind kind = statistics_file_kind(path);
  if (kind == StatisticsFileKind::lucidq_calibration) {
    return importance_matrix_of(load_calibration_statistics(path));
  }
  return load_imatrix_of_kind(path, kind);
}

void load_weight_statistics(WeightQuantizerOptions& options, const std::filesystem::path& path) {
  const StatisticsFileKind kind = statistics_file_kind(path);
  if (kind == StatisticsFileKind::lucidq_calibration) {
    options.statistics = load_calibration_statistics(path);
  } else {
    options.importance = load_imatrix_of_kind(path, kind);
  }
}

}  // namespace lucid::quantization
