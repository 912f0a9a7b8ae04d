// io/object_store against an S3 emulator (s3rver 3.7.1 from tests/interop, started on a
// free port of 127.0.0.1 and stopped by the test): objects written, read whole and by
// range, sized, listed over several pages, deleted; multipart uploads; errors that name
// the object and the HTTP status; retries of a server that does not answer.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <lancet/arrow/builder.hpp>
#include <lancet/arrow/compare.hpp>
#include <lancet/dataset/cleanup.hpp>
#include <lancet/dataset/compact.hpp>
#include <lancet/dataset/dataset.hpp>
#include <lancet/dataset/delete.hpp>
#include <lancet/dataset/write.hpp>
#include <lancet/file/reader.hpp>
#include <lancet/file/structural.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/index/build/ivf_builder.hpp>
#include <lancet/index/optimize/optimize_indices.hpp>
#include <lancet/index/optimize/remap.hpp>
#include <lancet/index/registry.hpp>
#include <lancet/io/object_store/azure_client.hpp>
#include <lancet/io/object_store/crypto.hpp>
#include <lancet/io/object_store/object_io.hpp>
#include <lancet/io/object_store/object_storage.hpp>
#include <lancet/io/object_store/s3_client.hpp>
#include <lancet/json/base64.hpp>
#include <lancet/query/table.hpp>
#include <nlohmann/json.hpp>

#include "support/batch_columns.hpp"
#include "support/emulator.hpp"
#include "support/interop.hpp"
#include "support/storage_checks.hpp"
#include "support/text.hpp"

using namespace lancet;
namespace os = lancet::io::object_store;
namespace t = lancet::testing;

namespace {

os::s3_options s3rver_options(const t::emulator& e) {
  return os::read_s3_options({{"aws_access_key_id", "S3RVER"},
                              {"aws_secret_access_key", "S3RVER"},
                              {"aws_endpoint", e.url()},
                              {"aws_region", "us-east-1"},
                              {"allow_http", "true"}},
                             [](const std::string&) { return std::nullopt; });
}

std::string bytes(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) c = char((x = x * 1664525u + 1013904223u) >> 24);
  return s;
}

}  // namespace

TEST_CASE("object store: S3 operations against s3rver") {
  t::temp_dir tmp("s3rver");
  t::emulator server({"node", "--openssl-legacy-provider", (t::interop_dir() / "s3rver.mjs").string(),
                      (tmp.path() / "s3").string(), "lance"});
  os::s3_client s3(s3rver_options(server), "lance");

  // Whole objects and ranges; names that need encoding.
  const auto a = bytes(100000, 1);
  CHECK(!s3.put("db/data/a file+1.lance", a).empty());
  CHECK(s3.get("db/data/a file+1.lance") == a);
  CHECK(s3.get("db/data/a file+1.lance", std::pair<std::uint64_t, std::uint64_t>{1000, 1010}) == a.substr(1000, 10));
  CHECK(s3.get("db/data/a file+1.lance", std::pair<std::uint64_t, std::uint64_t>{99990, 100000}) == a.substr(99990));
  CHECK(s3.size("db/data/a file+1.lance") == 100000u);
  CHECK_FALSE(s3.size("db/data/none.lance").has_value());
  CHECK(s3.put_if_absent("db/_versions/1.manifest", "m1"));
  CHECK(s3.get("db/_versions/1.manifest") == "m1");

  // A listing of more than one page (S3's pages hold 1,000 keys).
  for (int i = 0; i < 1005; ++i) s3.put("db/many/" + std::to_string(100000 + i), std::to_string(i));
  const auto listed = s3.list("db/many/");
  REQUIRE(listed.size() == 1005);
  CHECK(listed.front().key == "db/many/100000");
  CHECK(listed.back().key == "db/many/101004");
  CHECK(listed[7].size == 1);
  CHECK(s3.list("db/data/").size() == 1);
  CHECK(s3.list("nothing/").empty());

  // Multipart: a 5 MiB part and a short last one.
  const auto p1 = bytes(5 << 20, 2), p2 = bytes(12345, 3);
  const auto id = s3.start_upload("db/data/big.lance");
  const std::vector<std::string> etags = {s3.upload_part("db/data/big.lance", id, 0, p1),
                                          s3.upload_part("db/data/big.lance", id, 1, p2)};
  s3.complete_upload("db/data/big.lance", id, etags);
  CHECK(s3.size("db/data/big.lance") == p1.size() + p2.size());
  CHECK(s3.get("db/data/big.lance", std::pair<std::uint64_t, std::uint64_t>{(5 << 20) - 3, (5 << 20) + 3}) ==
        p1.substr(p1.size() - 3) + p2.substr(0, 3));

  // Deletes, and deleting what is not there.
  s3.remove("db/data/a file+1.lance");
  CHECK_FALSE(s3.size("db/data/a file+1.lance").has_value());
  s3.remove("db/data/a file+1.lance");
  // Many at once (DeleteObjects), with names XML must escape and one that is not there.
  s3.put("db/x/a&b <c>.bin", "1");
  s3.put("db/x/2", "2");
  s3.put("db/x/3", "3");
  const std::vector<std::string> gone = {"db/x/a&b <c>.bin", "db/x/none", "db/x/2"};
  s3.remove_many(gone);
  REQUIRE(s3.list("db/x/").size() == 1);
  CHECK(s3.list("db/x/")[0].key == "db/x/3");

  // Errors name the object and the answer.
  CHECK_THROWS_WITH_AS(s3.get("db/missing"), doctest::Contains("s3://lance/db/missing: GET answered HTTP 404 NoSuchKey"),
                       not_found_error);
  os::s3_client other(s3rver_options(server), "no-such-bucket");
  CHECK_THROWS_WITH_AS(other.list("x/"), doctest::Contains("HTTP 404 NoSuchBucket"), not_found_error);
  auto wrong = s3rver_options(server);
  wrong.access_key_id = "NOBODY";
  os::s3_client denied(wrong, "lance");
  CHECK_THROWS_WITH_AS(denied.get("db/_versions/1.manifest"), doctest::Contains("HTTP 403 InvalidAccessKeyId"), io_error);
  CHECK(s3.retries() == 0);
}

TEST_CASE("object store: a server that is not there is retried, then named") {
  // A port nothing listens on: connections are refused at once.
  auto o = os::read_s3_options({{"aws_endpoint", "http://127.0.0.1:9"}, {"allow_http", "true"},
                                {"client_max_retries", "2"}, {"aws_access_key_id", "k"}, {"aws_secret_access_key", "s"}},
                               [](const std::string&) { return std::nullopt; });
  os::s3_client s3(o, "lance");
  CHECK_THROWS_WITH_AS(s3.get("db/x"), doctest::Contains("s3://lance/db/x: http://127.0.0.1:9: connecting to 127.0.0.1:9"),
                       io_error);
  CHECK(s3.retries() == 2);
  CHECK_THROWS_WITH_AS(os::s3_client(os::read_s3_options({{"aws_endpoint", "http://127.0.0.1:9"}},
                                                         [](const std::string&) { return std::nullopt; }),
                                     "lance"),
                       doctest::Contains("http is not allowed"), invalid_input_error);
}

