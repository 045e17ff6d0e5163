// quantize_checkpoint: a safetensors file quantized tensor by tensor into a lucidq checkpoint.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <span>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_format.hpp"
#include "core/streaming_metrics.hpp"
#include "io/safetensors_format.hpp"
#include "lucid/quantization/checkpoint.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/quantize.hpp"

namespace lucid::quantization {
namespace {

// Runs `step`, prefixing any Error with the file and tensor it concerns.
template <class Step>
auto for_tensor(const std::string& file, std::string_view tensor, Step&& step) {
  try {
    return step();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.starts_with(file + ":")) throw;  // already names the file
    throw Error(file + ": tensor " + detail::quoted(tensor) + ": " + what);
  }
}

void check_strict(const std::string& file, const SafetensorsEntry& entry, std::int64_t nonfinite,
                  bool strict) {
  if (strict && nonfinite > 0) {
    throw Error(file + ": tensor " + detail::quoted(entry.name) + ": " + std::to_string(nonfinite) +
                " non-finite values (NaN or Inf) (expected finite values: strict checking is "
                "on; without it they are counted, NaN quantized to the zero point and +-Inf "
                "saturated)");
  }
}

// The zero points narrowed to the layout's zero-point dtype, as little-endian bytes.
std::vector<std::byte> zero_point_bytes(const QuantizedTensorLayout& layout,
                                        std::span<const std::int32_t> zero_points) {
  const std::size_t width = element_size(layout.zero_point_type());
  std::vector<std::byte> out(zero_points.size() * width);
  for (std::size_t i = 0; i < zero_points.size(); ++i) {
    const auto value = static_cast<std::uint32_t>(zero_points[i]);  // two's complement
    std::memcpy(out.data() + i * width, &value, width);             // low bytes (little-endian)
  }
  return out;
}

// One input tensor's stored tensors, in file order, with the buffers they point into.
struct Pending {
  std::vector<std::pair<std::string, std::span<const std::byte>>> pieces;
  std::vector<std::vector<std::byte>> owned;
  const SafetensorsEntry* release = nullptr;  // input pages to release once written
};

// Writes each tensor's output on a second thread while the next tensor is quantized.
// At most one tensor is in flight: push() first waits for the previous one.
class WriteBehind {
 public:
  WriteBehind(const SafetensorsFile& in, SafetensorsWriter& out) : in_(in), out_(out) {}
  WriteBehind(const WriteBehind&) = delete;
  WriteBehind& operator=(const WriteBehind&) = delete;
  ~WriteBehind() {
    if (done_.valid()) done_.wait();  // an error is moot by now: the output is abandoned
  }

  // Waits for the previous tensor (rethrowing its write error), then starts writing `next`.
  void push(Pending next) {
    wait();
    current_ = std::move(next);
    done_ = std::async(std::launch::async, [this] {
      for (const auto& [name, bytes] : current_.pieces)
        out_.write(name, bytes);
      if (current_.release != nullptr) in_.release_pages(*current_.release);
    });
  }
  // Waits for the tensor in flight; rethrows its write error.
  void wait() {
    if (done_.valid()) done_.get();
  }

 private:
  const SafetensorsFile& in_;
  SafetensorsWriter& out_;
  Pending current_;
  std::future<void> done_;
};

class Job {
 public:
  Job(const SafetensorsFile& in, SafetensorsWriter& out, const QuantizeCheckpointOptions& options)
      : in_(in), options_(options), file_(in.path().string()), writer_(in, out) {}

  // Waits until every tensor is written; rethrows a write error.
  void finish() { writer_.wait(); }

