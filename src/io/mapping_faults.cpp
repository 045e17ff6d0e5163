// SIGBUS on guarded file mappings: zero pages over the rest of the range and a fault count,
// so that a file truncated while it is mapped gives a clean error instead of a crash.
//
// The handler only reads lock-free atomics and calls mmap(2) and sigaction(2), both plain
// system calls; it never allocates or takes a lock, so it may run in any thread at any time.
#include "io/mapping_faults.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace lucid::quantization::detail {
namespace {

struct Slot {
  std::atomic<bool> taken{false};
  std::atomic<std::uintptr_t> begin{0};  // 0: no live range (set last, cleared first)
  std::atomic<std::uintptr_t> end{0};    // page-rounded end of the mapping
  std::atomic<int> faults{0};
};

constexpr int kSlots = 256;  // files mapped at the same time; more are simply unguarded
Slot g_slots[kSlots];
std::uintptr_t g_page = 4096;
struct sigaction g_previous {};
std::once_flag g_install_once;

static_assert(std::atomic<std::uintptr_t>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

// Passes a bus error that is not ours to the handler installed before ours.
void forward(int signal_number, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(signal_number, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signal_number);
    return;
  }
  // The default action: restore it; a fault then repeats on return and ends the process,
  // a signal sent by kill(2) is raised again.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(SIGBUS, &fallback, nullptr);
  if (info == nullptr || info->si_code <= 0) ::raise(SIGBUS);
}

void on_bus_error(int signal_number, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info != nullptr ? info->si_addr : nullptr);
  if (info != nullptr && info->si_code > 0) {
    for (Slot& slot : g_slots) {
      const std::uintptr_t begin = slot.begin.load(std::memory_order_acquire);
      const std::uintptr_t end = slot.end.load(std::memory_order_acquire);
      if (begin == 0 || address < begin || address >= end) continue;
      // Every page from here on lies past the new end of the file (or on failed storage):
      // read them as zeros; the reader reports the fault before anything is kept.
      const std::uintptr_t page = address / g_page * g_page;
      void* zeros = ::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (zeros == MAP_FAILED) break;
      slot.faults.fetch_add(1, std::memory_order_release);
      return;
    }
  }
  forward(signal_number, info, context);
}

void install_handler() {
  g_page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  struct sigaction action {};
  action.sa_sigaction = on_bus_error;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &g_previous);
}

}  // namespace

int guard_mapping(const std::byte* data, std::size_t size) noexcept {
  if (data == nullptr || size == 0) return -1;
  try {
    std::call_once(g_install_once, install_handler);
  } catch (...) {
    return -1;
  }
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!g_slots[i].taken.compare_exchange_strong(expected, true)) continue;
    const auto begin = reinterpret_cast<std::uintptr_t>(data);
    g_slots[i].faults.store(0, std::memory_order_relaxed);
    g_slots[i].end.store((begin + size + g_page - 1) / g_page * g_page, std::memory_order_release);
    g_slots[i].begin.store(begin, std::memory_order_release);
    return i;
  }
  return -1;
}

void unguard_mapping(int slot) noexcept {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].begin.store(0, std::memory_order_release);
  g_slots[slot].end.store(0, std::memory_order_release);
  g_slots[slot].taken.store(false, std::memory_order_release);
}

bool mapping_faulted(int slot) noexcept {
  if (slot < 0 || slot >= kSlots) return false;
  return g_slots[slot].faults.load(std::memory_order_acquire) > 0;
}

}  // namespace lucid::quantization::detail