TEST_CASE("object store: Azure Blob operations against Azurite, which checks Shared Key and If-None-Match") {
  t::temp_dir tmp("azurite");
  t::emulator server({"node", (t::interop_dir() / "azurite.mjs").string(), (tmp.path() / "az").string(), "lance"});
  const auto options = [&](std::string key) {
    return os::read_azure_options({{"azure_storage_account_name", "devstoreaccount1"},
                                   {"azure_storage_account_key", std::move(key)},
                                   {"azure_storage_endpoint", server.url() + "/devstoreaccount1"},
                                   {"allow_http", "true"}},
                                  [](const std::string&) { return std::nullopt; });
  };
  os::azure_client az(options(std::string(os::emulator_key)), "lance");

  const auto a = bytes(70000, 4);
  CHECK(!az.put("db/data/a file+1.lance", a).empty());
  CHECK(az.get("db/data/a file+1.lance") == a);
  CHECK(az.get("db/data/a file+1.lance", std::pair<std::uint64_t, std::uint64_t>{65536, 65546}) == a.substr(65536, 10));
  CHECK(az.size("db/data/a file+1.lance") == 70000u);
  CHECK_FALSE(az.size("db/data/none.lance").has_value());
  CHECK(az.put("db/empty", "") != "");
  CHECK(az.size("db/empty") == 0u);

  // The manifest commit: the second writer of a version loses, the first one's bytes stay.
  CHECK(az.put_if_absent("db/_versions/18446744073709551614.manifest", "first"));
  CHECK_FALSE(az.put_if_absent("db/_versions/18446744073709551614.manifest", "second"));
  CHECK(az.get("db/_versions/18446744073709551614.manifest") == "first");

  // Listing over several pages.
  for (int i = 0; i < 25; ++i) az.put("db/many/" + std::to_string(100 + i), std::to_string(i));
  const auto listed = az.list("db/many/", 10);
  REQUIRE(listed.size() == 25);
  CHECK(listed.front().key == "db/many/100");
  CHECK(listed.back().key == "db/many/124");
  CHECK(listed[3].size == 1);
  CHECK(az.list("db/").size() == 28);

  // Blocks: staged, then committed in order.
  const auto b0 = bytes(3 << 20, 5), b1 = bytes(1000, 6);
  const auto upload = az.start_upload("db/data/big.lance");
  const std::vector<std::string> blocks = {az.upload_part("db/data/big.lance", upload, 0, b0),
                                           az.upload_part("db/data/big.lance", upload, 1, b1)};
  CHECK_FALSE(az.size("db/data/big.lance").has_value());  // nothing visible before the list
  CHECK(az.complete_upload("db/data/big.lance", upload, blocks, true));
  CHECK(az.get("db/data/big.lance") == b0 + b1);
  // Committed on the condition that the key is free: refused once it is taken.
  const auto again = az.start_upload("db/data/big.lance");
  const std::vector<std::string> other = {az.upload_part("db/data/big.lance", again, 0, b1)};
  CHECK_FALSE(az.complete_upload("db/data/big.lance", again, other, true));
  CHECK(az.get("db/data/big.lance") == b0 + b1);

  az.remove("db/data/a file+1.lance");
  CHECK_FALSE(az.size("db/data/a file+1.lance").has_value());
  az.remove("db/data/a file+1.lance");

  CHECK_THROWS_WITH_AS(az.get("db/missing"), doctest::Contains("az://lance/db/missing: Get Blob answered HTTP 404 BlobNotFound"),
                       not_found_error);
  os::azure_client none(options(std::string(os::emulator_key)), "no-such-container");
  CHECK_THROWS_WITH_AS(none.list("x/"), doctest::Contains("HTTP 404 ContainerNotFound"), not_found_error);
  // A wrong key: Azurite checks the signature.
  os::azure_client wrong(options("d3Jvbmcga2V5"), "lance");
  CHECK_THROWS_WITH_AS(wrong.get("db/empty"), doctest::Contains("HTTP 403"), io_error);
  CHECK_THROWS_WITH_AS(os::azure_client(os::read_azure_options({{"azure_storage_account_name", "a"}},
                                                               [](const std::string&) { return std::nullopt; }),
                                        "lance"),
                       doctest::Contains("no credentials"), invalid_input_error);
  CHECK(az.retries() == 0);
}

namespace {

// A Lance file written to `key` through an object_sink and read back through an
// object_source: the batches equal; a multipart write when it exceeds one part.
template <class Client>
void check_files_through(std::shared_ptr<os::client_pool<Client>> pool, const std::string& key, std::size_t rows) {
  std::vector<std::int64_t> ids(rows);
  std::vector<std::optional<std::string>> names(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    ids[i] = std::int64_t(i * 7919 % rows);
    if (i % 5) names[i] = "name " + std::to_string(i);
  }
  const auto batch = arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)}, {"name", arrow::string_array(names)}});
  {
    file::file_writer<file::v2_1, os::object_sink<Client>> w(os::object_sink<Client>(pool, key));
    w.write_batch(batch);
    w.finish();
  }
  const file::file_reader<os::object_source<Client>> r{os::object_source<Client>(pool, key)};
  CHECK(r.num_rows() == rows);
  const auto back = r.read({});
  CHECK(arrow::array_equals(back.columns[0], batch.columns[0]));
  CHECK(arrow::array_equals(back.columns[1], batch.columns[1]));
  // Some rows, by index: ranged reads.
  const auto some = r.read({{"name"}, std::nullopt, std::vector<std::uint64_t>{1, rows / 2, rows - 1}});
  CHECK(some.columns[0]->length == 3);
}

}  // namespace

TEST_CASE("object store: Lance files written and read through object sinks and sources, on both stores") {
  t::temp_dir tmp("object-io");
  t::emulator s3rver({"node", "--openssl-legacy-provider", (t::interop_dir() / "s3rver.mjs").string(),
                      (tmp.path() / "s3").string(), "lance"});
  t::emulator azurite({"node", (t::interop_dir() / "azurite.mjs").string(), (tmp.path() / "az").string(), "lance"});
  const auto s3_options = s3rver_options(s3rver);
  const auto az_options = os::read_azure_options({{"azure_storage_account_name", "devstoreaccount1"},
                                                  {"azure_storage_account_key", std::string(os::emulator_key)},
                                                  {"azure_storage_endpoint", azurite.url() + "/devstoreaccount1"},
                                                  {"allow_http", "true"}},
                                                 [](const std::string&) { return std::nullopt; });
  auto s3 = std::make_shared<os::client_pool<os::s3_client>>([&] { return std::make_unique<os::s3_client>(s3_options, "lance"); });
  auto az = std::make_shared<os::client_pool<os::azure_client>>(
      [&] { return std::make_unique<os::azure_client>(az_options, "lance"); });

  check_files_through(s3, "db/data/small.lance", 1000);
  check_files_through(az, "db/data/small.lance", 1000);
  // About 14 MiB: three parts (S3) / blocks (Azure).
  check_files_through(s3, "db/data/large.lance", 700000);
  check_files_through(az, "db/data/large.lance", 700000);

  // Parts uploaded three at a time, written in odd-sized pieces: the object is the bytes in order.
  const auto big = bytes((26 << 20) + 12345, 9);
  const auto write_pieces = [&](auto sink) {
    for (std::size_t at = 0; at < big.size(); at += 1000003) sink.write(t::view(big.substr(at, 1000003)));
    CHECK(sink.position() == big.size());
    sink.finish();
  };
  write_pieces(os::object_sink<os::s3_client>(s3, "db/data/parallel.bin", {.parts_in_flight = 3}));
  write_pieces(os::object_sink<os::azure_client>(az, "db/data/parallel.bin", {.parts_in_flight = 3}));
  CHECK(s3->with([](os::s3_client& c) { return c.get("db/data/parallel.bin"); }) == big);
  CHECK(az->with([](os::azure_client& c) { return c.get("db/data/parallel.bin"); }) == big);
  CHECK_THROWS_WITH_AS(os::object_sink<os::s3_client>(s3, "x", {.parts_in_flight = 0}),
                       doctest::Contains("parts_in_flight must be at least 1"), invalid_input_error);

  // A sink never finished leaves nothing at its key, whether or not a part went up.
  for (const std::size_t bytes : {std::size_t(1000), std::size_t(6) << 20}) {
    {
      os::object_sink<os::s3_client> a(s3, "db/data/abandoned.lance");
      os::object_sink<os::azure_client> b(az, "db/data/abandoned.lance");
      const std::string junk(bytes, 'x');
      a.write(t::view(junk));
      b.write(t::view(junk));
    }
    CHECK_FALSE(s3->with([](os::s3_client& c) { return c.size("db/data/abandoned.lance"); }).has_value());
    CHECK_FALSE(az->with([](os::azure_client& c) { return c.size("db/data/abandoned.lance"); }).has_value());
  }

  // A manifest sink: the first writer of the key wins, the second gets conflict_error.
  const auto commit = [&](const std::string& text) {
    os::object_sink<os::azure_client> m(az, "db/_versions/18446744073709551614.manifest", {.if_absent = true});
    m.write(t::view(text));
    m.finish();
  };
  commit("first");
  CHECK_THROWS_WITH_AS(commit("second"), doctest::Contains("az://lance/db/_versions/18446744073709551614.manifest: already exists"),
                       conflict_error);
  CHECK(az->with([](os::azure_client& c) { return c.get("db/_versions/18446744073709551614.manifest"); }) == "first");
  // An exclusive sink larger than a part streams as an upload completed on the same
  // condition (memory stays at parts_in_flight parts, not the object).
  const auto large = [&](const std::string& key, char fill) {
    os::object_sink<os::azure_client> m(az, key, {.part_size = 5 << 20, .parts_in_flight = 2, .if_absent = true});
    m.write(t::view(std::string((12 << 20) + 5, fill)));
    m.finish();
  };
  large("db/data/exclusive.lance", 'a');
  CHECK_THROWS_WITH_AS(large("db/data/exclusive.lance", 'b'), doctest::Contains("exclusive.lance: already exists"),
                       conflict_error);
  CHECK(az->with([](os::azure_client& c) { return c.get("db/data/exclusive.lance"); }) == std::string((12 << 20) + 5, 'a'));
  CHECK_THROWS_WITH_AS((os::object_source<os::s3_client>(s3, "db/none.lance")),
                       doctest::Contains("s3://lance/db/none.lance: no such object"), not_found_error);
}