  // Round-to-nearest codes of `x` into `codes`, and their qparams: what quantize() does. Groups
  // take the fused quantize_per_group (one pass over the tensor instead of a range pass and a
  // codes pass; the same result) and copy its codes, which are an eighth to a quarter of the
  // tensor's bytes.
  static QParams quantize_rtn(const TensorView& x, const QuantSettings& s,
                              std::span<std::uint8_t> codes) {
    if (s.group_size > 0 && is_per_channel(s.qscheme)) {
      QuantizedTensor q = quantize_per_group(x, s.qscheme, s.qdtype, s.axis, s.group_size);
      std::copy(q.storage().begin(), q.storage().end(), codes.begin());
      return q.qparams();
    }
    QParams chosen = choose_qparams(x, s.qscheme, s.qdtype, s.axis, s.group_size);
    quantize_into(x, chosen, codes);
    return chosen;
  }

  // The quantizer's codes for `x` copied into `codes`, or nullopt to use RTN.
  std::optional<QParams> custom_codes(const SafetensorsEntry& entry, const TensorView& x,
                                      const QuantSettings& s, std::span<std::uint8_t> codes,
                                      TensorReport& report) {
    std::optional<TensorQuantization> custom = options_.quantizer(entry.name, x, s);
    if (!custom) return std::nullopt;
    const QParams& q = custom->tensor.qparams();
    const bool fits =
        q.qscheme == s.qscheme && q.qdtype == s.qdtype && q.group_size == s.group_size &&
        (q.ch_axis == s.axis || !is_per_channel(s.qscheme)) && custom->tensor.shape() == x.shape &&
        custom->tensor.storage().size() == codes.size();
    if (!fits) {
      throw Error("the " + custom->method + " quantizer returned " + describe(q) +
                  " codes; expected " + describe(s));
    }
    std::copy(custom->tensor.storage().begin(), custom->tensor.storage().end(), codes.begin());
    report.method = custom->method;
    report.output_error_proxy = custom->output_error_proxy;
    return q;
  }

  TensorReport run(const TensorPlan& plan) {
    const SafetensorsEntry& entry = plan.entry;
    TensorReport report;
    report.name = entry.name;
    report.shape = entry.shape;
    report.dtype = entry.type;
    report.settings = plan.settings;
    report.reason = plan.reason;
    report.bytes_before = entry.nbytes();
    const TensorView view = in_.view(entry);
    if (!plan.settings) {
      report.metrics.nonfinite_count = count_nonfinite_checked(entry, view);
      if (is_floating_point(entry.type)) {
        report.metrics.count = view.numel() - report.metrics.nonfinite_count;
      }
      writer_.push({{{entry.name, in_.bytes(entry)}}, {}, &entry});
      report.bytes_after = entry.nbytes();
      return report;
    }
    const QuantizedTensorLayout layout =
        detail::make_layout(entry.name, entry.shape, entry.type, *plan.settings);
    // float64 has no quantize kernel: it is rounded to float32 first.
    Tensor narrowed;
    TensorView x = view;
    if (entry.type == ScalarType::float64) {
      narrowed = for_tensor(file_, entry.name, [&] {
        return Tensor::from_floats(to_float32(view, "tensor"), entry.shape);
      });
      x = narrowed.view();
    }
    const QuantSettings& s = *plan.settings;
    const std::span<std::uint8_t> codes = codes_for(s.qdtype.storage_bytes(x.numel()));
    const QParams qparams = for_tensor(file_, entry.name, [&] {
      if (options_.quantizer) {
        if (auto custom = custom_codes(entry, x, s, codes, report)) return std::move(*custom);
      }
      return quantize_rtn(x, s, codes);
    });
    report.metrics = for_tensor(file_, entry.name,
                                [&] { return detail::streaming_error_metrics(x, qparams, codes); });
    check_strict(file_, entry, report.metrics.nonfinite_count, options_.strict);

    if (options_.on_tensor) {
      options_.on_tensor(
          entry.name, x,
          QuantizedTensor(x.shape, qparams, ByteBuffer(std::span<const std::uint8_t>(codes))));
    }
    in_.release_pages(entry);
    Pending out;
    const auto scale = std::as_bytes(std::span(qparams.scale));
    out.owned.emplace_back(scale.begin(), scale.end());
    if (layout.zero_point_name()) out.owned.push_back(zero_point_bytes(layout, qparams.zero_point));
    out.pieces.emplace_back(layout.name, as_bytes(codes));
    out.pieces.emplace_back(layout.scale_name(), out.owned[0]);
    if (const auto zp = layout.zero_point_name()) out.pieces.emplace_back(*zp, out.owned[1]);
    writer_.push(std::move(out));
    report.bytes_after = layout.nbytes();
    return report;
  }

