// Output files of the CLI: refuse to replace an existing file unless --force.
#include "output_files.hpp"

#include <system_error>

#include "lucid/quantization/error.hpp"

namespace lucidq::cli {

void check_new_output(const std::filesystem::path& path, bool force) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (std::filesystem::is_directory(status)) {
    throw lucid::quantization::Error(path.string() + ": is a directory (expected a file path)");
  }
  if (std::filesystem::exists(status) && !force) {
    throw lucid::quantization::Error(path.string() +
                                     ": already exists (expected a new path, or --force to "
                                     "replace it)");
  }
}

}  // namespace lucidq::cli
