// Internal: splitting element ranges over OpenMP threads so results never depend on the count.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace lucid::quantization::kernels {

/// Inputs with fewer elements per thread than this stay on fewer threads
/// (128 KiB of float32: below it, waking a thread costs more than it saves).
constexpr std::int64_t min_elements_per_thread = 32768;

/// How many threads to use for `n` elements: num_threads(), fewer when each
/// would get less than `grain` elements, at least 1.
int threads_for(std::int64_t n, std::int64_t grain = min_elements_per_thread);

/// The piece [begin, end) of [0, n) that thread `index` of `count` handles:
/// contiguous, in order, every begin except 0 a multiple of `align`.
inline std::pair<std::int64_t, std::int64_t> piece_of(std::int64_t n, int count, int index,
                                                      std::int64_t align) {
  const auto boundary = [&](int k) -> std::int64_t {
    if (k == 0) return 0;
    if (k == count) return n;
    const std::int64_t at = n / count * k + n % count * k / count;
    return std::min(n, at / align * align);
  };
  return {boundary(index), boundary(index + 1)};
}

/// Calls body(piece_index, begin, end) for the `pieces` pieces of [0, n)
/// (see piece_of), one per thread. The pieces depend only on `pieces`, not on
/// how many threads OpenMP grants. `body` must not throw. Elementwise work
/// split this way gives the same bytes for any thread count.
template <class Body>
void parallel_pieces(std::int64_t n, int pieces, std::int64_t align, Body&& body) {
  if (pieces <= 1) {
    if (n > 0) body(0, std::int64_t{0}, n);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for num_threads(pieces) schedule(static, 1)
#endif
  for (int index = 0; index < pieces; ++index) {
    const auto [begin, end] = piece_of(n, pieces, index, align);
    if (begin < end) body(index, begin, end);
  }
}

}  // namespace lucid::quantization::kernels
