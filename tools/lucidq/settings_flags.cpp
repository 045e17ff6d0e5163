// --scheme / --dtype / --group-size / --axis: parsing into QuantSettings with flag-naming errors.
#include "settings_flags.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "lucid/quantization/error.hpp"

namespace lucidq::cli {

namespace Q = lucid::quantization;

Q::QuantSettings SettingsFlags::settings() const {
  Q::QuantSettings s;
  try {
    s.qscheme = Q::qscheme_from_string(scheme);
  } catch (const Q::Error& e) {
    throw Q::Error(std::string("--scheme: ") + e.what());
  }
  try {
    s.qdtype = Q::qdtype_from_string(dtype);
  } catch (const Q::Error& e) {
    throw Q::Error(std::string("--dtype: ") + e.what());
  }
  if (group_size < 0) {
    throw Q::Error(
        fmt::format("--group-size = {} (expected 0 for none, or a positive size)", group_size));
  }
  if (group_size > 0 && !Q::is_per_channel(s.qscheme)) {
    throw Q::Error(
        fmt::format("--group-size = {} with --scheme {} (expected a per_channel scheme for groups)",
                    group_size, scheme));
  }
  if (axis_given && !Q::is_per_channel(s.qscheme)) {
    throw Q::Error(fmt::format("--axis with --scheme {} (expected a per_channel scheme)", scheme));
  }
  s.group_size = group_size;
  s.axis = axis_given ? axis : (group_size > 0 ? -1 : 0);
  return s;
}

void add_settings_flags(CLI::App& cmd, const std::shared_ptr<SettingsFlags>& flags) {
  cmd.add_option("--scheme", flags->scheme,
                 "per_tensor_affine, per_tensor_symmetric, per_channel_affine or "
                 "per_channel_symmetric")
      ->capture_default_str();
  cmd.add_option("--dtype", flags->dtype,
                 "qint8, quint8, qint4, quint4, qint2, quint2, qint16, qint32 (also int8, uint4, "
                 "..., and ranges such as 'qint8[-127,127]')")
      ->capture_default_str();
  cmd.add_option("--group-size", flags->group_size,
                 "Per-group: one scale per this many elements along --axis (0: per channel)")
      ->capture_default_str();
  cmd.add_option("--axis", flags->axis,
                 "The channel axis; default 0 (output channels), or -1 (the last) with "
                 "--group-size")
      ->each([flags](const std::string&) { flags->axis_given = true; });
}

}  // namespace lucidq::cli
