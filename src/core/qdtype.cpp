// QDtype: validated ranges, names and storage sizes.
#include "lucid/quantization/qdtype.hpp"

#include <charconv>

#include "lucid/quantization/error.hpp"

namespace lucid::quantization {

std::string to_string(Storage storage) {
  switch (storage) {
    case Storage::packed2:
      return "packed2";
    case Storage::packed4:
      return "packed4";
    case Storage::int8:
      return "int8";
    case Storage::uint8:
      return "uint8";
    case Storage::int16:
      return "int16";
    case Storage::uint16:
      return "uint16";
    case Storage::int32:
      return "int32";
  }
  return "unknown";
}

void QDtype::throw_invalid_bits(int bits, bool is_signed) {
  throw Error("QDtype: bits = " + std::to_string(bits) + (is_signed ? " signed" : " unsigned") +
              " (expected 2, 4, 8, 16 or 32 bits; 32 only signed)");
}

QDtype QDtype::with_range(std::int64_t quant_min, std::int64_t quant_max) const {
  const QDtype full = full_range(bits_, is_signed_);
  const std::string what = "QDtype " + full.name() + " range [" + std::to_string(quant_min) + ", " +
                           std::to_string(quant_max) + "]";
  if (quant_min >= quant_max) {
    throw Error(what + " is empty (expected quant_min < quant_max)");
  }
  if (quant_min > 0 || quant_max < 0) {
    throw Error(what + " cannot hold 0 (expected quant_min <= 0 <= quant_max)");
  }
  if (quant_min < full.quant_min_ || quant_max > full.quant_max_) {
    throw Error(what + " does not fit " + std::to_string(bits_) + " bits (expected within [" +
                std::to_string(full.quant_min_) + ", " + std::to_string(full.quant_max_) + "])");
  }
  return QDtype(bits_, is_signed_, quant_min, quant_max);
}

QDtype QDtype::narrow_range() const {
  const QDtype full = full_range(bits_, is_signed_);
  return is_signed_ ? with_range(full.quant_min_ + 1, full.quant_max_)
                    : with_range(0, full.quant_max_ - 1);
}

Storage QDtype::storage() const {
  switch (bits_) {
    case 2:
      return Storage::packed2;
    case 4:
      return Storage::packed4;
    case 8:
      return is_signed_ ? Storage::int8 : Storage::uint8;
    case 16:
      return is_signed_ ? Storage::int16 : Storage::uint16;
    default:
      return Storage::int32;
  }
}

std::string QDtype::name() const {
  std::string text = is_signed_ ? "qint" : "quint";
  text += std::to_string(bits_);
  if (has_custom_range()) {
    text += '[';
    text += std::to_string(quant_min_);
    text += ',';
    text += std::to_string(quant_max_);
    text += ']';
  }
  return text;
}

std::int64_t QDtype::storage_bytes(std::int64_t count) const {
  if (count < 0) {
    throw Error("QDtype::storage_bytes: count = " + std::to_string(count) + " (expected >= 0)");
  }
  if (bits_ < 8) {
    const std::int64_t per_byte = 8 / bits_;
    return count / per_byte + (count % per_byte != 0 ? 1 : 0);
  }
  return count * (bits_ / 8);
}

QDtype qdtype_from_string(std::string_view name) {
  const auto fail = [&]() -> QDtype {
    throw Error("qdtype \"" + std::string(name) +
                "\" is unknown (expected qint8, quint8, qint4, quint4, qint2, quint2, qint16, "
                "qint32, the same without the leading q (int8, uint8, ...), or a range such as "
                "qint8[-127,127])");
  };
  std::string_view text = name;
  std::string_view range;
  if (const auto bracket = text.find('['); bracket != std::string_view::npos) {
    if (text.back() != ']') return fail();
    range = text.substr(bracket + 1, text.size() - bracket - 2);
    text = text.substr(0, bracket);
  }
  if (text.starts_with("q")) text.remove_prefix(1);
  bool is_signed = true;
  if (text.starts_with("uint")) {
    is_signed = false;
    text.remove_prefix(4);
  } else if (text.starts_with("int")) {
    text.remove_prefix(3);
  } else {
    return fail();
  }
  int bits = 0;
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), bits);
  if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) return fail();
  if (!(bits == 2 || bits == 4 || bits == 8 || bits == 16 || (bits == 32 && is_signed))) {
    return fail();
  }
  const QDtype full = QDtype::full_range(bits, is_signed);
  if (range.empty()) return full;
  const auto comma = range.find(',');
  if (comma == std::string_view::npos) return fail();
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  const std::string_view lo_text = range.substr(0, comma);
  const std::string_view hi_text = range.substr(comma + 1);
  const auto lo_parsed = std::from_chars(lo_text.data(), lo_text.data() + lo_text.size(), lo);
  const auto hi_parsed = std::from_chars(hi_text.data(), hi_text.data() + hi_text.size(), hi);
  if (lo_parsed.ec != std::errc() || lo_parsed.ptr != lo_text.data() + lo_text.size() ||
      hi_parsed.ec != std::errc() || hi_parsed.ptr != hi_text.data() + hi_text.size()) {
    return fail();
  }
  return full.with_range(lo, hi);
}

}  // namespace lucid::quantization
