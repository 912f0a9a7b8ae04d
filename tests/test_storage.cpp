// io::storage on the local file system (the contract every storage meets, also as
// file:// URIs), io::any_sink over sinks with and without abort(), and how
// storage_for resolves a root: local paths, mounted URI prefixes (the longest wins, at
// a '/' boundary), and a clear error for a URI nothing is mounted for.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <lancet/io/any_sink.hpp>
#include <lancet/io/memory_sink.hpp>
#include <lancet/io/storage.hpp>

#include "support/storage_checks.hpp"
#include "support/temp_dir.hpp"
#include "support/text.hpp"

using namespace lancet;
namespace t = lancet::testing;

namespace {

// A storage that only has a name: what storage_for picked, without touching any store.
struct named_backend final : io::storage::backend {
  explicit named_backend(std::string n) : n_(std::move(n)) {}
  bool is_local() const noexcept override { return false; }
  const std::string& name() const noexcept override { return n_; }
  io::any_source open_source(const std::string& p, std::optional<std::uint64_t>) const override { throw unused(p); }
  io::any_sink create_sink(const std::string& p, const io::storage_sink_options&) const override { throw unused(p); }
  std::optional<std::uint64_t> size(const std::string& p) const override { throw unused(p); }
  std::vector<io::stored_file> list(const std::string& p, bool) const override { throw unused(p); }
  void remove(std::span<const std::string>) const override { throw unused("remove"); }
  void remove_all(const std::string& p) const override { throw unused(p); }

 private:
  internal_error unused(const std::string& what) const { return internal_error(n_ + ": not for use (" + what + ")"); }
  std::string n_;
};

io::storage named(std::string n) { return io::storage(std::make_shared<const named_backend>(std::move(n))); }

// A sink without abort(): dropping it is how it discards.
struct plain_sink {
  std::string* out;
  std::string pending;
  void write(bytes_view b) { pending.append(reinterpret_cast<const char*>(b.data()), b.size()); }
  std::uint64_t position() const { return pending.size(); }
  void finish() { *out = pending; }
};

}  // namespace

TEST_CASE("local storage: the storage contract, by path and by file:// URI") {
  t::scratch_dir dir("storage");
  const auto st = io::storage::local();
  CHECK(st.is_local());
  t::check_storage_contract(st, dir.sub("by-path"), true, true);
  t::check_storage_contract(st, "file://" + dir.sub("by-uri"), true, false);
  // Parents are created; a directory is not a file.
  st.put(dir.sub("x/y/z.bin"), t::view("z"));
  CHECK(std::filesystem::is_regular_file(dir.sub("x/y/z.bin")));
  CHECK_FALSE(st.size(dir.sub("x/y")).has_value());
}

TEST_CASE("any_sink: forwards to the sink; abort discards, with or without the sink's own abort()") {
  io::memory_sink m;
  io::any_sink a(std::move(m));
  a.write(t::view("abc"));
  CHECK(a.position() == 3);
  a.finish();
  CHECK_THROWS_AS(a.finish(), invalid_input_error);  // the memory sink's own check

  std::string out;
  {
    io::any_sink p(plain_sink{&out, {}});
    p.write(t::view("xyz"));
    p.abort();
    CHECK_THROWS_WITH_AS(p.finish(), doctest::Contains("moved from or aborted"), invalid_input_error);
  }
  CHECK(out.empty());
  io::any_sink q(plain_sink{&out, {}});
  q.write(t::view("kept"));
  q.finish();
  CHECK(out == "kept");
}

TEST_CASE("storage_for: local paths and file://, mounted URIs by longest prefix, an error otherwise") {
  CHECK(io::storage_for("/data/items").is_local());
  CHECK(io::storage_for("relative/items").is_local());
  CHECK(io::storage_for("file:///data/items").is_local());
  CHECK(io::local_path("file:///data/items") == "/data/items");
  CHECK(io::is_uri("s3://b/x"));
  CHECK_FALSE(io::is_uri("/a/b://c"));
  CHECK_FALSE(io::is_uri("://x"));

  CHECK_THROWS_WITH_AS(io::storage_for("s3://bucket/db"),
                       doctest::Contains("no storage for 's3://bucket/db': include lancet/io/object_store/object_storage.hpp"),
                       unsupported_error);
  io::mount("s3://bucket", named("whole bucket"));
  io::mount("s3://bucket/db/", named("db"));  // a trailing '/' is the same prefix
  CHECK(io::storage_for("s3://bucket/db").name() == "db");
  CHECK(io::storage_for("s3://bucket/db/items").name() == "db");
  CHECK(io::storage_for("s3://bucket/dbx").name() == "whole bucket");  // not under "s3://bucket/db"
  CHECK(io::storage_for("s3://bucket/other/items").name() == "whole bucket");
  CHECK_THROWS_AS(io::storage_for("s3://bucket2/db"), unsupported_error);
  CHECK_THROWS_AS(io::storage_for("az://bucket/db"), unsupported_error);
  io::mount("s3://bucket/db", named("db again"));  // replaces
  CHECK(io::storage_for("s3://bucket/db/items").name() == "db again");
  CHECK(io::unmount("s3://bucket/db"));
  CHECK_FALSE(io::unmount("s3://bucket/db"));
  CHECK(io::storage_for("s3://bucket/db/items").name() == "whole bucket");
  CHECK(io::unmount("s3://bucket"));
  CHECK_THROWS_AS(io::storage_for("s3://bucket/db"), unsupported_error);
  CHECK_THROWS_WITH_AS(io::mount("/local/dir", named("x")), doctest::Contains("is not a URI"), invalid_input_error);
}
