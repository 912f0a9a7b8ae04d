// SHA-256 and HMAC-SHA256, the digests object-store request signing needs, through
// OpenSSL's libcrypto (a program that includes this header links -lcrypto), and their
// lowercase hex form.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "lancet/core/error.hpp"

namespace lancet::io::object_store {

using sha256_digest = std::array<std::uint8_t, 32>;

inline sha256_digest sha256(std::string_view data) {
  sha256_digest out{};
  unsigned n = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &n, EVP_sha256(), nullptr) != 1 || n != out.size())
    throw io_error("OpenSSL: SHA-256 failed");
  return out;
}

// MD5, for S3's Content-MD5 header only (DeleteObjects requires one).
inline std::array<std::uint8_t, 16> md5(std::string_view data) {
  std::array<std::uint8_t, 16> out{};
  unsigned n = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &n, EVP_md5(), nullptr) != 1 || n != out.size())
    throw io_error("OpenSSL: MD5 failed");
  return out;
}

inline sha256_digest hmac_sha256(std::string_view key, std::string_view data) {
  sha256_digest out{};
  unsigned n = 0;
  if (!HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(),
            out.data(), &n) ||
      n != out.size())
    throw io_error("OpenSSL: HMAC-SHA256 failed");
  return out;
}

inline std::string to_hex(const sha256_digest& d) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(d.size() * 2, '0');
  for (std::size_t i = 0; i < d.size(); ++i) {
    s[2 * i] = digits[d[i] >> 4];
    s[2 * i + 1] = digits[d[i] & 15];
  }
  return s;
}

inline std::string_view as_chars(const sha256_digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

}  // namespace lancet::io::object_store
