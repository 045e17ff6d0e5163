// The checkpoint part of `lucidq demo`: a small bf16 model written, quantized, reported, plotted.
#pragma once

#include <cstdio>
#include <filesystem>

namespace lucidq::cli {

/// The directory `lucidq demo` writes into unless --out says otherwise.
inline constexpr const char* default_demo_dir = "lucidq-demo";

/// Prints section `number` of the demo to `out`: generates a small transformer-like checkpoint
/// in bfloat16 (Linear weights whose rows differ in magnitude, a few outliers, a bias, norms),
/// writes it to `dir`/model.safetensors, quantizes it to int8 per channel (with plots and a JSON
/// report) and to int4 in groups of 32, prints both reports and lists the files.
/// `dir` is created when missing; an existing directory must be empty or one this demo made
/// (it holds a ".lucidq-demo" marker), whose files are then replaced. Throws
/// lucid::quantization::Error otherwise, or on an I/O failure.
void run_checkpoint_demo(std::FILE* out, int number, const std::filesystem::path& dir);

}  // namespace lucidq::cli
