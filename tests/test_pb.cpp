#include <doctest/doctest.h>

#include <lancet/pb/wire.hpp>

#include <functional>

using namespace lancet;

TEST_CASE("varint, zigzag and fixed fields round trip") {
  pb::writer w;
  w.uint64(1, 300);
  w.int32(2, -1);
  w.sint64(3, -2);
  w.fixed64(4, 0x1122334455667788ull);
  w.float32(5, 2.5f);
  w.string(6, "hi");
  // 300 = 0xAC 0x02; -1 as int32 is ten bytes.
  CHECK(w.bytes().substr(0, 3) == std::string("\x08\xAC\x02", 3));
  pb::reader r(w.bytes());
  auto f = r.next();
  CHECK(f.number == 1);
  CHECK(f.as_uint64() == 300);
  f = r.next();
  CHECK(f.as_int32() == -1);
  f = r.next();
  CHECK(pb::unzigzag(f.scalar) == -2);
  f = r.next();
  CHECK(f.scalar == 0x1122334455667788ull);
  f = r.next();
  CHECK(f.as_float() == 2.5f);
  f = r.next();
  CHECK(f.as_string() == "hi");
  CHECK(r.done());
}

TEST_CASE("packed repeated and maps") {
  pb::writer w;
  w.packed_varint<std::uint64_t>(1, {1, 2, 300});
  std::vector<std::pair<std::string, std::string>> m{{"k", "v"}};
  w.string_map(2, m);
  pb::reader r(w.bytes());
  std::vector<std::uint64_t> out;
  r.repeated_varint(r.next(), out);
  CHECK(out == std::vector<std::uint64_t>{1, 2, 300});
  auto kv = r.map_entry(r.next(), "map");
  CHECK(kv.first == "k");
  CHECK(kv.second == "v");
}

TEST_CASE("the reader refuses corrupt input with typed errors") {
  SUBCASE("truncated varint") {
    const std::string bytes("\x08\x80", 2);
    pb::reader r(bytes);
    CHECK_THROWS_AS(r.next(), corrupt_error);
  }
  SUBCASE("length past the end") {
    const std::string bytes("\x0a\x05xy", 4);
    pb::reader r(bytes);
    CHECK_THROWS_AS(r.next(), corrupt_error);
  }
  SUBCASE("overlong varint") {
    std::string s = "\x08";
    s += std::string(11, '\xff');
    pb::reader r(s);
    CHECK_THROWS_AS(r.next(), corrupt_error);
  }
  SUBCASE("wrong wire type") {
    pb::writer w;
    w.uint64(1, 5);
    pb::reader r(w.bytes());
    auto f = r.next();
    CHECK_THROWS_AS(r.sub(f, "nested"), corrupt_error);
  }
  SUBCASE("nesting too deep") {
    std::string s;
    for (int i = 0; i < 100; ++i) {
      pb::writer w;
      w.bytes(1, s);
      s = w.take();
    }
    std::function<void(pb::reader)> walk = [&](pb::reader r) {
      while (!r.done()) walk(r.sub(r.next(), "nested"));
    };
    CHECK_THROWS_AS(walk(pb::reader(s)), corrupt_error);
  }
}
