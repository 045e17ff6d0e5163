// QDtype: the integer grid (bits, signedness, [quant_min, quant_max]) and how codes are stored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lucid::quantization {

/// How codes of a QDtype are laid out in memory. Sub-byte codes are packed
/// into bytes low-bits-first: element 0 in the low nibble (or the low two bits).
enum class Storage : std::uint8_t { packed2, packed4, int8, uint8, int16, uint16, int32 };

/// "packed4", "uint8", ...
std::string to_string(Storage storage);

/// The integer grid codes live on. Built-in constants cover the full ranges
/// (qint8 = [-128, 127], quint8 = [0, 255], ...); with_range() and
/// narrow_range() derive validated custom grids.
class QDtype {
 public:
  /// The full two's-complement (signed) or unsigned range of `bits` bits.
  /// Valid bits: 2, 4, 8, 16, 32 (32 only signed). Throws Error otherwise.
  static constexpr QDtype full_range(int bits, bool is_signed) {
    if (!(bits == 2 || bits == 4 || bits == 8 || bits == 16 || (bits == 32 && is_signed))) {
      throw_invalid_bits(bits, is_signed);
    }
    const std::int64_t span = std::int64_t{1} << bits;
    return is_signed ? QDtype(bits, true, -span / 2, span / 2 - 1)
                     : QDtype(bits, false, 0, span - 1);
  }

  /// The same storage with codes restricted to [quant_min, quant_max].
  /// Throws Error when the range is empty (quant_min >= quant_max), cannot hold
  /// 0, or does not fit the storage.
  QDtype with_range(std::int64_t quant_min, std::int64_t quant_max) const;
  /// The range symmetric about the grid's centre: [-(2^(b-1) - 1), 2^(b-1) - 1]
  /// for signed (qint8 -> [-127, 127], the max|x|/127 convention), [0, 2^b - 2] for unsigned.
  QDtype narrow_range() const;

  constexpr int bits() const { return bits_; }
  constexpr bool is_signed() const { return is_signed_; }
  constexpr std::int64_t quant_min() const { return quant_min_; }
  constexpr std::int64_t quant_max() const { return quant_max_; }
  /// True when [quant_min, quant_max] differs from the full range of the bits.
  constexpr bool has_custom_range() const { return *this != full_range(bits_, is_signed_); }
  /// The code a symmetric scheme pins real 0 to: 0 for signed grids,
  /// 2^(bits-1) for unsigned full ranges (128 for quint8), and
  /// floor((quant_min + quant_max) / 2) for unsigned custom ranges (PyTorch's rule).
  constexpr std::int64_t symmetric_zero_point() const {
    if (is_signed_) return 0;
    if (!has_custom_range()) return std::int64_t{1} << (bits_ - 1);
    return (quant_min_ + quant_max_) / 2;
  }
  Storage storage() const;
  /// "qint8", "quint4", or "qint8[-127,127]" for a custom range.
  std::string name() const;
  /// Bytes needed to store `count` codes (sub-byte codes packed, rounded up).
  std::int64_t storage_bytes(std::int64_t count) const;

  constexpr bool operator==(const QDtype&) const = default;

 private:
  constexpr QDtype(int bits, bool is_signed, std::int64_t quant_min, std::int64_t quant_max)
      : bits_(bits), is_signed_(is_signed), quant_min_(quant_min), quant_max_(quant_max) {}
  [[noreturn]] static void throw_invalid_bits(int bits, bool is_signed);

  int bits_;
  bool is_signed_;
  std::int64_t quant_min_;
  std::int64_t quant_max_;
};

inline constexpr QDtype qint8 = QDtype::full_range(8, true);
inline constexpr QDtype quint8 = QDtype::full_range(8, false);
inline constexpr QDtype qint4 = QDtype::full_range(4, true);
inline constexpr QDtype quint4 = QDtype::full_range(4, false);
inline constexpr QDtype qint2 = QDtype::full_range(2, true);
inline constexpr QDtype quint2 = QDtype::full_range(2, false);
inline constexpr QDtype qint16 = QDtype::full_range(16, true);
inline constexpr QDtype qint32 = QDtype::full_range(32, true);

/// Parses "qint8" / "int8", "quint4" / "uint4", ... and the custom form
/// "qint8[-127,127]". Throws Error naming the text and the accepted names.
QDtype qdtype_from_string(std::string_view name);

}  // namespace lucid::quantization
