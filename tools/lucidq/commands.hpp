// The lucidq subcommands: one registration function per subcommand file.
#pragma once

namespace CLI {
class App;
}

namespace lucidq::cli {

/// Adds `lucidq demo` (demo.cpp): a guided walk through the linear-quantization
/// notes ("Quantization in Depth") computed with the public C++ API. Its callback writes to
/// stdout and lets lucid::quantization::Error propagate to main().
void add_demo_command(CLI::App& app);

/// Adds `lucidq quantize` (quantize.cpp): a safetensors checkpoint quantized tensor by tensor
/// into a lucidq checkpoint, with the error report on stdout.
void add_quantize_command(CLI::App& app);
/// Adds `lucidq dequantize` (dequantize.cpp): a lucidq checkpoint back to float tensors.
void add_dequantize_command(CLI::App& app);
/// Adds `lucidq inspect` (inspect.cpp): the tensors of a file as a table or JSON.
void add_inspect_command(CLI::App& app);
/// Adds `lucidq plot` (plot.cpp): one tensor quantized and drawn as heatmaps.
void add_plot_command(CLI::App& app);

/// Adds `lucidq info` (info.cpp): CPU features, kernel tiers, the tier in use, threads.
void add_info_command(CLI::App& app);
/// Adds `lucidq bench` (bench.cpp): a short speed table against memcpy.
void add_bench_command(CLI::App& app);

}  // namespace lucidq::cli
