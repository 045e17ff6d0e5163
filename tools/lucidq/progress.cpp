// The checkpoint progress bar: redrawn in place on a terminal's stderr, silent elsewhere.
#include "progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace lucidq::cli {

namespace Q = lucid::quantization;

ProgressBar::ProgressBar(bool enabled) : active_(enabled && ::isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::update(const Q::CheckpointProgress& p) {
  if (!active_) return;
  constexpr int width = 30;
  const double fraction =
      p.bytes_total == 0 ? 1.0
                         : static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total);
  const int filled = static_cast<int>(fraction * width);
  std::string name(p.tensor.substr(0, 40));
  fmt::print(stderr, "\r\x1b[2K[{}{}] {:3.0f}%  {} / {}  {}", std::string(filled, '#'),
             std::string(width - filled, '.'), 100 * fraction, Q::format_bytes(p.bytes_done),
             Q::format_bytes(p.bytes_total), name);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (!drawn_) return;
  fmt::print(stderr, "\r\x1b[2K");
  std::fflush(stderr);
  drawn_ = false;
}

Q::ProgressCallback ProgressBar::callback() {
  if (!active_) return {};
  return [this](const Q::CheckpointProgress& p) { update(p); };
}

}  // namespace lucidq::cli