 private:
  // `bytes` of codes buffer, kept from one tensor to the next (fresh memory for every tensor
  // costs page faults). Two buffers take turns: one may still be being written.
  std::span<std::uint8_t> codes_for(std::int64_t bytes) {
    std::vector<std::uint8_t>& buffer = codes_[turn_];
    turn_ = 1 - turn_;
    const auto size = static_cast<std::size_t>(bytes);
    if (buffer.size() < size) buffer.resize(size);
    return {buffer.data(), size};
  }

  std::int64_t count_nonfinite_checked(const SafetensorsEntry& entry, const TensorView& view) {
    const std::int64_t nonfinite = detail::count_nonfinite(view);
    check_strict(file_, entry, nonfinite, options_.strict);
    return nonfinite;
  }

  const SafetensorsFile& in_;
  const QuantizeCheckpointOptions& options_;
  std::string file_;
  std::vector<std::uint8_t> codes_[2];
  int turn_ = 0;
  WriteBehind writer_;  // last: destroyed first, it waits for the write that reads codes_
};

}  // namespace

CheckpointReport quantize_checkpoint(const std::filesystem::path& input,
                                     const std::filesystem::path& output,
                                     const QuantizeCheckpointOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const SafetensorsFile in = SafetensorsFile::open(input);
  const std::vector<TensorPlan> plan = plan_quantization(in, options.recipe);

  std::vector<SafetensorsTensorSpec> specs;
  std::map<std::string, std::string> metadata = in.metadata();
  metadata[std::string(checkpoint_format_key)] = std::string(checkpoint_format_version);
  std::uint64_t bytes_total = 0;
  for (const TensorPlan& p : plan) {
    bytes_total += p.entry.nbytes();
    if (!p.settings) {
      specs.push_back({p.entry.name, p.entry.type, p.entry.shape});
      continue;
    }
    const QuantizedTensorLayout layout =
        detail::make_layout(p.entry.name, p.entry.shape, p.entry.type, *p.settings);
    for (SafetensorsTensorSpec& spec : layout.stored_tensors())
      specs.push_back(std::move(spec));
    metadata[std::string(checkpoint_tensor_key_prefix) + p.entry.name] =
        detail::encode_tensor_metadata(layout);
  }

  SafetensorsWriter out(output, std::move(specs), metadata, options.overwrite);
  CheckpointReport report;
  report.input = input.string();
  report.output = output.string();
  report.input_file_bytes = in.header().data_offset + in.header().data_size;
  Job job(in, out, options);
  CheckpointProgress progress;
  progress.tensor_count = plan.size();
  progress.bytes_total = bytes_total;
  try {
    for (const TensorPlan& p : plan) {
      report.tensors.push_back(job.run(p));
      in.check_intact();
      ++progress.tensors_done;
      progress.bytes_done += p.entry.nbytes();
      progress.tensor = p.entry.name;
      if (options.progress) options.progress(progress);
    }
    job.finish();
  } catch (const Error&) {
    in.check_intact();  // data read as zeros from a shrinking input: report that instead
    throw;
  }
  in.check_intact();  // the last tensors were copied on the writer's thread
  out.commit();
  std::error_code error;
  const auto written = std::filesystem::file_size(output, error);
  report.output_file_bytes = error ? 0 : written;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace lucid::quantization
