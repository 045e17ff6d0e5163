// Removing the temporary files of outputs still being written, from a signal handler.
#pragma once

namespace lucid::quantization {

/// Every output file of the library (safetensors, GGUF, reports, plots) is written under a
/// hidden temporary name beside its target and renamed into place when complete; an error or
/// an exception removes the temporary file. A signal that ends the process does not unwind,
/// so a program that handles SIGINT, SIGTERM or SIGHUP calls this from its handler before it
/// exits: it unlinks the temporary file of every output this process is still writing and
/// returns how many it removed. The targets are untouched. Async-signal-safe (unlink(2) only,
/// no allocation, no lock) and never throws; writers still running afterwards fail. Up to 64
/// outputs in flight are tracked.
///
///   void on_signal(int sig) { lucid::quantization::remove_unfinished_outputs(); _exit(128 + sig);
///   }
int remove_unfinished_outputs() noexcept;

}  // namespace lucid::quantization
