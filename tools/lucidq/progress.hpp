// A one-line progress bar on stderr for the checkpoint subcommands (only on a terminal).
#pragma once

#include <cstdint>
#include <string_view>

#include "lucid/quantization/checkpoint.hpp"

namespace lucidq::cli {

/// Draws "[#####.....]  45%  0.90 / 2.00 GiB  name" on stderr, redrawn in place, when stderr
/// is a terminal and `enabled`; otherwise does nothing. The line is cleared by finish() or
/// the destructor, so the report printed afterwards starts on a clean line.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Redraws the bar; a ProgressCallback for the checkpoint jobs.
  void update(const lucid::quantization::CheckpointProgress& progress);
  /// Clears the line.
  void finish();
  /// A callback bound to this bar, or an empty one when the bar is off.
  lucid::quantization::ProgressCallback callback();

 private:
  bool active_;
  bool drawn_ = false;
};

}  // namespace lucidq::cli
