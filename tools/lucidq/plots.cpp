// Plot files of quantized tensors: naming, existence checks and the quantize --plots callback.
#include "plots.hpp"

#include <cairo.h>
#include <fontconfig/fontconfig.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/plot.hpp"
#include "output_files.hpp"

namespace lucidq::cli {

namespace Q = lucid::quantization;

std::pair<std::filesystem::path, std::filesystem::path> plot_paths(const std::filesystem::path& dir,
                                                                   std::string_view name) {
  std::string file(name);
  std::replace(file.begin(), file.end(), '/', '_');
  return {dir / (file + ".errors.png"), dir / (file + ".report.png")};
}

void free_font_caches_at_exit() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit([] {
      cairo_debug_reset_static_data();
      FcFini();
    });
  });
}

namespace {

// Checks the figures' paths up front and creates `dir`.
void prepare_plot_dir(const std::filesystem::path& dir, bool force,
                      const std::vector<std::string>& planned, bool with_report) {
  for (const std::string& name : planned) {
    const auto [errors, report] = plot_paths(dir, name);
    check_new_output(errors, force);
    if (with_report) check_new_output(report, force);
  }
  free_font_caches_at_exit();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    throw Q::Error(dir.string() + ": cannot create the plot directory (" + error.message() + ")");
  }
}

// Each value's rank among the distinct values of its 32-value block (blocks run along rows).
std::vector<std::int32_t> level_ranks(const std::vector<float>& values, std::int64_t row) {
  std::vector<std::int32_t> ranks(values.size());
  std::vector<float> levels;
  constexpr std::int64_t kBlock = 32;
  const auto n = static_cast<std::int64_t>(values.size());
  for (std::int64_t start = 0; start < n; start += row) {
    for (std::int64_t b = start; b < std::min(n, start + row); b += kBlock) {
      const std::int64_t e = std::min({n, start + row, b + kBlock});
      levels.assign(values.begin() + b, values.begin() + e);
      std::sort(levels.begin(), levels.end());
      levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
      for (std::int64_t k = b; k < e; ++k) {
        const auto at =
            std::lower_bound(levels.begin(), levels.end(), values[static_cast<std::size_t>(k)]);
        ranks[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(at - levels.begin());
      }
    }
  }
  return ranks;
}

}  // namespace

ReconstructionCallback reconstruction_plot_writer(const std::filesystem::path& dir, bool force,
                                                  const std::vector<std::string>& planned,
                                                  std::vector<std::string>& written) {
  prepare_plot_dir(dir, force, planned, /*with_report=*/false);
  return [dir, force, &written](std::string_view name, const Q::TensorView& original,
                                const Q::TensorView& reconstructed) {
    const auto [errors, report] = plot_paths(dir, name);
    const std::vector<float> decoded = Q::to_float32(reconstructed, "reconstructed");
    const std::int64_t row = original.shape.empty() ? 1 : original.shape.back();
    Q::PlotOptions options;
    options.overwrite = force;
    options.title = std::string(name) + ": ggml blocks (codes: level rank in each 32-value block)";
    Q::plot_quantization_errors(original, level_ranks(decoded, std::max<std::int64_t>(row, 1)),
                                reconstructed, errors, options);
    written.push_back(errors.string());
  };
}

TensorCallback plot_writer(const std::filesystem::path& dir, bool force,
                           const std::vector<std::string>& planned,
                           std::vector<std::string>& written) {
  prepare_plot_dir(dir, force, planned, /*with_report=*/true);
  return [dir, force, &written](std::string_view name, const Q::TensorView& original,
                                const Q::QuantizedTensor& quantized) {
    const auto [errors, report] = plot_paths(dir, name);
    Q::PlotOptions options;
    options.overwrite = force;
    Q::plot_quantization_errors(original, quantized, errors, options);
    written.push_back(errors.string());
    Q::plot_tensor_report(original, quantized, report, options);
    written.push_back(report.string());
  };
}

}  // namespace lucidq::cli
