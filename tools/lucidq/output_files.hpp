// The CLI's rule for output files: an existing file is replaced only with --force.
#pragma once

#include <filesystem>

namespace lucidq::cli {

/// Throws lucid::quantization::Error ("PATH already exists (expected a new path, or --force to
/// replace it)") when `path` exists and `force` is false, or when it is a directory. Checked
/// before a long job starts; the library checks again when it renames its output into place.
void check_new_output(const std::filesystem::path& path, bool force);

}  // namespace lucidq::cli