TEST_CASE("object store: https, with the server's certificate verified against the trust store") {
  t::temp_dir tmp("azurite-tls");
  const auto cert = (tmp.path() / "cert.pem").string(), key = (tmp.path() / "key.pem").string();
  // A certificate for 127.0.0.1 (an IP subjectAltName), trusted only where the test says.
  REQUIRE(t::run("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=lancet-test -addext "
                 "subjectAltName=IP:127.0.0.1 -keyout " + t::quote(key) + " -out " + t::quote(cert) + " 2>/dev/null")
              .status == 0);
  t::emulator server({"node", (t::interop_dir() / "azurite.mjs").string(), "--tls", cert, key,
                      (tmp.path() / "az").string(), "lance"});
  const std::string https = "https://127.0.0.1:" + std::to_string(server.port()) + "/devstoreaccount1";
  const auto client = [&](bool allow_invalid) {
    return os::azure_client(os::read_azure_options({{"azure_storage_account_name", "devstoreaccount1"},
                                                    {"azure_storage_account_key", std::string(os::emulator_key)},
                                                    {"azure_storage_endpoint", https},
                                                    {"allow_invalid_certificates", allow_invalid ? "true" : "false"},
                                                    {"client_max_retries", "0"}},
                                                   [](const std::string&) { return std::nullopt; }),
                            "lance");
  };
  const char* old = std::getenv("SSL_CERT_FILE");
  const std::string saved = old ? old : "";
  // Not trusted: refused, naming the endpoint.
  ::setenv("SSL_CERT_FILE", "/nonexistent.pem", 1);
  {
    auto az = client(false);
    CHECK_THROWS_WITH_AS(az.put("db/x", "x"), doctest::Contains("TLS handshake with 127.0.0.1:"), io_error);
  }
  // Trusted through SSL_CERT_FILE: the same requests go through.
  ::setenv("SSL_CERT_FILE", cert.c_str(), 1);
  {
    auto az = client(false);
    az.put("db/x", "over tls");
    CHECK(az.get("db/x") == "over tls");
    CHECK(az.get("db/x", std::pair<std::uint64_t, std::uint64_t>{5, 8}) == "tls");
  }
  // allow_invalid_certificates: no verification at all.
  ::setenv("SSL_CERT_FILE", "/nonexistent.pem", 1);
  {
    auto az = client(true);
    CHECK(az.get("db/x") == "over tls");
  }
  if (old) ::setenv("SSL_CERT_FILE", saved.c_str(), 1);
  else ::unsetenv("SSL_CERT_FILE");
}

TEST_CASE("object store: a conditional put whose answer was lost is not mistaken for a lost race") {
  t::temp_dir tmp("drop-proxy");
  t::emulator azurite({"node", (t::interop_dir() / "azurite.mjs").string(), (tmp.path() / "az").string(), "lance"});
  t::emulator proxy({"node", (t::interop_dir() / "drop_proxy.mjs").string(), std::to_string(azurite.port())});
  os::azure_client az(os::read_azure_options({{"azure_storage_account_name", "devstoreaccount1"},
                                              {"azure_storage_account_key", std::string(os::emulator_key)},
                                              {"azure_storage_endpoint", proxy.url() + "/devstoreaccount1"},
                                              {"allow_http", "true"}},
                                             [](const std::string&) { return std::nullopt; }),
                      "lance");
  // The first attempt stores the manifest and its answer is dropped; the retry is refused
  // (409): the manifest holds our bytes, so the commit is ours.
  CHECK(az.put_if_absent("db/_versions/18446744073709551614.manifest", "ours"));
  CHECK(az.retries() == 1);
  CHECK(az.get("db/_versions/18446744073709551614.manifest") == "ours");
  // Another writer's manifest for the same version is refused.
  CHECK_FALSE(az.put_if_absent("db/_versions/18446744073709551614.manifest", "theirs"));
  CHECK(az.get("db/_versions/18446744073709551614.manifest") == "ours");
}

// io::read_into takes the source's own batched read.
static_assert(requires(const os::object_source<os::s3_client>& s, std::span<const io::byte_range> r, std::uint8_t* o) {
  s.read_into(r, o);
});

TEST_CASE("object store: many ranges read at once, cut or merged, fetched concurrently, read in place") {
  t::temp_dir tmp("read-into");
  t::emulator server({"node", "--openssl-legacy-provider", (t::interop_dir() / "s3rver.mjs").string(),
                      (tmp.path() / "s3").string(), "lance"});
  const auto options = s3rver_options(server);
  auto pool = std::make_shared<os::client_pool<os::s3_client>>([&] { return std::make_unique<os::s3_client>(options, "lance"); });
  const auto data = bytes(40 << 20, 11);
  pool->with([&](os::s3_client& c) { c.put("db/data/ranges.bin", data); });
  const os::object_source<os::s3_client> src(pool, "db/data/ranges.bin");
  // Out of order, overlapping, empty, far apart (separate requests) and close (merged).
  std::vector<io::byte_range> ranges = {{30u << 20, 100}, {5, 10}, {0, 0}, {8, 20}, {(40u << 20) - 7, 7},
                                        {1000, 4096}, {17u << 20, 3 << 20}, {2 << 20, 1}};
  for (std::uint64_t i = 0; i < 20; ++i) ranges.push_back({(i * 1999993) % (39u << 20), 333});
  // Larger than a request (cut into pieces read in place), end to end in the object and
  // in `out` (read in place together), and end to end in the object but not in `out`.
  ranges.push_back({(3u << 20) + 1, (19u << 20) + 5});
  ranges.push_back({(23u << 20), 1000});
  ranges.push_back({(23u << 20) + 1000, 2000});
  ranges.push_back({(25u << 20) + 500, 700});
  ranges.push_back({(25u << 20), 500});
  std::uint64_t total = 0;
  for (const auto& r : ranges) total += r.length;
  std::vector<std::uint8_t> out(total);
  io::read_into(src, ranges, out.data());
  std::string want;
  for (const auto& r : ranges) want += data.substr(std::size_t(r.offset), std::size_t(r.length));
  CHECK(std::string(out.begin(), out.end()) == want);
  const auto whole = src.read(7, (40u << 20) - 7);
  CHECK(std::string(reinterpret_cast<const char*>(whole.data()), whole.size()) == data.substr(7));
  CHECK(src.read(40u << 20, 0).size() == 0);
  const std::vector<io::byte_range> past = {{0, 10}, {(40u << 20) - 5, 10}};
  CHECK_THROWS_WITH_AS(io::read_into(src, past, out.data()), doctest::Contains("past the end of 's3://lance/db/data/ranges.bin'"),
                       corrupt_error);
}

