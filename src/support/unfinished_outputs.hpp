// Internal: the registry of temporary output files that remove_unfinished_outputs() unlinks.
#pragma once

namespace lucid::quantization::detail {

/// Records the temporary file `path` (NUL-terminated) of an output being written. Returns
/// its slot for forget_unfinished_output(), or -1 when the registry is full or the path too
/// long (the file is then not removed by a signal handler). Never throws.
int remember_unfinished_output(const char* path) noexcept;
/// Drops `slot` (-1 is ignored): the file was renamed into place or removed.
void forget_unfinished_output(int slot) noexcept;

}  // namespace lucid::quantization::detail
