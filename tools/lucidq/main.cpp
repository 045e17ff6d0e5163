// lucidq command-line entry point: app setup, subcommand registration and the
// top-level error handling ("lucidq: error: <message>", exit code 1).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "commands.hpp"
#include "interrupts.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/version.hpp"
#include "quantize_checks.hpp"

namespace {

constexpr const char* description =
    "lucidq - linear quantization of neural-network tensors.\n"
    "\n"
    "Maps float tensors to small integer codes and back with\n"
    "  q = clamp(round(x / s) + z, q_min, q_max)    x_hat = s * (q - z)\n"
    "per tensor, per channel or per group, affine or symmetric, and measures\n"
    "the error that costs. A thin client of the lucid::quantization C++ API.\n";

constexpr const char* footer =
    "Examples:\n"
    "  lucidq demo                                  walk through the notes, then a checkpoint\n"
    "  lucidq quantize model.safetensors -o model.q8.safetensors --json report.json\n"
    "  lucidq quantize model.safetensors -o model.q4.safetensors --dtype qint4 --group-size 128\n"
    "  lucidq inspect model.q8.safetensors          what each tensor became\n"
    "  lucidq plot model.safetensors --tensor fc.weight -o fc.png\n"
    "  lucidq info                                  CPU features, kernel tier, threads\n"
    "  lucidq quantize --help                       every option of one subcommand\n"
    "\n"
    "Guide with worked examples: docs/cli.md";

void print_error(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "lucidq: error: {}\n", message);
}

// CLI11's help / version requests keep CLI11's behaviour (print, exit 0);
// every other parse error becomes "lucidq: error: ..." with exit code 1.
int handle_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
  const auto selected = app.get_subcommands();
  std::string message = e.what();
  if (selected.empty() && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    // CLI11 reports an unknown subcommand or option as a missing subcommand;
    // name the culprit instead.
    const std::vector<std::string> rest = app.remaining();
    if (!rest.empty()) {
      std::string known;
      for (const CLI::App* sub : app.get_subcommands({})) {
        known += (known.empty() ? "" : ", ") + sub->get_name();
      }
      const bool is_option = rest.front().starts_with('-');
      message = fmt::format(
          "unknown {} '{}' (expected {})", is_option ? "option" : "subcommand", rest.front(),
          is_option ? "--help, --version or a subcommand: " + known : "a subcommand: " + known);
    } else {
      fmt::print(stderr, "{}\n", app.help());
    }
  }
  if (!selected.empty() && dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr &&
      selected.back()->get_name() == "quantize") {
    std::vector<std::string> extras = selected.back()->remaining();
    if (extras.empty()) extras = app.remaining();
    const std::string hint = lucidq::cli::quantize_parse_hint(*selected.back(), extras);
    if (!hint.empty()) message += " (" + hint + ")";
  }
  print_error(message);
  const std::string help_command =
      selected.empty() ? "lucidq --help"
                       : fmt::format("lucidq {} --help", selected.back()->get_name());
  fmt::print(stderr, "Run '{}' for more information.\n", help_command);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  lucidq::cli::install_interrupt_handlers();
  CLI::App app{description, "lucidq"};
  app.footer(footer);
  app.set_version_flag("--version", fmt::format("lucidq {}", lucid::quantization::version),
                       "Print the version and exit");
  app.require_subcommand(1);
  app.get_formatter()->column_width(34);
  lucidq::cli::add_demo_command(app);
  lucidq::cli::add_quantize_command(app);
  lucidq::cli::add_dequantize_command(app);
  lucidq::cli::add_inspect_command(app);
  lucidq::cli::add_plot_command(app);
  lucidq::cli::add_info_command(app);
  lucidq::cli::add_bench_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return handle_parse_error(app, e);
  } catch (const lucid::quantization::Error& e) {
    print_error(e.what());
    return 1;
  } catch (const std::exception& e) {
    print_error(e.what());
    return 1;
  }
  return 0;
}
