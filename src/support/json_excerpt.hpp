// Internal: a bounded one-line excerpt of a JSON value for error messages.
#pragma once

#include <cstddef>
#include <string>

namespace lucid::quantization::detail {

/// Cuts `text` to at most `limit` bytes without splitting a UTF-8 sequence, adding "..." when
/// it cut.
inline std::string cut_text(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0u) == 0x80u)
    --cut;
  text.resize(cut);
  return text + "...";
}

namespace json_excerpt_detail {

template <class Json>
void append(const Json& value, std::size_t limit, int depth_left, std::string& out) {
  if (value.is_string()) {
    // Only the start of a long string is escaped: the rest would be cut anyway.
    const auto& text = value.template get_ref<const std::string&>();
    const bool long_text = text.size() > limit;
    std::string shown = Json(long_text ? text.substr(0, limit) : text)
                            .dump(-1, ' ', false, Json::error_handler_t::replace);
    if (long_text) shown.insert(shown.size() - 1, "...");
    out += shown;
    return;
  }
  if (!value.is_structured()) {
    out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  const bool object = value.is_object();
  if (value.empty()) {
    out += object ? "{}" : "[]";
    return;
  }
  if (depth_left == 0) {
    out += object ? "{...}" : "[...]";
    return;
  }
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (out.size() > limit) {  // enough shown: the caller cuts the text
      out += "...";
      return;
    }
    if (!first) out += ',';
    first = false;
    if (object) {
      out += Json(cut_text(it.key(), limit)).dump(-1, ' ', false, Json::error_handler_t::replace);
      out += ':';
    }
    append(*it, limit, depth_left - 1, out);
  }
  out += object ? '}' : ']';
}

}  // namespace json_excerpt_detail

/// `value` as compact JSON cut to about `limit` bytes ("..." marks a cut), for messages about
/// untrusted input. Nesting deeper than `max_depth` levels shows as "[...]" / "{...}", and no
/// more than about `limit` items are visited: the time and the stack used are bounded by
/// `limit` and `max_depth`, whatever the size or depth of `value` (unlike Json::dump, which
/// recurses once per level). Works for nlohmann::json and nlohmann::ordered_json.
template <class Json>
std::string json_excerpt(const Json& value, std::size_t limit = 60, int max_depth = 4) {
  std::string out;
  json_excerpt_detail::append(value, limit, max_depth, out);
  return cut_text(std::move(out), limit);
}

}  // namespace lucid::quantization::detail