TEST_CASE("object store: S3 and Azure as io::storage meet the storage contract; paths outside are refused") {
  t::temp_dir tmp("object-storage");
  t::emulator s3rver({"node", "--openssl-legacy-provider", (t::interop_dir() / "s3rver.mjs").string(),
                      (tmp.path() / "s3").string(), "lance"});
  t::emulator azurite({"node", (t::interop_dir() / "azurite.mjs").string(), (tmp.path() / "az").string(), "lance"});
  const auto no_env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  const auto s3 = os::open_storage("s3://lance/db",
                                   {{"aws_access_key_id", "S3RVER"},
                                    {"aws_secret_access_key", "S3RVER"},
                                    {"aws_endpoint", s3rver.url()},
                                    {"aws_region", "us-east-1"},
                                    {"allow_http", "true"}},
                                   no_env);
  const auto az = os::open_storage("az://lance/db",
                                   {{"azure_storage_account_name", "devstoreaccount1"},
                                    {"azure_storage_account_key", std::string(os::emulator_key)},
                                    {"azure_storage_endpoint", azurite.url() + "/devstoreaccount1"},
                                    {"allow_http", "true"}},
                                   no_env);
  CHECK_FALSE(s3.is_local());
  CHECK(s3.name() == "s3://lance/db");
  CHECK(az.name() == "az://lance/db");
  // s3rver ignores If-None-Match (docs/design/object_store_facts.md): its conditional put is not checked.
  t::check_storage_contract(s3, "s3://lance/db/contract", false, true);
  t::check_storage_contract(az, "az://lance/db/contract", true, true);
  t::check_storage_contract(az, "azure://lance/db/other", true, false);  // another spelling of the scheme

  // Sizes known from a listing open without a request; a wrong one is caught by the reads' range checks.
  s3.put("s3://lance/db/sized.bin", t::view("0123456789"));
  CHECK(s3.list("s3://lance/db").at(0).path == "sized.bin");
  CHECK(t::byte_vector(s3.open_source("s3://lance/db/sized.bin", 10).read(8, 2)) == std::vector<std::uint8_t>{'8', '9'});

  // More files than one bulk delete takes: removed by path (missing ones fine), then the rest by directory.
  for (const auto& [st, root] : {std::pair{&s3, std::string("s3://lance/db/bulk")}, std::pair{&az, std::string("az://lance/db/bulk")}}) {
    std::vector<std::string> paths;
    for (int i = 0; i < 1003; ++i) paths.push_back(root + "/f" + std::to_string(i));
    for (const auto& p : paths) st->put(p, t::view("x"));
    REQUIRE(st->list(root).size() == 1003);
    std::vector<std::string> some(paths.begin(), paths.begin() + 1001);
    some.push_back(root + "/never");
    st->remove(some);
    REQUIRE(st->list(root).size() == 2);
    CHECK(st->list(root)[0].path == "f1001");
    st->remove_all(root);
    CHECK(st->list(root).empty());
  }

  for (const auto* st : {&s3, &az}) {
    CHECK_THROWS_WITH_AS(st->put("s3://other/db/x", t::view("x")), doctest::Contains("is not inside the storage"),
                         invalid_input_error);
    CHECK_THROWS_AS(st->size("s3://lance/dbx/y"), invalid_input_error);
    CHECK_THROWS_AS(st->list("/local/dir"), invalid_input_error);
  }
  CHECK_THROWS_AS(az.size("s3://lance/db/x"), invalid_input_error);  // same bucket name, another store
  CHECK_THROWS_WITH_AS(os::open_storage("/local/dir"), doctest::Contains("is a local path"), invalid_input_error);

  // Mounted, the stores are what storage_for gives for roots under them.
  io::mount("s3://lance/db", s3);
  CHECK(io::storage_for("s3://lance/db/items").name() == "s3://lance/db");
  CHECK(io::storage_for("s3://lance/db/items").exists("s3://lance/db/sized.bin"));
  CHECK(io::unmount("s3://lance/db"));
}

namespace {

// s3rver and Azurite started in a scratch directory, each with the bucket / container
// "lance", and each store's database URI with the storage options LanceDB takes for it.
struct emulated_stores {
  t::temp_dir tmp;
  t::emulator s3rver;
  t::emulator azurite;
  std::vector<std::pair<std::string, os::storage_options>> stores;
  explicit emulated_stores(const std::string& tag)
      : tmp(tag),
        s3rver({"node", "--openssl-legacy-provider", (t::interop_dir() / "s3rver.mjs").string(),
                (tmp.path() / "s3").string(), "lance"}),
        azurite({"node", (t::interop_dir() / "azurite.mjs").string(), (tmp.path() / "az").string(), "lance"}),
        stores({{"s3://lance/db",
                 {{"aws_access_key_id", "S3RVER"},
                  {"aws_secret_access_key", "S3RVER"},
                  {"aws_endpoint", s3rver.url()},
                  {"aws_region", "us-east-1"},
                  {"allow_http", "true"}}},
                {"az://lance/db",
                 {{"azure_storage_account_name", "devstoreaccount1"},
                  {"azure_storage_account_key", std::string(os::emulator_key)},
                  {"azure_storage_endpoint", azurite.url() + "/devstoreaccount1"},
                  {"allow_http", "true"}}}}) {}
};

std::optional<std::string> no_environment(const std::string&) { return std::nullopt; }

}  // namespace

// LanceDB writes a table on each store (create, a delete, an append: two fragments, a
// deletion file, three versions); lancet, with the store mounted, finds its versions,
// reads its manifests, data and deletion files, and answers a filtered query.
TEST_CASE("object store: datasets LanceDB wrote on S3 and Azure, read through the mounted storages") {
  const emulated_stores es("object-datasets");
  const auto& stores = es.stores;
  const std::int64_t rows = 400;
  for (const auto& [db, options] : stores) {
    CAPTURE(db);
    nlohmann::json opts(options);
    const auto wrote = nlohmann::json::parse(t::node("object_store_table.mjs", {db, opts.dump(), "write", std::to_string(rows)}));
    REQUIRE(wrote["bad"].empty());
    const std::string root = db + "/t.lance";
    CHECK_THROWS_WITH_AS(dataset::dataset::open(root), doctest::Contains("no storage for"), unsupported_error);
    io::mount(db, os::open_storage(db, options, no_environment));
    const auto ds = dataset::dataset::open(root);
    CHECK(ds.version() == wrote["version"].get<std::uint64_t>());
    CHECK(ds.versions().size() == 3);
    CHECK(ds.count_rows() == wrote["countRows"].get<std::uint64_t>());
    CHECK(ds.fragments().size() == 2);
    CHECK(ds.has_deletions());
    const auto b = ds.to_batch();
    REQUIRE(b.num_rows() == std::int64_t(ds.count_rows()));
    const auto ids = t::int64_values(b);
    const auto& name = t::column_of(b, "name");
    const auto& vec = t::column_of(b, "vec");
    const auto& items = *vec.children.at(0);
    for (std::int64_t i = 0; i < b.num_rows(); ++i) {
      const std::int64_t x = ids[std::size_t(i)];
      CHECK((x >= rows || x % 7 != 3));  // the deleted rows are gone
      CHECK(name.string_value(i) == "n" + std::to_string(x));
      for (std::int64_t j = 0; j < 8; ++j) CHECK(items.value<float>((vec.offset + i) * 8 + j) == float(double(x) + double(j) / 8.0));
    }
    CHECK(ids == wrote["ids"].get<std::vector<std::int64_t>>());
    // The query layer over the same store: a filter, a projection, a take of the hits.
    const auto q = query::table::open(root).query().where("id >= 395 AND id < 405").select({"id", "vec"}).to_batch();
    CHECK(t::int64_values(q) == std::vector<std::int64_t>{396, 397, 398, 399, 400, 401, 402, 403, 404});
    CHECK_THROWS_WITH_AS(dataset::dataset::open(root, 9), doctest::Contains("has no version 9"), invalid_input_error);
    CHECK_THROWS_AS(dataset::dataset::open(db + "/none.lance"), not_found_error);
    CHECK(io::unmount(db));
  }
}

