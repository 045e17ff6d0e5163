// `lucidq info`: the version, the CPU features found, the kernel tiers and the one in use,
// and the thread count.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>

#include "commands.hpp"
#include "lucid/quantization/runtime.hpp"
#include "lucid/quantization/version.hpp"

namespace lucidq::cli {
namespace {

namespace Q = lucid::quantization;

std::string joined_tiers() {
  std::string text;
  for (const Q::Isa isa : Q::supported_isas())
    text += (text.empty() ? "" : ", ") + Q::to_string(isa);
  return text;
}

// "(from LUCIDQ_ISA)" when the variable chose the value, else `otherwise`.
std::string origin(const char* variable, const char* otherwise) {
  const char* value = std::getenv(variable);
  return value && *value ? fmt::format("(from {}={})", variable, value) : otherwise;
}

void print_info() {
  fmt::print("lucidq {}\n", Q::version);
  fmt::print("  CPU features   {}\n", Q::cpu_features().describe());
  fmt::print("  kernel tiers   {} (supported by this CPU)\n", joined_tiers());
  fmt::print(
      "  tier in use    {} {}\n", Q::to_string(Q::active_isa()),
      origin("LUCIDQ_ISA", "(the best supported; pin with LUCIDQ_ISA=reference|avx2|avx512)"));
  fmt::print("  threads        {} {}\n", Q::num_threads(),
             origin("LUCIDQ_NUM_THREADS", "(LUCIDQ_NUM_THREADS or OMP_NUM_THREADS to change)"));
}

}  // namespace

void add_info_command(CLI::App& app) {
  CLI::App* info = app.add_subcommand(
      "info", "Show the CPU features found, the kernel tier in use and the thread count");
  info->footer(
      "Examples:\n"
      "  lucidq info\n"
      "  LUCIDQ_ISA=reference lucidq info      pin the scalar reference kernels");
  info->callback(print_info);
}

}  // namespace lucidq::cli
