// The lucidq subcommands: one registration function per subcommand file.
#pragma once

namespace CLI {
class App;
}

namespace lucidq::cli {

/// Adds `lucidq demo` (demo.cpp): a guided walk through the linear-quantization
/// notes (seed 004) computed with the public C++ API. Its callback writes to
/// stdout and lets lucid::quantization::Error propagate to main().
void add_demo_command(CLI::App& app);

}  // namespace lucidq::cli
