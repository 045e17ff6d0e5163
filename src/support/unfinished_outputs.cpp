// The registry of temporary output files in flight, and remove_unfinished_outputs(), which
// unlinks them from a signal handler (fixed slots, atomics and unlink(2) only).
#include "support/unfinished_outputs.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "lucid/quantization/unfinished_outputs.hpp"

namespace lucid::quantization {
namespace {

enum : int { kFree = 0, kFilling = 1, kLive = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[4096] = {};
};

constexpr int kSlots = 64;
Slot g_slots[kSlots];

static_assert(std::atomic<int>::is_always_lock_free);

}  // namespace

namespace detail {

int remember_unfinished_output(const char* path) noexcept {
  const std::size_t length = std::strlen(path);
  if (length >= sizeof(Slot::path)) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path, length + 1);
    g_slots[i].state.store(kLive, std::memory_order_release);
    return i;
  }
  return -1;
}

void forget_unfinished_output(int slot) noexcept {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].state.store(kFree, std::memory_order_release);
}

}  // namespace detail

int remove_unfinished_outputs() noexcept {
  int removed = 0;
  for (Slot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) != kLive) continue;
    if (::unlink(slot.path) == 0) ++removed;
  }
  return removed;
}

}  // namespace lucid::quantization
