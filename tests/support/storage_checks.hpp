// What every io::storage must do, checked on one under a fresh `root` (a directory or a
// URI prefix nothing else uses): whole files and ranges, sizes, sorted listings (files
// only, relative names, at one level or all, with modification times), the conditional
// create of a commit, replacing puts, aborted and dropped sinks leaving nothing,
// multi-part files, removal of files and of a whole directory. The local storage and
// both object stores run the same checks (test_storage, test_interop_object_store).
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <lancet/core/error.hpp>
#include <lancet/io/storage.hpp>

#include "support/text.hpp"

namespace lancet::testing {

// `conditional_put`: whether the store honours "create only if absent" (s3rver ignores
// If-None-Match); `large`: also write and abort files of several 5 MiB parts.
inline void check_storage_contract(const io::storage& st, const std::string& root, bool conditional_put, bool large) {
  const auto at = [&](const std::string& rel) { return root + "/" + rel; };
  const auto names = [](const std::vector<io::stored_file>& files) {
    std::vector<std::string> out;
    for (const auto& f : files) out.push_back(f.path);
    return out;
  };
  const auto started = std::chrono::system_clock::now();

  CHECK(st.list(root).empty());
  CHECK_FALSE(st.size(at("a.txt")).has_value());
  CHECK_FALSE(st.exists(at("a.txt")));
  CHECK_THROWS_AS(st.open_source(at("a.txt")), not_found_error);

  // Whole files, ranges, sizes.
  st.put(at("a.txt"), view("hello"));
  CHECK(st.size(at("a.txt")) == 5u);
  CHECK(st.read_all(at("a.txt")) == "hello");
  const auto src = st.open_source(at("a.txt"), 5);
  CHECK(src.size() == 5);
  CHECK(byte_vector(src.read(1, 3)) == std::vector<std::uint8_t>{'e', 'l', 'l'});
  CHECK_THROWS_AS(st.read_all(at("a.txt"), 4), invalid_input_error);
  st.put(at("b.txt"), view("bb"));
  st.put(at("d/e/f.bin"), view("f"));
  st.put(at("d/g.bin"), view("gg"));

  // Listings: sorted, relative, files only; one level or all; a missing directory is empty.
  const auto top = st.list(root);
  CHECK(names(top) == std::vector<std::string>{"a.txt", "b.txt"});
  REQUIRE(top.size() == 2);
  CHECK(top[0].size == 5);
  CHECK(top[1].size == 2);
  for (const auto& f : top) {
    REQUIRE(f.modified.has_value());
    CHECK(*f.modified > started - std::chrono::minutes(5));
    CHECK(*f.modified < std::chrono::system_clock::now() + std::chrono::minutes(5));
  }
  CHECK(names(st.list(root, true)) == std::vector<std::string>{"a.txt", "b.txt", "d/e/f.bin", "d/g.bin"});
  CHECK(names(st.list(at("d"))) == std::vector<std::string>{"g.bin"});
  CHECK(names(st.list(at("d"), true)) == std::vector<std::string>{"e/f.bin", "g.bin"});
  CHECK(st.list(at("missing"), true).empty());

  // A plain put replaces; a conditional one (a commit) refuses an existing path.
  st.put(at("a.txt"), view("HELLO!"));
  CHECK(st.read_all(at("a.txt")) == "HELLO!");
  st.put(at("m.manifest"), view("one"), {.if_absent = true});
  CHECK(st.read_all(at("m.manifest")) == "one");
  if (conditional_put) {
    CHECK_THROWS_AS(st.put(at("m.manifest"), view("two"), {.if_absent = true}), conflict_error);
    CHECK(st.read_all(at("m.manifest")) == "one");
  }

  // A sink aborted, or dropped unfinished, leaves nothing.
  {
    auto s = st.create_sink(at("aborted.bin"));
    s.write(view("abc"));
    CHECK(s.position() == 3);
    s.abort();
    CHECK_THROWS_AS(s.write(view("x")), invalid_input_error);
  }
  { st.create_sink(at("dropped.bin")).write(view("abc")); }
  CHECK_FALSE(st.exists(at("aborted.bin")));
  CHECK_FALSE(st.exists(at("dropped.bin")));

  if (large) {
    // Several 5 MiB parts (multipart on S3, blocks on Azure), written a MiB at a time.
    std::string big((11 << 20) + 77, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = char((i * 2654435761u) >> 13);
    auto s = st.create_sink(at("big.bin"));
    for (std::size_t off = 0; off < big.size(); off += 1 << 20) s.write(view(big.substr(off, 1 << 20)));
    s.finish();
    CHECK(st.size(at("big.bin")) == big.size());
    const auto b = st.open_source(at("big.bin"));
    CHECK(byte_vector(b.read(6 << 20, 100)) == std::vector<std::uint8_t>(big.begin() + (6 << 20), big.begin() + (6 << 20) + 100));
    CHECK(st.read_all(at("big.bin")) == big);
    // Aborted after a part went up: still nothing at the name.
    auto half = st.create_sink(at("half.bin"));
    for (std::size_t off = 0; off < (7u << 20); off += 1 << 20) half.write(view(big.substr(off, 1 << 20)));
    half.abort();
    CHECK_FALSE(st.exists(at("half.bin")));
    st.remove(at("big.bin"));
  }

  // Removal: files (missing ones are fine), then a whole directory.
  const std::vector<std::string> gone{at("a.txt"), at("never.txt")};
  st.remove(gone);
  CHECK_FALSE(st.exists(at("a.txt")));
  st.remove_all(at("d"));
  CHECK(names(st.list(root, true)) == std::vector<std::string>{"b.txt", "m.manifest"});
  st.remove_all(root);
  CHECK(st.list(root, true).empty());
}

}  // namespace lancet::testing
