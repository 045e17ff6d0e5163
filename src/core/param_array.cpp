// The storage of ParamArray: large arrays in (reused) huge-page mappings, small ones from new.
#include "lucid/quantization/param_array.hpp"

#include "core/large_buffer.hpp"
#include "core/mapping_cache.hpp"

namespace lucid::quantization::detail {

// A large array takes a kept mapping of exactly its length (its deallocation knows only the
// byte count, so the length must follow from it).
void* allocate_param_bytes(std::size_t bytes) {
  if (!is_large(bytes)) return ::operator new(bytes);
  const std::size_t length = mapped_length(bytes);
  if (void* kept = take_cached_mapping(length, length).first) return kept;
  return map_large(bytes);
}

void free_param_bytes(void* data, std::size_t bytes) noexcept {
  if (data == nullptr) return;
  if (is_large(bytes)) {
    keep_mapping(data, mapped_length(bytes));
  } else {
    ::operator delete(data);
  }
}

}  // namespace lucid::quantization::detail