namespace {

// Rows as object_store_table.mjs writes them: id, name "n<id>", vec[j] = id + j / 8.
arrow::record_batch table_rows(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> ids;
  std::vector<std::optional<std::string>> names;
  std::vector<float> vec;
  for (std::int64_t id = from; id < to; ++id) {
    ids.push_back(id);
    names.push_back("n" + std::to_string(id));
    for (int j = 0; j < 8; ++j) vec.push_back(float(double(id) + j / 8.0));
  }
  return arrow::make_batch({{"id", arrow::make_array<std::int64_t>(ids)},
                            {"name", arrow::string_array(names)},
                            {"vec", arrow::make_fixed_size_list(arrow::make_array<float>(vec), 8)}});
}

dataset::write_options appending() {
  dataset::write_options o;
  o.mode = dataset::write_mode::append;
  return o;
}

// The ids LanceDB reads: from..to less the ones deleted.
std::vector<std::int64_t> ids_between(std::int64_t from, std::int64_t to, const std::function<bool(std::int64_t)>& deleted) {
  std::vector<std::int64_t> out;
  for (std::int64_t id = from; id < to; ++id)
    if (!deleted(id)) out.push_back(id);
  return out;
}

}  // namespace

// lancet writes a dataset on each store (create, append, delete) and changes one LanceDB
// wrote (append, delete); LanceDB reads every row of both. On Azurite, which refuses a
// second create of a manifest, three writers append at once and every commit lands.
TEST_CASE("object store: lancet writes, appends and deletes on S3 and Azure; LanceDB reads them") {
  const emulated_stores es("object-writes");
  const auto& stores = es.stores;
  const auto seventh = [](std::int64_t id) { return id % 7 == 3; };
  for (const auto& [db, options] : stores) {
    CAPTURE(db);
    const std::string opts = nlohmann::json(options).dump();
    const auto st = os::open_storage(db, options, no_environment);
    io::mount(db, st);

    // Ours: create, append, delete by predicate.
    const std::string ours = db + "/ours.lance";
    CHECK(dataset::write(ours, table_rows(0, 300)).version == 1);
    CHECK(dataset::write(ours, table_rows(300, 400), appending()).version == 2);
    CHECK(dataset::delete_where(ours, "id % 7 = 3").version == 3);
    CHECK_FALSE(st.exists(ours + "/_versions/latest_version_hint.json"));  // Lance keeps none on object stores
    CHECK_FALSE(st.list(ours + "/_transactions").empty());
    auto read = nlohmann::json::parse(t::node("object_store_table.mjs", {db, opts, "read", "ours"}));
    CHECK(read["version"] == 3);
    CHECK(read["bad"].empty());
    CHECK(read["ids"].get<std::vector<std::int64_t>>() == ids_between(0, 400, seventh));
    // Creating it again is refused; the version stays.
    CHECK_THROWS_WITH_AS(dataset::write(ours, table_rows(0, 1)), doctest::Contains("already exists"), invalid_input_error);
    CHECK(dataset::dataset::open(ours).version() == 3);
    // Compaction rewrites its two fragments into one, on the store (version 4 reserves
    // the new fragment ids, 5 is the rewrite).
    const auto compacted = dataset::compact_files(ours);
    CHECK(compacted.version == 5);
    CHECK(dataset::dataset::open(ours).fragments().size() == 1);
    read = nlohmann::json::parse(t::node("object_store_table.mjs", {db, opts, "read", "ours"}));
    CHECK(read["version"] == 5);
    CHECK(read["bad"].empty());
    CHECK(read["ids"].get<std::vector<std::int64_t>>() == ids_between(0, 400, seventh));
    // Cleanup removes the four older versions and the files only they used (the two
    // data files compaction replaced, their two deletion files, four transactions).
    dataset::cleanup_options co;
    co.keep_versions = 1;
    const auto cleaned = dataset::cleanup_old_versions(ours, co);
    CHECK(cleaned.removed_versions == std::vector<std::uint64_t>{1, 2, 3, 4});
    std::string removed;
    for (const auto& f : cleaned.removed_files) removed += f + " ";
    CAPTURE(removed);
    CHECK(cleaned.files_removed == 8);
    CHECK(st.list(ours + "/_versions").size() == 1);
    CHECK(st.list(ours + "/data").size() == 1);
    CHECK(st.list(ours + "/_deletions").empty());
    read = nlohmann::json::parse(t::node("object_store_table.mjs", {db, opts, "read", "ours"}));
    CHECK(read["version"] == 5);
    CHECK(read["ids"].get<std::vector<std::int64_t>>() == ids_between(0, 400, seventh));
    // Exact search there (indexes: the test case below).
    std::vector<float> q;
    for (int j = 0; j < 8; ++j) q.push_back(float(50.1 + j / 8.0));
    const auto hits = query::table::open(ours).search("vec", q).bypass_vector_index().limit(2).select({"id"}).to_batch();
    CHECK(t::int64_values(hits) == std::vector<std::int64_t>{50, 51});

    // LanceDB's: ours appended to it and deleted from it.
    const auto wrote = nlohmann::json::parse(t::node("object_store_table.mjs", {db, opts, "write", "200"}));
    const std::string theirs = db + "/t.lance";
    const auto v = wrote["version"].get<std::uint64_t>();
    CHECK(dataset::write(theirs, table_rows(250, 300), appending()).version == v + 1);
    CHECK(dataset::delete_where(theirs, "id >= 100 AND id < 110").version == v + 2);
    read = nlohmann::json::parse(t::node("object_store_table.mjs", {db, opts, "read", "t"}));
    CHECK(read["version"] == v + 2);
    CHECK(read["bad"].empty());
    CHECK(read["ids"].get<std::vector<std::int64_t>>() ==
          ids_between(0, 300, [&](std::int64_t id) { return (id < 200 && seventh(id)) || (id >= 100 && id < 110); }));
    CHECK(io::unmount(db));
  }

  // Racing appenders on Azurite: conditional creates of the manifest decide each
  // version; losers rebase and retry (appends never conflict), so all land.
  const auto& [db, options] = stores[1];
  io::mount(db, os::open_storage(db, options, no_environment));
  const std::string race = db + "/race.lance";
  dataset::write(race, table_rows(0, 10));
  std::atomic<int> failed{0};
  std::atomic<unsigned> retries{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w)
    writers.emplace_back([&, w] {
      try {
        for (int k = 0; k < 3; ++k) {
          const std::int64_t from = 1000 * (w + 1) + 10 * k;
          retries += dataset::write(race, table_rows(from, from + 10), appending()).retries;
        }
      } catch (...) {
        ++failed;
      }
    });
  for (auto& th : writers) th.join();
  MESSAGE(retries.load() << " commits lost a race and were retried");
  CHECK(failed == 0);
  const auto ds = dataset::dataset::open(race);
  CHECK(ds.version() == 10);
  CHECK(ds.versions().size() == 10);
  CHECK(ds.count_rows() == 100);
  const auto read = nlohmann::json::parse(t::node("object_store_table.mjs", {db, nlohmann::json(options).dump(), "read", "race"}));
  CHECK(read["countRows"] == 100);
  CHECK(read["bad"].empty());
  CHECK(io::unmount(db));
}

