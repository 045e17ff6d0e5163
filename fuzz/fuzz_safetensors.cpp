// libFuzzer target: safetensors header parsing must reject bad bytes with Error only, and every
// header it accepts must satisfy the format's invariants and survive a re-encode round trip.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <span>
#include <string>

#include "io/safetensors_format.hpp"
#include "lucid/quantization/error.hpp"
#include "lucid/quantization/safetensors.hpp"

namespace Q = lucid::quantization;

namespace {

[[noreturn]] void invariant_broken(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: invariant broken: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) invariant_broken(what);
}

void check_header(const Q::SafetensorsHeader& header, std::size_t size) {
  check(header.data_offset >= 8, "data_offset >= 8");
  check(header.data_offset - 8 <= Q::kSafetensorsMaxHeaderBytes, "header within 100 MB");
  check(header.data_offset + header.data_size == size, "data section runs to the end of the file");
  std::set<std::string> names;
  std::uint64_t cursor = 0;
  for (const Q::SafetensorsEntry& entry : header.entries) {
    check(names.insert(entry.name).second, "unique names");
    check(entry.name != "__metadata__", "no tensor named __metadata__");
    check(entry.begin == cursor, "tensors tile the data section");
    check(entry.end >= entry.begin, "begin <= end");
    std::uint64_t numel = 1;
    for (const std::int64_t dim : entry.shape) {
      check(dim >= 0, "non-negative dimensions");
      check(dim == 0 ||
                numel <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / dim),
            "element count fits int64");
      numel *= static_cast<std::uint64_t>(dim);
    }
    check(numel * Q::detail::safetensors_dtype_size(entry.type) == entry.nbytes(),
          "byte size = element count x dtype size");
    cursor = entry.end;
  }
  check(cursor == header.data_size, "tensors cover the whole data section");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  Q::SafetensorsHeader header;
  try {
    header = Q::parse_safetensors_header(bytes, "fuzz.safetensors");
  } catch (const Q::Error& error) {
    const std::string message = error.what();
    check(message.rfind("fuzz.safetensors: ", 0) == 0, "messages start with the file name");
    return 0;
  }
  check_header(header, size);

  // Touch every tensor byte so AddressSanitizer sees any view outside the input.
  unsigned sum = 0;
  for (const Q::SafetensorsEntry& entry : header.entries) {
    for (std::uint64_t i = entry.begin; i < entry.end; ++i) {
      sum += static_cast<unsigned>(bytes[header.data_offset + i]);
    }
  }
  static volatile unsigned sink;
  sink = sum;

  // What we accept, we write back in canonical form; that must parse to the same header.
  std::string file = Q::detail::encode_safetensors_header(header.entries, header.metadata);
  check(file.size() % 8 == 0, "encoded header padded to 8 bytes");
  file.append(reinterpret_cast<const char*>(data + header.data_offset), header.data_size);
  Q::SafetensorsHeader again;
  try {
    again = Q::parse_safetensors_header(std::as_bytes(std::span(file)), "round trip");
  } catch (const Q::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    invariant_broken("a re-encoded header parses");
  }
  check(again.entries == header.entries, "round trip keeps the entries");
  check(again.metadata == header.metadata, "round trip keeps the metadata");
  check(again.data_size == header.data_size, "round trip keeps the data size");
  return 0;
}
