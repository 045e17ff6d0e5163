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

TensorCallback plot_writer(const std::filesystem::path& dir, bool force,
                           const std::vector<std::string>& planned,
                           std::vector<std::string>& written) {
  for (const std::string& name : planned) {
    const auto [errors, report] = plot_paths(dir, name);
    check_new_output(errors, force);
    check_new_output(report, force);
  }
  free_font_caches_at_exit();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    throw Q::Error(dir.string() + ": cannot create the plot directory (" + error.message() + ")");
  }
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
