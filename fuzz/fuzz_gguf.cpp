// libFuzzer target: GGUF header parsing must reject bad bytes with Error only, and every header
// it accepts must satisfy the format's invariants and survive a re-encode round trip.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "lucid/quantization/error.hpp"
#include "lucid/quantization/gguf.hpp"

namespace Q = lucid::quantization;

namespace {

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_gguf: invariant broken: %s\n", what);
  std::abort();
}

void check_header(const Q::GgufHeader& header, std::size_t size) {
  check(header.version == Q::kGgufVersion, "version 3");
  check(header.alignment > 0 && (header.alignment & (header.alignment - 1)) == 0,
        "alignment is a power of two");
  check(header.data_offset <= size && header.data_size <= size - header.data_offset,
        "the data section lies inside the file");
  std::set<std::string> names;
  std::uint64_t cursor = 0;
  for (const Q::GgufTensorInfo& t : header.tensors) {
    check(names.insert(t.name).second, "unique names");
    check(!t.name.empty() && t.name.size() <= Q::kGgufMaxTensorName, "names of 1-63 bytes");
    check(!t.ne.empty() && t.ne.size() <= Q::kGgufMaxDims, "1-4 dimensions");
    check(t.offset == cursor, "tensors back to back");
    const auto& traits = Q::ggml_type_traits(t.type);
    check(t.ne[0] % traits.block_size == 0, "whole blocks per row");
    check(t.nbytes == static_cast<std::uint64_t>(t.numel() / traits.block_size * traits.type_size),
          "byte size matches the shape");
    cursor += (t.nbytes + header.alignment - 1) / header.alignment * header.alignment;
  }
  check(cursor == header.data_size, "data size is the padded sum");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  Q::GgufHeader header;
  try {
    header = Q::parse_gguf_header(bytes, "fuzz.gguf");
  } catch (const Q::Error&) {
    return 0;  // rejected cleanly
  }
  check_header(header, size);
  if (header.data_size > (std::uint64_t{1} << 24)) return 0;  // too large to re-encode here

  // Re-encode what was accepted, as the writer would, and read it back: same metadata and
  // tensors, and the writer's bytes parse.
  std::vector<Q::GgufTensorSpec> specs;
  for (const Q::GgufTensorInfo& t : header.tensors)
    specs.push_back({t.name, t.ne, t.type});
  const std::vector<std::byte> encoded = Q::encode_gguf_header(header.metadata, specs, "fuzz.gguf");
  std::vector<std::byte> file = encoded;
  file.resize(file.size() + header.data_size);
  const Q::GgufHeader again = Q::parse_gguf_header(file, "fuzz.gguf");
  // Compared as bytes: float values may be NaN, which never equals itself.
  check(Q::encode_gguf_header(again.metadata, specs, "fuzz.gguf") == encoded,
        "metadata survives a round trip");
  check(again.tensors == header.tensors, "tensor infos survive a round trip");
  check(again.alignment == header.alignment, "alignment survives a round trip");
  return 0;
}
