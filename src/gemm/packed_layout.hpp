// Internal: the packed representation behind PackedWeightsInt8 (docs/formats.md).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/gemm_int8.hpp"
#include "lucid/quantization/gemm.hpp"
#include "lucid/quantization/qdtype.hpp"

namespace lucid::quantization {

/// W[N, K] cut into ceil(N / 16) panels of 16 output channels (the last padded
/// with zero channels). A panel holds ceil(K / 4) groups of 64 bytes; group g
/// stores W[16p + c][4g + j] at byte 4c + j (zero past K): the operand of one
/// vpdpbusd with a broadcast 4-byte activation.
struct PackedWeightsInt8::Layout {
  /// One 64-byte group; vectors of them are 64-byte aligned.
  struct alignas(64) Group {
    std::int8_t bytes[64];
  };

  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t panels = 0;  // ceil(n / 16)
  bool per_channel = false;
  QDtype qdtype = qint8;                  // the grid the codes were made on (to_quantized)
  std::vector<float> scales;              // n (a per-tensor scale repeated)
  std::vector<std::int32_t> column_sums;  // panels · 16, zero for padding channels
  // panels · ceil(k / 4) Groups; a ByteBuffer, so huge pages from 4 MiB on (the kernels'
  // weight streams run faster without a prefetcher stop at every 4 KiB page).
  ByteBuffer storage;

  std::int64_t groups_per_panel() const { return (k + 3) / 4; }
  Group* groups() { return reinterpret_cast<Group*>(storage.data()); }
  std::size_t group_count() const { return storage.size() / sizeof(Group); }
  const std::int8_t* panel(std::int64_t p) const {
    return reinterpret_cast<const std::int8_t*>(storage.data()) +
           p * groups_per_panel() * static_cast<std::int64_t>(sizeof(Group));
  }
};

}  // namespace lucid::quantization
