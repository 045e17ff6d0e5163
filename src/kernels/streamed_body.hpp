// Splits an output at its first vector boundary so the body can take non-temporal stores.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lucid::quantization::kernels {

/// Runs an elementwise kernel over out[0, n) with non-temporal stores where they are possible:
/// plain(b, e) for the elements before out's first Align-byte boundary and after its last whole
/// vector of Align / sizeof(T) elements, streamed(b, e) for the whole aligned vectors between,
/// then a store fence, so the streamed lines are visible before whatever the caller stores next.
/// An out that is not sizeof(T)-aligned, or too short to hold one vector past the boundary, goes
/// to plain(0, n) alone. plain is never called with an empty range.
template <int Align, class T, class Plain, class Streamed>
void with_streamed_body(const T* out, std::int64_t n, Plain plain, Streamed streamed) {
  constexpr auto element = static_cast<std::int64_t>(sizeof(T));
  constexpr std::int64_t vector = Align / element;
  const auto address = reinterpret_cast<std::uintptr_t>(out);
  const auto head = static_cast<std::int64_t>((Align - address % Align) % Align) / element;
  if (address % element != 0 || head + vector > n) {
    if (n > 0) plain(0, n);
    return;
  }
  const std::int64_t body_end = head + (n - head) / vector * vector;
  if (head > 0) plain(0, head);
  streamed(head, body_end);
  _mm_sfence();
  if (body_end < n) plain(body_end, n);
}

}  // namespace lucid::quantization::kernels