namespace {

// Queries just off rows' own vectors (vec[j] = id + j / 8 + 0.01): each row is its
// query's nearest, then the next id, then the previous one (when present).
std::vector<std::vector<float>> queries_at(const std::vector<std::int64_t>& ids) {
  std::vector<std::vector<float>> out;
  for (auto id : ids) {
    std::vector<float> q;
    for (int j = 0; j < 8; ++j) q.push_back(float(double(id) + j / 8.0 + 0.01));
    out.push_back(std::move(q));
  }
  return out;
}

// The three nearest present ids to queries_at(ids), exactly.
std::vector<std::vector<std::int64_t>> nearest_three(const std::vector<std::int64_t>& ids,
                                                     const std::function<bool(std::int64_t)>& present) {
  std::vector<std::vector<std::int64_t>> out;
  for (auto id : ids) {
    std::vector<std::int64_t> near;
    for (std::int64_t d = 0; near.size() < 3; ++d) {  // id, id+1, id-1, id+2, id-2, ...
      if (present(id + d)) near.push_back(id + d);
      if (d != 0 && near.size() < 3 && present(id - d)) near.push_back(id - d);
    }
    out.push_back(std::move(near));
  }
  return out;
}

// lancet's 3 nearest ids through the index (all 4 partitions probed, refine 10) and
// the rows it does not cover.
std::vector<std::vector<std::int64_t>> lancet_nearest(const std::string& root, const std::vector<std::vector<float>>& qs) {
  std::vector<std::vector<std::int64_t>> out;
  const auto table = query::table::open(root);
  for (const auto& q : qs)
    out.push_back(t::int64_values(table.search("vec", q).nprobes(4).refine_factor(10).limit(3).select({"id"}).to_batch()));
  return out;
}

// LanceDB's view of the same search, and of the table's indexes.
nlohmann::json lancedb_search(const std::string& db, const os::storage_options& options, const std::string& table,
                              const std::vector<std::vector<float>>& qs) {
  return nlohmann::json::parse(
      t::node("object_store_table.mjs", {db, nlohmann::json(options).dump(), "search", table, nlohmann::json(qs).dump(), "3", "4"}));
}

// After an optimize or a compaction: LanceDB finds every row indexed; it and lancet
// give the same answers, exact for rows inside the range the quantizer was trained on
// (the first three probes). Rows appended beyond that range (ids from 400) all get
// the codes of its edge, as Lance encodes them: their neighbours are ties, broken
// alike by the flat scans of IVF_PQ (lowest row id first) but not by two HNSW graph
// walks, so graphs are compared on the rows inside the range only.
void check_after_change(const std::string& db, const os::storage_options& options, const std::string& table,
                        const std::string& root, std::uint64_t rows, bool graph = false) {
  const auto probe = graph ? std::vector<std::int64_t>{10, 123, 258, 399}
                           : std::vector<std::int64_t>{10, 123, 258, 399, 420, 447};
  const auto found = lancedb_search(db, options, table, queries_at(probe));
  CHECK(found["indices"][0]["indexedRows"] == rows);
  CHECK(found["indices"][0]["unindexedRows"] == 0);
  const auto ours = lancet_nearest(root, queries_at(probe));
  CHECK(found["hits"] == nlohmann::json(ours));
  const auto exact = nearest_three({10, 123, 258}, [](std::int64_t id) { return id >= 0 && id % 7 != 3; });
  CHECK(std::vector<std::vector<std::int64_t>>(ours.begin(), ours.begin() + 3) == exact);
}

std::set<std::string> stored_paths(const io::storage& st, const std::string& dir) {
  std::set<std::string> out;
  for (const auto& f : st.list(dir, true)) out.insert(f.path);
  return out;
}

// The files of the indexes the latest version lists, as stored_paths(root/_indices) names them.
std::set<std::string> listed_index_files(const std::string& root) {
  std::set<std::string> out;
  for (const auto& i : index::list_indices(*dataset::load_latest(root)))
    for (const auto& f : i.files) out.insert(i.uuid.to_string() + "/" + f.path);
  return out;
}

}  // namespace

// Vector indexes on each store: lancet builds IVF_PQ and IVF_HNSW_SQ on its datasets
// (two fragments, deleted rows), and LanceDB lists and searches them; rows appended
// after the build are found (the unindexed path) until optimize indexes them;
// compaction remaps the index; cleanup removes the replaced index files. LanceDB's own
// IVF_PQ index on its table is searched by lancet and optimized by lancet after an
// append. Every search, lancet's and LanceDB's, gives the exact three nearest rows.
TEST_CASE("object store: vector indexes built, searched, optimized, remapped and cleaned on S3 and Azure") {
  const emulated_stores es("object-indexes");
  const auto deleted = [](std::int64_t id) { return id % 7 == 3; };
  for (const auto& [db, options] : es.stores) {
    CAPTURE(db);
    const auto st = os::open_storage(db, options, no_environment);
    io::mount(db, st);
    for (const auto type : {index::ivf_index_type::ivf_pq, index::ivf_index_type::ivf_hnsw_sq}) {
      const std::string name = type == index::ivf_index_type::ivf_pq ? "pq" : "hnsw";
      CAPTURE(name);
      const std::string root = db + "/" + name + ".lance";
      dataset::write(root, table_rows(0, 300));
      dataset::write(root, table_rows(300, 400), appending());
      dataset::delete_where(root, "id % 7 = 3");
      index::build_options bo;
      bo.column = "vec";
      bo.type = type;
      bo.num_sub_vectors = 2;
      bo.target_partition_size = 100;  // 4 partitions, which optimize keeps (Lance joins smaller ones)
      const auto built = index::build_ivf_index(root, bo);
      CHECK(built.rows_indexed == 400 - 57);
      CHECK(stored_paths(st, root + "/_indices") == listed_index_files(root));
      CHECK(stored_paths(st, root + "/_indices").size() == 2);

      const std::vector<std::int64_t> probe{10, 123, 258, 399, 420, 447};
      const auto present = [&](std::int64_t to) {
        return [&deleted, to](std::int64_t id) { return id >= 0 && id < to && !deleted(id); };
      };
      auto found = lancedb_search(db, options, name, queries_at(probe));
      REQUIRE(found["indices"].size() == 1);
      CHECK(found["indices"][0]["indexType"] == (type == index::ivf_index_type::ivf_pq ? "IvfPq" : "IvfHnswSq"));
      CHECK(found["indices"][0]["indexedRows"] == 343);
      CHECK(found["hits"] == nlohmann::json(nearest_three(probe, present(400))));
      CHECK(lancet_nearest(root, queries_at(probe)) == nearest_three(probe, present(400)));

      // Appended rows: found by both through the unindexed path, then indexed.
      dataset::write(root, table_rows(400, 450), appending());
      CHECK(lancet_nearest(root, queries_at(probe)) == nearest_three(probe, present(450)));
      found = lancedb_search(db, options, name, queries_at(probe));
      CHECK(found["indices"][0]["unindexedRows"] == 50);
      CHECK(found["hits"] == nlohmann::json(nearest_three(probe, present(450))));
      const auto optimized = index::optimize_indices(root);
      REQUIRE(optimized.indices.size() == 1);
      CHECK(optimized.indices[0].rows_added == 50);
      check_after_change(db, options, name, root, 393, type == index::ivf_index_type::ivf_hnsw_sq);

      // Compaction rewrites the fragments and remaps the index onto the new rows;
      // cleanup then removes every index file the latest version does not list.
      const auto compacted = dataset::compact_files(root, {.remap_indexes = index::compaction_remapper()});
      CHECK(compacted.metrics.fragments_removed >= 2);
      CHECK(compacted.indices.size() == 1);
      dataset::cleanup_options co;
      co.keep_versions = 1;
      dataset::cleanup_old_versions(root, co);
      CHECK(stored_paths(st, root + "/_indices") == listed_index_files(root));
      check_after_change(db, options, name, root, 393, type == index::ivf_index_type::ivf_hnsw_sq);
    }

    // LanceDB's IVF_PQ on its table (400 rows, a delete, 100 appended; one partition,
    // which optimize keeps: Lance joins partitions far below their target size, and
    // codes of residuals to a far centroid stop finding even in-range neighbours):
    // lancet searches it, appends, optimizes it; LanceDB searches the result.
    t::node("object_store_table.mjs", {db, nlohmann::json(options).dump(), "write", "400"});
    const auto made = nlohmann::json::parse(t::node("object_store_table.mjs", {db, nlohmann::json(options).dump(), "index", "t"}));
    REQUIRE(made["indices"].size() == 1);
    CHECK(made["indices"][0]["indexedRows"] == 443);
    const std::string theirs = db + "/t.lance";
    const std::vector<std::int64_t> probe{10, 123, 258, 470, 520};
    const auto present = [&](std::int64_t to) {
      return [&deleted, to](std::int64_t id) { return id >= 0 && id < to && !(id < 400 && deleted(id)); };
    };
    CHECK(lancet_nearest(theirs, queries_at({10, 123, 258, 470})) == nearest_three({10, 123, 258, 470}, present(500)));
    dataset::write(theirs, table_rows(500, 550), appending());
    auto found = lancedb_search(db, options, "t", queries_at(probe));
    CHECK(found["indices"][0]["unindexedRows"] == 50);
    CHECK(found["hits"] == nlohmann::json(nearest_three(probe, present(550))));
    CHECK(lancet_nearest(theirs, queries_at(probe)) == nearest_three(probe, present(550)));
    CHECK(index::optimize_indices(theirs).indices.at(0).rows_added == 50);
    check_after_change(db, options, "t", theirs, 493);
    // Compacted (its index remapped) and cleaned by lancet.
    CHECK(dataset::compact_files(theirs, {.remap_indexes = index::compaction_remapper()}).metrics.fragments_removed >= 2);
    dataset::cleanup_options keep_one;
    keep_one.keep_versions = 1;
    CHECK(dataset::cleanup_old_versions(theirs, keep_one).old_versions > 0);
    CHECK(stored_paths(st, theirs + "/_indices") == listed_index_files(theirs));
    check_after_change(db, options, "t", theirs, 493);
    CHECK(io::unmount(db));
  }
}

