// ParamArray: the std::vector that holds QParams' scales and zero points; large ones on huge pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace lucid::quantization {

namespace detail {
/// `bytes` of storage aligned for any scalar: arrays of 1 MiB and more are a mapping of their own
/// on 2 MiB boundaries, advised transparent huge pages (see ParamAllocator); smaller ones come
/// from operator new. Throws std::bad_alloc.
void* allocate_param_bytes(std::size_t bytes);
/// Returns storage from allocate_param_bytes(bytes), `bytes` the same.
void free_param_bytes(void* data, std::size_t bytes) noexcept;
}  // namespace detail

/// The allocator of QParams' arrays. Per-group parameters of a large tensor are megabytes
/// (2 x 7.5 MB for 256 MB of float32 in groups of 32); from the heap, their first touch takes a
/// page fault per 4 KiB, which on virtual machines costs as much as quantizing the tensor. Arrays
/// of 1 MiB and more are therefore mapped on huge-page boundaries (a few faults each, at most
/// twice their size in memory) and reused once freed; smaller ones behave as std::allocator's.
/// Elements made without a value (ParamArray(n), resize(n)) are default-initialised, as by
/// new T[n]: a float or int32 is left unset for the producer (a kernel, a file read) to write, so
/// that megabytes of parameters are not written twice. Stateless: all instances are equal.
template <class T>
struct ParamAllocator {
  using value_type = T;

  ParamAllocator() = default;
  template <class U>
  constexpr ParamAllocator(const ParamAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(detail::allocate_param_bytes(n * sizeof(T)));
  }
  void deallocate(T* data, std::size_t n) noexcept {
    detail::free_param_bytes(data, n * sizeof(T));
  }
  /// Default-initialises (leaves an arithmetic U unset); with arguments, constructs from them.
  template <class U>
  void construct(U* at) noexcept(noexcept(U())) {
    ::new (static_cast<void*>(at)) U;
  }
  template <class U, class... Args>
  void construct(U* at, Args&&... args) {
    ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
  }

  friend constexpr bool operator==(const ParamAllocator&, const ParamAllocator&) noexcept {
    return true;
  }
};

/// A vector of parameters (scales, zero points) as QParams holds them; ParamArray(n) and
/// resize(n) leave the new elements unset (ParamAllocator), ParamArray(n, value) sets them.
template <class T>
using ParamArray = std::vector<T, ParamAllocator<T>>;

}  // namespace lucid::quantization
