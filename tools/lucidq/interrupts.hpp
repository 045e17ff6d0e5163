// Ctrl-C, SIGTERM and SIGHUP: unfinished outputs removed, one message, the shell's exit status.
#pragma once

#include <string>

namespace lucidq::cli {

/// Installs the handlers of SIGINT, SIGTERM and SIGHUP (main() calls it once). Each removes
/// the temporary files of the outputs still being written
/// (lucid::quantization::remove_unfinished_outputs), prints "lucidq: interrupted: OUTPUT was
/// not written" (just "lucidq: interrupted" outside a JobOutput scope) and exits with status
/// 128 + the signal number: 130, 143 and 129, as shells report a process a signal ended.
void install_interrupt_handlers();

/// Names the output the running job writes, for the interrupt message, while it lives.
/// One at a time; not thread-safe.
class JobOutput {
 public:
  explicit JobOutput(const std::string& path);
  ~JobOutput();
  JobOutput(const JobOutput&) = delete;
  JobOutput& operator=(const JobOutput&) = delete;
};

}  // namespace lucidq::cli
