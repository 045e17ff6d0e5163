// pack_codes / unpack_codes: codes <-> their dtype's storage bytes.
#include "lucid/quantization/pack.hpp"

#include <algorithm>
#include <cstring>

#include "core/kernel_args.hpp"
#include "kernels/dispatch.hpp"
#include "lucid/quantization/error.hpp"

namespace lucid::quantization {
namespace {

template <class T>
void store_wide(std::span<const std::int32_t> codes, std::vector<std::uint8_t>& out) {
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const auto value = static_cast<T>(codes[i]);
    std::memcpy(out.data() + i * sizeof(T), &value, sizeof(T));
  }
}

template <class T>
void load_wide(std::span<const std::uint8_t> storage, std::vector<std::int32_t>& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    T value;
    std::memcpy(&value, storage.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<std::int32_t>(value);
  }
}

}  // namespace

std::vector<std::uint8_t> pack_codes(std::span<const std::int32_t> codes, const QDtype& qdtype) {
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] < qdtype.quant_min() || codes[i] > qdtype.quant_max()) {
      throw Error("pack_codes: codes[" + std::to_string(i) + "] = " + std::to_string(codes[i]) +
                  " is outside " + qdtype.name() + " (expected " +
                  std::to_string(qdtype.quant_min()) +
                  " <= code <= " + std::to_string(qdtype.quant_max()) + ")");
    }
  }
  const auto count = static_cast<std::int64_t>(codes.size());
  std::vector<std::uint8_t> out(static_cast<std::size_t>(qdtype.storage_bytes(count)), 0);
  switch (qdtype.storage()) {
    case Storage::packed2:
    case Storage::packed4: {
      const int bits = qdtype.bits();
      const int per_byte = 8 / bits;
      const unsigned mask = (1u << bits) - 1u;
      for (std::size_t i = 0; i < codes.size(); ++i) {
        const unsigned field = static_cast<unsigned>(codes[i]) & mask;  // two's complement bits
        const auto shift = static_cast<unsigned>((i % per_byte) * bits);
        out[i / per_byte] = static_cast<std::uint8_t>(out[i / per_byte] | (field << shift));
      }
      break;
    }
    case Storage::int8:
      store_wide<std::int8_t>(codes, out);
      break;
    case Storage::uint8:
      store_wide<std::uint8_t>(codes, out);
      break;
    case Storage::int16:
      store_wide<std::int16_t>(codes, out);
      break;
    case Storage::uint16:
      store_wide<std::uint16_t>(codes, out);
      break;
    case Storage::int32:
      store_wide<std::int32_t>(codes, out);
      break;
  }
  return out;
}

std::vector<std::int32_t> unpack_codes(std::span<const std::uint8_t> storage, std::int64_t count,
                                       const QDtype& qdtype) {
  if (count < 0) {
    throw Error("unpack_codes: count = " + std::to_string(count) + " (expected >= 0)");
  }
  const std::int64_t needed = qdtype.storage_bytes(count);
  if (static_cast<std::int64_t>(storage.size()) < needed) {
    throw Error("unpack_codes: storage holds " + std::to_string(storage.size()) + " bytes but " +
                std::to_string(count) + " " + qdtype.name() + " codes need " +
                std::to_string(needed));
  }
  std::vector<std::int32_t> out(static_cast<std::size_t>(count));
  switch (qdtype.storage()) {
    case Storage::packed2:
    case Storage::packed4: {
      const kernels::UnpackFn unpack = detail::unpack_kernel(kernels::active(), qdtype);
      std::int8_t scratch[detail::scratch_codes];  // a multiple of 8: chunks start on a byte
      for (std::int64_t chunk = 0; chunk < count; chunk += detail::scratch_codes) {
        const std::int64_t n = std::min(detail::scratch_codes, count - chunk);
        unpack(storage.data() + chunk * qdtype.bits() / 8, n, scratch);
        std::copy(scratch, scratch + n, out.begin() + chunk);
      }
      break;
    }
    case Storage::int8:
      load_wide<std::int8_t>(storage, out);
      break;
    case Storage::uint8:
      load_wide<std::uint8_t>(storage, out);
      break;
    case Storage::int16:
      load_wide<std::int16_t>(storage, out);
      break;
    case Storage::uint16:
      load_wide<std::uint16_t>(storage, out);
      break;
    case Storage::int32:
      load_wide<std::int32_t>(storage, out);
      break;
  }
  return out;
}

}  // namespace lucid::quantization
