// The quantization-settings flags shared by `lucidq quantize` and `lucidq plot`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lucid/quantization/recipe.hpp"

namespace CLI {
class App;
}

namespace lucidq::cli {

/// --scheme, --dtype, --group-size and --axis as given on the command line.
struct SettingsFlags {
  std::string scheme = "per_channel_symmetric";
  std::string dtype = "qint8";
  std::int64_t group_size = 0;
  int axis = 0;
  bool axis_given = false;

  /// The settings the flags describe: --axis defaults to 0, or to -1 (the last axis) with
  /// --group-size. Throws lucid::quantization::Error naming the flag on a bad value.
  lucid::quantization::QuantSettings settings() const;
};

/// Adds the four flags to `cmd`, storing into `flags`.
void add_settings_flags(CLI::App& cmd, const std::shared_ptr<SettingsFlags>& flags);

}  // namespace lucidq::cli
