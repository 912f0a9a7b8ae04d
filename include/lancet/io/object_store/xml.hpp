// What the object stores' XML answers need: the text of an element by tag (S3's and
// Azure's answers are flat, without CDATA; namespaces are not looked at, s3rver's differs
// from S3's), entities decoded, and text escaped for the XML requests (multipart
// completion, block lists).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lancet::io::detail {

// The text of each <tag>...</tag> in `xml`, in order (S3's answers: flat, no CDATA;
// the namespace is not looked at, s3rver's differs from S3's).
inline std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  for (std::size_t at = 0;;) {
    const auto b = xml.find(open, at);
    if (b == std::string_view::npos) return out;
    const auto e = xml.find(close, b + open.size());
    if (e == std::string_view::npos) return out;
    out.push_back(xml.substr(b + open.size(), e - b - open.size()));
    at = e + close.size();
  }
}

// The code point of a character reference's name ("#233", "#xE9"); 0 when it is none
// (kept as written).
inline unsigned long char_reference(std::string_view name) {
  if (name.size() < 2 || name[0] != '#') return 0;
  const bool hex = name[1] == 'x' || name[1] == 'X';
  const auto digits = name.substr(hex ? 2 : 1);
  if (digits.empty() || digits.size() > 8) return 0;
  unsigned long cp = 0;
  for (const char c : digits) {
    const int d = c >= '0' && c <= '9' ? c - '0'
                  : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return 0;
    cp = cp * (hex ? 16 : 10) + unsigned(d);
  }
  return cp <= 0x10ffff ? cp : 0;
}

// XML's five entities and numeric references decoded.
inline std::string xml_text(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const auto semi = s.find(';', i);
    if (semi == std::string_view::npos) {
      out += s[i];
      continue;
    }
    const auto name = s.substr(i + 1, semi - i - 1);
    if (name == "amp") out += '&';
    else if (name == "lt") out += '<';
    else if (name == "gt") out += '>';
    else if (name == "quot") out += '"';
    else if (name == "apos") out += '\'';
    else if (const auto cp = char_reference(name)) {
      if (cp < 0x80) out += char(cp);
      else if (cp < 0x800) out += char(0xc0 | (cp >> 6)), out += char(0x80 | (cp & 0x3f));
      else if (cp < 0x10000)
        out += char(0xe0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3f)), out += char(0x80 | (cp & 0x3f));
      else
        out += char(0xf0 | (cp >> 18)), out += char(0x80 | ((cp >> 12) & 0x3f)),
            out += char(0x80 | ((cp >> 6) & 0x3f)), out += char(0x80 | (cp & 0x3f));
    } else {
      out.append(s.substr(i, semi - i + 1));
    }
    i = semi;
  }
  return out;
}

inline std::string xml_first(std::string_view xml, std::string_view tag) {
  const auto v = xml_elements(xml, tag);
  return v.empty() ? std::string() : xml_text(v.front());
}

inline std::string xml_escaped(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace lancet::io::detail
