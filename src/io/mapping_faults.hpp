// Internal: bus errors on memory-mapped inputs (a file that shrinks while it is read) become
// counted faults instead of killing the process.
#pragma once

#include <cstddef>

namespace lucid::quantization::detail {

/// Guards the mapped range [data, data + size): a SIGBUS on one of its pages (the file shrank
/// under the mapping, or its storage failed) maps zero-filled pages over the rest of the
/// range and counts the fault, in whatever thread it happens; the reader then checks
/// mapping_faulted() and throws. The first call installs the process's SIGBUS handler; bus
/// errors outside guarded ranges go to the handler that was installed before (by default,
/// they still kill the process). Returns a slot for the other calls, or -1 when all slots are
/// taken (the range is then unguarded). Never throws.
int guard_mapping(const std::byte* data, std::size_t size) noexcept;
/// Ends the guard of `slot` (call it before unmapping). -1 is ignored.
void unguard_mapping(int slot) noexcept;
/// Whether a bus error hit the range of `slot` since guard_mapping(). False for -1.
bool mapping_faulted(int slot) noexcept;

}  // namespace lucid::quantization::detail