namespace {

std::string file_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

// Every type of the random-table suite on each store, in each file version: LanceDB
// writes random schemas and rows locally (random_datasets.mjs), lancet reads each and
// writes it to the store (several fragments), reads it back from there equal, and
// LanceDB reads lancet's copy on the store giving the same canonical rows as it gave
// for its own.
TEST_CASE("object store: random schemas and rows of every file version, written to S3 and Azure, read equal") {
  const emulated_stores es("object-random");
  const int cases = 8;
  struct written {
    std::string name;
    arrow::record_batch rows;
    std::filesystem::path expected;  // LanceDB's canonical rows of its own dataset
  };
  std::vector<std::pair<file::format_version, std::vector<written>>> all;
  for (const auto v : {file::format_version::v2_0, file::format_version::v2_1, file::format_version::v2_2}) {
    const auto out = es.tmp.path() / ("random-" + std::string(file::to_string(v)));
    const auto made = nlohmann::json::parse(t::node(
        "random_datasets.mjs", {out.string(), "--cases", std::to_string(cases), "--version", std::string(file::to_string(v)),
                                "--seed", "91"}));
    REQUIRE(made["cases"] == cases);
    std::vector<written> ws;
    for (int c = 0; c < cases; ++c) {
      const auto local = dataset::dataset::open((out / ("case-" + std::to_string(c))).string());
      std::string name = "rand-" + std::string(file::to_string(v)) + "-" + std::to_string(c);
      std::replace(name.begin(), name.end(), '.', '_');
      ws.push_back({name, local.to_batch(), out / ("case-" + std::to_string(c) + ".jsonl")});
    }
    all.emplace_back(v, std::move(ws));
  }
  for (const auto& [db, options] : es.stores) {
    CAPTURE(db);
    io::mount(db, os::open_storage(db, options, no_environment));
    std::vector<std::string> names;
    for (const auto& [v, ws] : all)
      for (const auto& w : ws) {
        CAPTURE(w.name);
        dataset::write_options o;
        o.storage_version = v;
        o.schema = *w.rows.schema;
        o.max_rows_per_file = 7;
        const std::string root = db + "/" + w.name + ".lance";
        dataset::write(root, w.rows, o);
        const auto back = dataset::dataset::open(root);
        CHECK(back.storage_version() == v);
        CHECK(arrow::batch_equals(back.to_batch(), w.rows));
        names.push_back(w.name);
      }
    const auto out = es.tmp.path() / ("read-" + db.substr(0, 2));
    std::vector<std::string> args{db, nlohmann::json(options).dump(), out.string()};
    args.insert(args.end(), names.begin(), names.end());
    CHECK(nlohmann::json::parse(t::node("object_store_read_many.mjs", args))["errors"] == 0);
    for (const auto& [v, ws] : all)
      for (const auto& w : ws) {
        CAPTURE(w.name);
        REQUIRE_MESSAGE(std::filesystem::exists(out / (w.name + ".jsonl")), file_text(out / (w.name + ".error")));
        auto got = file_text(out / (w.name + ".jsonl"));
        got.erase(got.rfind("{\"countRows\""));  // the last line
        CHECK(got == file_text(w.expected));
      }
    CHECK(io::unmount(db));
  }
}

// Faults between lancet and each store (tests/interop/fault_proxy.mjs): every third
// request answered 503 or 500, cut off halfway through its body, or answered only
// after the client's 1 s timeout. Writes of several parts (multipart / blocks), an
// append and a delete all land through retries, and LanceDB, talking to the store
// directly, reads every row. A store that refuses every manifest PUT fails the append
// with an error naming the object and the HTTP status: the dataset stays at its
// version, the append's data files are removed, and LanceDB reads what it read before.
TEST_CASE("object store: 5xx answers, cut uploads and a slow server are retried; a failed commit leaves the dataset as it was") {
  const emulated_stores es("object-faults");
  for (std::size_t s = 0; s < es.stores.size(); ++s) {
    const auto& [db, options] = es.stores[s];
    CAPTURE(db);
    const int port = s == 0 ? es.s3rver.port() : es.azurite.port();
    const auto through = [&, &options = options](const t::emulator& proxy) {
      auto o = options;
      o[s == 0 ? "aws_endpoint" : "azure_storage_endpoint"] = proxy.url() + (s == 0 ? "" : "/devstoreaccount1");
      o["timeout"] = "1s";
      return o;
    };
    const std::string root = db + "/faults.lance";
    const auto seventh = [](std::int64_t id) { return id % 7 == 3; };
    {
      t::emulator proxy({"node", (t::interop_dir() / "fault_proxy.mjs").string(), std::to_string(port), "--every", "3",
                         "--delay-ms", "2500"});
      io::mount(db, os::open_storage(db, through(proxy), no_environment));
      CHECK(dataset::write(root, table_rows(0, 300000)).version == 1);  // about 14 MB: three parts
      CHECK(dataset::write(root, table_rows(300000, 300100), appending()).version == 2);
      CHECK(dataset::delete_where(root, "id % 7 = 3").version == 3);
      CHECK(dataset::dataset::open(root).count_rows() == 300100 - 42871);
      CHECK(io::unmount(db));
    }
    const auto read = [&] { return nlohmann::json::parse(t::node("object_store_table.mjs", {db, nlohmann::json(options).dump(), "read", "faults"})); };
    auto seen = read();
    CHECK(seen["version"] == 3);
    CHECK(seen["bad"].empty());
    CHECK(seen["ids"].get<std::vector<std::int64_t>>() == ids_between(0, 300100, seventh));

    // A fault proxy refusing some requests (fault_proxy.mjs's --fail-path / --fail-method),
    // and the store mounted through it with that many retries.
    const auto refusing_proxy = [&](std::vector<std::string> refuse) {
      std::vector<std::string> argv = {"node", (t::interop_dir() / "fault_proxy.mjs").string(), std::to_string(port)};
      argv.insert(argv.end(), refuse.begin(), refuse.end());
      return argv;
    };
    const auto mount_through = [&](const t::emulator& proxy, const std::string& retries) {
      auto o = through(proxy);
      o["client_max_retries"] = retries;
      auto st = os::open_storage(db, o, no_environment);
      io::mount(db, st);
      return st;
    };
    t::emulator refusing(refusing_proxy({"--fail-path", "/_versions/", "--fail-method", "PUT"}));
    const auto st = mount_through(refusing, "2");
    const auto data_before = st.list(root + "/data").size();
    const std::string manifests = root + "/_versions/";
    CHECK_THROWS_WITH_AS(dataset::write(root, table_rows(400000, 400010), appending()),
                         doctest::Contains(manifests.c_str()), io_error);
    CHECK_THROWS_WITH_AS(dataset::write(root, table_rows(400000, 400010), appending()), doctest::Contains("HTTP 503"),
                         io_error);
    CHECK(st.list(root + "/data").size() == data_before);
    CHECK(io::unmount(db));
    seen = read();
    CHECK(seen["version"] == 3);
    CHECK(seen["ids"].get<std::vector<std::int64_t>>() == ids_between(0, 300100, seventh));

    // Sizes from the listing (manifests) and from the manifest (data files) spare the
    // HEAD requests that would ask: a dataset read through a proxy refusing every HEAD.
    const std::string sized = db + "/sized.lance";
    io::mount(db, os::open_storage(db, options, no_environment));
    dataset::write(sized, table_rows(0, 1000));
    dataset::write(sized, table_rows(1000, 1500), appending());
    CHECK(io::unmount(db));
    t::emulator no_head(refusing_proxy({"--fail-path", "/sized.lance/", "--fail-method", "HEAD"}));
    const auto sh = mount_through(no_head, "0");
    CHECK_THROWS_WITH_AS(sh.size(sized + "/_versions/1.manifest"), doctest::Contains("HTTP 503"), io_error);
    const auto ds = dataset::dataset::open(sized);
    CHECK(ds.version() == 2);
    CHECK(t::int64_values(ds.to_batch({.columns = {"id"}})) == ids_between(0, 1500, [](std::int64_t) { return false; }));
    CHECK(io::unmount(db));
    // A version asked for by number is found by name, without listing every version.
    t::emulator no_list(refusing_proxy({"--fail-path", "list"}));
    mount_through(no_list, "0");
    CHECK_THROWS_WITH_AS(dataset::dataset::open(sized), doctest::Contains("HTTP 503"), io_error);
    CHECK(dataset::dataset::open(sized, 1).count_rows() == 1000);
    CHECK(io::unmount(db));
  }
}

// A writer killed (SIGKILL) in the middle of its multipart upload to S3 leaves an
// unfinished upload and no version: the dataset stays as it was and LanceDB reads it so.
// Cleanup aborts the upload once a later version is committed (before, it may belong to
// a write in progress), as it removes a killed writer's temporary files. s3rver has no
// ListMultipartUploads; tests/interop/uploads_proxy.mjs answers it in front of s3rver.
TEST_CASE("object store: a writer killed mid-upload leaves the dataset as it was; cleanup aborts its upload") {
  const emulated_stores es("object-killed");
  const auto& [db, direct] = es.stores[0];
  t::emulator proxy({"node", (t::interop_dir() / "uploads_proxy.mjs").string(), std::to_string(es.s3rver.port())});
  auto options = direct;
  options["aws_endpoint"] = proxy.url();
  os::s3_client s3(os::read_s3_options(options, no_environment), "lance");
  const std::string root = db + "/killed.lance";
  const std::string prefix = "db/killed.lance/";

  // The writer: a child forked before this process opens a connection (the two would
  // share its sockets). It creates version 1, then appends one data file of about
  // 90 MB (18 parts of 5 MiB), and is killed during that upload.
  const pid_t writer = fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    try {
      io::mount(db, os::open_storage(db, options, no_environment));
      dataset::write(root, table_rows(0, 1000));
      auto o = appending();
      o.max_rows_per_file = 4000000;
      dataset::write(root, table_rows(1000, 2001000), o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "the writer failed: %s\n", e.what());
      _exit(2);
    }
    _exit(0);
  }
  bool begun = false, ended = false;
  int status = 0;
  for (int i = 0; i < 6000 && !begun && !ended; ++i) {
    begun = !s3.list_uploads(prefix).empty();
    ended = waitpid(writer, &status, WNOHANG) == writer;
    if (!begun) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!ended) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a part or two on its way
    kill(writer, SIGKILL);
    waitpid(writer, &status, 0);
  }
  io::mount(db, os::open_storage(db, options, no_environment));
  const std::string how = ended ? "ended by itself" : "was killed";
  INFO("the writer " << how << ", version " << dataset::dataset::open(root).version());
  REQUIRE(begun);
  CHECK(WIFSIGNALED(status));
  const auto left = s3.list_uploads(prefix);
  REQUIRE(left.size() == 1);
  CHECK(left[0].key.starts_with(prefix + "data/"));
  CHECK(dataset::dataset::open(root).version() == 1);
  auto read = nlohmann::json::parse(t::node("object_store_table.mjs", {db, nlohmann::json(direct).dump(), "read", "killed"}));
  CHECK(read["version"] == 1);
  CHECK(read["ids"].get<std::vector<std::int64_t>>() == ids_between(0, 1000, [](std::int64_t) { return false; }));

  dataset::cleanup_options co;
  co.keep_versions = 1;
  co.delete_unverified = true;
  CHECK(dataset::cleanup_old_versions(root, co).aborted_uploads.empty());  // begun after version 1
  CHECK(s3.list_uploads(prefix).size() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // start times are whole seconds
  CHECK(dataset::write(root, table_rows(5000000, 5000010), appending()).version == 2);
  auto dry = co;
  dry.dry_run = true;
  CHECK(dataset::cleanup_old_versions(root, dry).aborted_uploads == std::vector<std::string>{left[0].key.substr(prefix.size())});
  CHECK(s3.list_uploads(prefix).size() == 1);
  const auto cleaned = dataset::cleanup_old_versions(root, co);
  CHECK(cleaned.aborted_uploads == std::vector<std::string>{left[0].key.substr(prefix.size())});
  CHECK(s3.list_uploads(prefix).empty());
  read = nlohmann::json::parse(t::node("object_store_table.mjs", {db, nlohmann::json(direct).dump(), "read", "killed"}));
  CHECK(read["version"] == 2);
  CHECK(read["countRows"] == 1010);
  CHECK(io::unmount(db));
}

