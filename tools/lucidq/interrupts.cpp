// The CLI's SIGINT / SIGTERM / SIGHUP handler: async-signal-safe calls only (unlink, write,
// _exit) on data prepared before the signal.
#include "interrupts.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "lucid/quantization/unfinished_outputs.hpp"

namespace lucidq::cli {
namespace {

char g_output[4096];
std::atomic<bool> g_has_output{false};
bool g_stderr_is_terminal = false;

void write_text(const char* text, std::size_t length) {
  while (length > 0) {
    const ssize_t done = ::write(STDERR_FILENO, text, length);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return;
    text += done;
    length -= static_cast<std::size_t>(done);
  }
}

void write_text(const char* text) {
  std::size_t length = 0;
  while (text[length] != '\0')
    ++length;
  write_text(text, length);
}

void on_interrupt(int signal_number) {
  lucid::quantization::remove_unfinished_outputs();
  if (g_stderr_is_terminal) write_text("\r\x1b[2K");  // over the progress bar
  write_text("lucidq: interrupted");
  if (g_has_output.load()) {
    write_text(": ");
    write_text(g_output);
    write_text(" was not written");
  }
  write_text("\n");
  ::_exit(128 + signal_number);
}

}  // namespace

void install_interrupt_handlers() {
  g_stderr_is_terminal = ::isatty(STDERR_FILENO) == 1;
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP})
    sigaddset(&action.sa_mask, signal_number);  // one handler at a time
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction previous {};
    ::sigaction(signal_number, nullptr, &previous);
    if (previous.sa_handler == SIG_IGN) continue;  // e.g. SIGHUP under nohup: stay ignored
    ::sigaction(signal_number, &action, nullptr);
  }
}

JobOutput::JobOutput(const std::string& path) {
  const std::size_t length = std::min(path.size(), sizeof g_output - 1);
  g_has_output.store(false);
  std::memcpy(g_output, path.data(), length);
  g_output[length] = '\0';
  g_has_output.store(true);
}

JobOutput::~JobOutput() {
  g_has_output.store(false);
}

}  // namespace lucidq::cli
