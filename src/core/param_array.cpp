// The storage of ParamArray: large arrays in (reused) huge-page mappings, small ones from new.
#include "lucid/quantization/param_array.hpp"

#include "core/large_buffer.hpp"
#include "core/mapping_cache.hpp"

namespace lucid::quantization::detail {
namespace {

// Arrays from 1 MiB on are mapped (a 2 MiB huge page at least, so at most twice their size):
// below ByteBuffer's 4 MiB because the heap returns blocks of this size to the OS when they are
// freed (glibc trims its top), and the next array of the same size then faults in again 4 KiB at
// a time; 256 MB of float32 in groups of 128 has two arrays of 1.86 MB, 878 faults a call.
constexpr std::size_t mapped_from = std::size_t{1} << 20;

bool is_mapped(std::size_t bytes) {
  return maps_large && bytes >= mapped_from;
}

}  // namespace

// A mapped array takes a kept mapping of exactly its length (its deallocation knows only the
// byte count, so the length must follow from it).
void* allocate_param_bytes(std::size_t bytes) {
  if (!is_mapped(bytes)) return ::operator new(bytes);
  const std::size_t length = mapped_length(bytes);
  if (void* kept = take_cached_mapping(length, length).first) return kept;
  return map_large(bytes);
}

void free_param_bytes(void* data, std::size_t bytes) noexcept {
  if (is_mapped(bytes)) {
    keep_mapping(data, mapped_length(bytes));
  } else {
    ::operator delete(data);
  }
}

}  // namespace lucid::quantization::detail