namespace {

// An account SAS token for Azurite's well-known account, signed as Azure signs them
// (version 2019-12-12: account, permissions, services, resource types, start, expiry,
// IP, protocol and version, each followed by a newline), with `key` (base64).
std::string account_sas(const std::string& permissions, std::string_view key = os::emulator_key) {
  const std::string sv = "2019-12-12", ss = "b", srt = "sco", st = "2020-01-01T00:00:00Z", se = "2099-01-01T00:00:00Z",
                    spr = "https,http";
  const std::string to_sign = "devstoreaccount1\n" + permissions + "\n" + ss + "\n" + srt + "\n" + st + "\n" + se +
                              "\n\n" + spr + "\n" + sv + "\n";
  std::string secret;
  REQUIRE_FALSE(json::base64_decode(key, secret).has_value());
  const auto sig = json::base64_encode(os::as_chars(os::hmac_sha256(secret, to_sign)));
  return "sv=" + sv + "&ss=" + ss + "&srt=" + srt + "&sp=" + permissions + "&st=" + os::uri_encode(st, false) +
         "&se=" + os::uri_encode(se, false) + "&spr=" + os::uri_encode(spr, false) + "&sig=" + os::uri_encode(sig, false);
}

}  // namespace

// Azure with a SAS token in place of the account key (Azurite checks its signature and
// permissions): lancet writes, appends and deletes, LanceDB reads with the same token;
// a read-only token reads and its writes are refused with HTTP 403, the version
// unchanged; a token signed with another key is refused.
TEST_CASE("object store: Azure with SAS tokens: read-write, read-only and forged") {
  const emulated_stores es("object-sas");
  const auto& [db, keyed] = es.stores[1];
  const auto with_token = [&, &keyed = keyed](const std::string& token) {
    return os::storage_options{{"azure_storage_account_name", "devstoreaccount1"},
                               {"azure_storage_sas_token", token},
                               {"azure_storage_endpoint", keyed.at("azure_storage_endpoint")},
                               {"allow_http", "true"}};
  };
  const auto writer = with_token(account_sas("rwdlacup"));
  io::mount(db, os::open_storage(db, writer, no_environment));
  const std::string root = db + "/sas.lance";
  CHECK(dataset::write(root, table_rows(0, 100)).version == 1);
  CHECK(dataset::write(root, table_rows(100, 150), appending()).version == 2);
  CHECK(dataset::delete_where(root, "id % 7 = 3").version == 3);
  const auto seventh = [](std::int64_t id) { return id % 7 == 3; };
  const auto read = nlohmann::json::parse(t::node("object_store_table.mjs", {db, nlohmann::json(writer).dump(), "read", "sas"}));
  CHECK(read["version"] == 3);
  CHECK(read["ids"].get<std::vector<std::int64_t>>() == ids_between(0, 150, seventh));

  io::mount(db, os::open_storage(db, with_token(account_sas("rl")), no_environment));
  CHECK(dataset::dataset::open(root).count_rows() == 150 - 21);
  CHECK_THROWS_WITH_AS(dataset::write(root, table_rows(150, 160), appending()), doctest::Contains("HTTP 403"), io_error);
  CHECK(dataset::dataset::open(root).version() == 3);

  io::mount(db, os::open_storage(db, with_token(account_sas("rl", "d3Jvbmcga2V5")), no_environment));
  CHECK_THROWS_WITH_AS(dataset::dataset::open(root), doctest::Contains("HTTP 403"), io_error);
  CHECK(io::unmount(db));
}
