#include <doctest/doctest.h>

#include <lancet/core/buffer.hpp>
#include <lancet/core/endian.hpp>
#include <lancet/core/error.hpp>

using namespace lancet;

TEST_CASE("aligned_buffer is 64-byte aligned, zero-fills and grows") {
  aligned_buffer b;
  b.append(std::string_view("abc"));
  CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0);
  b.resize(100);
  CHECK(b.size() == 100);
  CHECK(b[2] == 'c');
  CHECK(b[3] == 0);
  CHECK(b[99] == 0);
  aligned_buffer c = b;
  CHECK(c.size() == 100);
  CHECK(c[0] == 'a');
  aligned_buffer d = std::move(c);
  CHECK(c.size() == 0);
  CHECK(d[1] == 'b');
}

TEST_CASE("shared_bytes keeps its owner alive and slices") {
  aligned_buffer b;
  for (int i = 0; i < 10; ++i) b.push_back(std::uint8_t(i));
  shared_bytes s(std::move(b));
  auto t = s.slice(3, 4);
  s = shared_bytes();
  REQUIRE(t.size() == 4);
  CHECK(t.data()[0] == 3);
  CHECK(t.data()[3] == 6);
}

TEST_CASE("little-endian load/store round trip") {
  std::uint8_t buf[8];
  le::store<std::uint32_t>(buf, 0x01020304u);
  CHECK(buf[0] == 4);
  CHECK(buf[3] == 1);
  CHECK(le::load<std::uint32_t>(buf) == 0x01020304u);
  le::store<double>(buf, 1.5);
  CHECK(le::load<double>(buf) == 1.5);
}

TEST_CASE("errors carry their category and message") {
  try {
    throw corrupt_error("column 'x' page 3: offset 99 past the end");
  } catch (const error& e) {
    CHECK(e.code() == errc::corrupt);
    CHECK(std::string(e.what()) == "corrupt: column 'x' page 3: offset 99 past the end");
  }
}
