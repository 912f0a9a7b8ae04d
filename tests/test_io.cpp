#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/wait.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <lancet/io/abortable_sink.hpp>
#include <lancet/io/asio_sink.hpp>
#include "support/failing_sink.hpp"
#include "support/files.hpp"
#include "support/message_of.hpp"
#include "support/temp_dir.hpp"
#include "support/text.hpp"
#include <lancet/io/file_sink.hpp>
#include <lancet/io/file_source.hpp>
#include <lancet/io/any_source.hpp>
#include <lancet/io/fs.hpp>
#include <lancet/io/memory_sink.hpp>
#include <lancet/io/source.hpp>

using namespace lancet;
using namespace lancet::io;
using lancet::testing::failing_sink;
using lancet::testing::failure_plan;

namespace {

using lancet::testing::byte_vector;
using lancet::testing::contains;
using lancet::testing::message_of;

// A scratch directory (removed at the end of the scope) with its path as a member, its
// entries' paths and names.
struct io_temp_dir : lancet::testing::scratch_dir {
  std::string path = scratch_dir::path();
  io_temp_dir() : scratch_dir("io") {}
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  std::vector<std::string> list() const { return lancet::testing::files_under(path); }
};

std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed = 1) {
  std::vector<std::uint8_t> v(n);
  std::uint32_t x = seed * 2654435761u + 12345;
  for (auto& b : v) {
    x = x * 1103515245u + 12345u;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  return v;
}

bytes_view bv(const std::vector<std::uint8_t>& v) { return {v.data(), v.size()}; }
bytes_view bv(std::string_view s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  file_source src(path);
  auto b = src.read_all();
  return {b.data(), b.data() + b.size()};
}

}  // namespace

static_assert(sink<memory_sink>);
static_assert(sink<file_sink>);
static_assert(sink<failing_sink<memory_sink>>);
static_assert(sink<failing_sink<memory_sink&>>);
static_assert(abortable_sink<failing_sink<file_sink>>);
static_assert(sink<asio_sink<boost::asio::local::stream_protocol::socket>>);
static_assert(abortable_sink<asio_sink<boost::asio::posix::stream_descriptor>>);
static_assert(source<memory_source>);
static_assert(source<file_source>);

// ---------------------------------------------------------------- memory_sink

TEST_CASE("memory_sink appends, reports position and hands the bytes over") {
  memory_sink s;
  CHECK(s.position() == 0);
  s.write(bv("LANC"));
  s.write(bytes_view{});
  auto big = pattern(1000);
  s.write(bv(big));
  CHECK(s.position() == 1004);
  s.finish();
  CHECK(s.finished());
  CHECK_THROWS_AS(s.write(bv("x")), invalid_input_error);
  CHECK_THROWS_AS(s.finish(), invalid_input_error);
  aligned_buffer b = s.take();
  REQUIRE(b.size() == 1004);
  CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0);
  CHECK(std::memcmp(b.data(), "LANC", 4) == 0);
  CHECK(std::memcmp(b.data() + 4, big.data(), big.size()) == 0);
  CHECK(s.position() == 0);
  CHECK_FALSE(s.finished());

  s.write(bv("abc"));
  s.abort();
  CHECK(s.position() == 0);
  s.write(bv("xy"));
  auto shared = s.take_shared();
  CHECK(byte_vector(shared) == std::vector<std::uint8_t>{'x', 'y'});
}

// ---------------------------------------------------------------- fs helpers

TEST_CASE("fs: path pieces and unique temporary names") {
  CHECK(parent_directory("a/b/c.lance") == "a/b");
  CHECK(parent_directory("c.lance") == ".");
  CHECK(parent_directory("/c.lance") == "/");
  CHECK(parent_directory("/x/y/") == "/x");
  CHECK(base_name("a/b/c.lance") == "c.lance");
  CHECK(base_name("c.lance") == "c.lance");

  auto t1 = unique_temp_name("/data/ds/_versions/1.manifest");
  auto t2 = unique_temp_name("/data/ds/_versions/1.manifest");
  CHECK(t1 != t2);
  CHECK(parent_directory(t1) == "/data/ds/_versions");
  CHECK(base_name(t1).rfind(".1.manifest.", 0) == 0);
  CHECK(t1.size() > 4);
  CHECK(t1.substr(t1.size() - 4) == ".tmp");
  CHECK(parent_directory(unique_temp_name("x.lance")) == ".");
  CHECK(unique_temp_name("/x.lance").rfind("/.x.lance.", 0) == 0);
}

TEST_CASE("fs: rename_noreplace publishes once and reports the loser") {
  io_temp_dir d;
  write_file(d / "a", bv("first"), {.sync = false});
  write_file(d / "b", bv("second"), {.sync = false});
  CHECK(rename_noreplace(d / "a", d / "final"));
  CHECK_FALSE(path_exists(d / "a"));
  CHECK_FALSE(rename_noreplace(d / "b", d / "final"));
  CHECK(path_exists(d / "b"));  // the loser keeps its file
  CHECK(read_bytes(d / "final") == std::vector<std::uint8_t>{'f', 'i', 'r', 's', 't'});
  CHECK_THROWS_WITH_AS(publish(d / "b", d / "final", true), doctest::Contains("already exists"),
                       conflict_error);
  publish(d / "b", d / "final", false);
  CHECK(read_bytes(d / "final") == std::vector<std::uint8_t>{'s', 'e', 'c', 'o', 'n', 'd'});
  auto msg = message_of<io_error>([&] { rename_noreplace(d / "missing", d / "other"); });
  CHECK(contains(msg, d / "missing"));
  CHECK(contains(msg, "No such file or directory"));
}

TEST_CASE("fs: directories, fsync, remove, write_all") {
  io_temp_dir d;
  make_directories(d / "x/y/z");
  CHECK(path_exists(d / "x/y/z"));
  make_directories(d / "x/y/z/");  // exists: fine
  fsync_directory(d / "x/y");
  write_file(d / "f", bv("data"));
  auto msg = message_of<io_error>([&] { make_directories(d / "f/sub"); });
  CHECK(contains(msg, d / "f"));
  msg = message_of<io_error>([&] { fsync_directory(d / "nope"); });
  CHECK(contains(msg, d / "nope"));
  CHECK(contains(msg, "No such file"));
  CHECK(remove_file(d / "f"));
  CHECK_FALSE(remove_file(d / "f"));

  // The gathering write: two spans, including empty ones, land in order.
  {
    unique_fd fd = open_fd(d / "g", O_WRONLY | O_CREAT | O_TRUNC);
    auto a = pattern(100, 1), b = pattern(70000, 2);
    write_all(fd.get(), bv(a), bv(b), d / "g");
    write_all(fd.get(), bytes_view{}, bv(a), d / "g");
    write_all(fd.get(), bv(b), bytes_view{}, d / "g");
    fd.close(d / "g");
    std::vector<std::uint8_t> want = a;
    want.insert(want.end(), b.begin(), b.end());
    want.insert(want.end(), a.begin(), a.end());
    want.insert(want.end(), b.begin(), b.end());
    CHECK(read_bytes(d / "g") == want);
  }
}

TEST_CASE("fs: write_all through a pipe delivers everything to a slow reader") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  unique_fd rd(fds[0]), wr(fds[1]);
  auto data = pattern(3 << 20, 7);
  std::vector<std::uint8_t> got;
  std::thread reader([&] {
    std::uint8_t buf[4096];
    for (;;) {
      ssize_t n = ::read(rd.get(), buf, sizeof buf);
      if (n <= 0) break;
      got.insert(got.end(), buf, buf + n);
    }
  });
  write_all(wr.get(), bv(data).first(1000), bv(data).subspan(1000), "pipe");
  wr.reset();
  reader.join();
  CHECK(got == data);
}

namespace {
void ignore_signal(int) {}
}  // namespace

TEST_CASE("fs: write_all survives EINTR and short writes from signal interruptions") {
  // A handler installed without SA_RESTART makes a blocked pipe write return early:
  // with a partial count (short write) or -1/EINTR. Everything must still arrive.
  struct sigaction sa {}, old {};
  sa.sa_handler = ignore_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  REQUIRE(::sigaction(SIGUSR1, &sa, &old) == 0);
  for (int variant = 0; variant < 2; ++variant) {
    CAPTURE(variant);
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    unique_fd rd(fds[0]), wr(fds[1]);
    auto data = pattern(4 << 20, 11 + variant);
    std::atomic<bool> done{false};
    pthread_t writer_thread = ::pthread_self();
    std::vector<std::uint8_t> got;
    std::thread reader([&] {
      std::uint8_t buf[1024];
      for (int i = 0;; ++i) {
        if (i % 8 == 0 && !done) ::pthread_kill(writer_thread, SIGUSR1);
        ssize_t n = ::read(rd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got.insert(got.end(), buf, buf + n);
      }
    });
    if (variant == 0) {
      write_all(wr.get(), bv(data), "pipe");
    } else {
      write_all(wr.get(), bv(data).first(3000), bv(data).subspan(3000), "pipe");
    }
    done = true;
    wr.reset();
    reader.join();
    CHECK(got == data);
  }
  ::sigaction(SIGUSR1, &old, nullptr);
}

// ---------------------------------------------------------------- file_sink

TEST_CASE("file_sink round trip with every write size against the buffer and writeback interval") {
  for (std::size_t cap : {std::size_t(0), std::size_t(100), std::size_t(1) << 20})
  for (std::size_t wb : {std::size_t(0), std::size_t(64), std::size_t(8) << 20})
    for (bool rename : {true, false}) {
      CAPTURE(cap);
      CAPTURE(wb);
      CAPTURE(rename);
      io_temp_dir d;
      std::vector<std::uint8_t> want;
      {
        file_sink s(d / "out.lance", {.buffer_bytes = cap, .publish_by_rename = rename, .writeback_bytes = wb});
        std::size_t sizes[] = {1, 0, 7, 99, 100, 101, 3, 250, 1 << 20, 5, (1 << 20) + 17, 64};
        std::uint32_t seed = 0;
        for (std::size_t n : sizes) {
          auto p = pattern(n, ++seed);
          s.write(bv(p));
          want.insert(want.end(), p.begin(), p.end());
          CHECK(s.position() == want.size());
        }
        s.finish();
        CHECK(s.finished());
        CHECK(s.position() == want.size());
      }
      CHECK(read_bytes(d / "out.lance") == want);
      CHECK(d.list() == std::vector<std::string>{"out.lance"});
    }
}

TEST_CASE("file_sink publish by rename: nothing at the final path until finish") {
  io_temp_dir d;
  const std::string final_path = d / "data.lance";
  file_sink s(final_path, {.buffer_bytes = 16});
  CHECK(s.path() == final_path);
  CHECK(s.working_path() != final_path);
  CHECK(parent_directory(s.working_path()) == d.path);
  CHECK(base_name(s.working_path())[0] == '.');
  s.write(bv("0123456789abcdefghijklmnopqrstuvwxyz"));  // past the buffer: on disk now
  CHECK_FALSE(path_exists(final_path));
  CHECK(path_exists(s.working_path()));
  std::string temp = s.working_path();
  s.finish();
  CHECK(path_exists(final_path));
  CHECK_FALSE(path_exists(temp));
  CHECK(d.list() == std::vector<std::string>{"data.lance"});
  CHECK(read_bytes(final_path).size() == 36);
}

TEST_CASE("file_sink replaces an existing file atomically unless exclusive") {
  io_temp_dir d;
  write_file(d / "f", bv("old contents"));
  {
    file_sink s(d / "f");
    s.write(bv("new"));
    // Readers still see the old file while the new one is written.
    CHECK(read_bytes(d / "f").size() == 12);
    s.finish();
  }
  CHECK(read_bytes(d / "f") == std::vector<std::uint8_t>{'n', 'e', 'w'});

  auto msg = message_of<conflict_error>([&] { file_sink s(d / "f", {.exclusive = true}); });
  CHECK(contains(msg, d / "f"));
  msg = message_of<conflict_error>(
      [&] { file_sink s(d / "f", {.publish_by_rename = false, .exclusive = true}); });
  CHECK(contains(msg, d / "f"));
  CHECK(read_bytes(d / "f") == std::vector<std::uint8_t>{'n', 'e', 'w'});
  CHECK(d.list() == std::vector<std::string>{"f"});
}

TEST_CASE("file_sink exclusive: of two concurrent writers exactly one publishes") {
  io_temp_dir d;
  const std::string manifest = d / "3.manifest";
  file_sink a(manifest, {.exclusive = true});
  file_sink b(manifest, {.exclusive = true});
  a.write(bv("writer A"));
  b.write(bv("writer B"));
  a.finish();
  auto msg = message_of<conflict_error>([&] { b.finish(); });
  CHECK(contains(msg, manifest));
  CHECK(read_bytes(manifest) == byte_vector(shared_bytes::copy_of(bv("writer A"))));
  CHECK(d.list() == std::vector<std::string>{"3.manifest"});  // B's temp file is gone
  CHECK_THROWS_AS(b.write(bv("x")), io_error);
  CHECK_THROWS_AS(b.finish(), io_error);
}

TEST_CASE("file_sink destroyed or aborted before finish leaves nothing behind") {
  io_temp_dir d;
  {
    file_sink s(d / "a.lance");
    s.write(bv(pattern(5 << 20)));
  }
  CHECK(d.list().empty());

  try {
    file_sink s(d / "b.lance", {.publish_by_rename = false});
    s.write(bv(pattern(300)));
    CHECK(path_exists(d / "b.lance"));
    throw std::runtime_error("writer failed");
  } catch (const std::runtime_error&) {
  }
  CHECK(d.list().empty());

  file_sink s(d / "c.lance");
  s.write(bv("abc"));
  s.abort();
  s.abort();
  CHECK(d.list().empty());
  CHECK_THROWS_AS(s.write(bv("x")), invalid_input_error);
  CHECK_THROWS_AS(s.finish(), invalid_input_error);

  // A finished sink's abort() is a no-op: the published file stays.
  file_sink f(d / "d.lance");
  f.write(bv("abc"));
  f.finish();
  f.abort();
  CHECK(d.list() == std::vector<std::string>{"d.lance"});
  CHECK_THROWS_AS(f.write(bv("x")), invalid_input_error);
  CHECK_THROWS_AS(f.finish(), invalid_input_error);
}

TEST_CASE("file_sink moves keep one owner of the temporary file") {
  io_temp_dir d;
  file_sink a(d / "m");
  a.write(bv("hello"));
  file_sink b(std::move(a));
  CHECK_THROWS_AS(a.write(bv("x")), invalid_input_error);
  b.write(bv(" world"));
  CHECK(b.position() == 11);
  file_sink c(d / "other");
  c.write(bv("discard me"));
  c = std::move(b);  // c's own temp file is discarded
  c.finish();
  CHECK(d.list() == std::vector<std::string>{"m"});
  CHECK(read_bytes(d / "m") == byte_vector(shared_bytes::copy_of(bv("hello world"))));
}

TEST_CASE("file_sink errors are typed and name the path") {
  io_temp_dir d;
  auto msg = message_of<io_error>([&] { file_sink s(d / "no/such/dir/f.lance"); });
  CHECK(contains(msg, d / "no/such/dir/f.lance"));
  CHECK(contains(msg, "No such file or directory"));
  msg = message_of<io_error>([&] { file_sink s(d / "no/f", {.publish_by_rename = false}); });
  CHECK(contains(msg, d / "no/f"));
  CHECK_THROWS_AS(file_sink(""), invalid_input_error);
  CHECK_THROWS_AS(file_sink(d / "dir/"), invalid_input_error);

  file_sink s(d / "deep/er/f.lance", {.create_directories = true});
  s.write(bv("x"));
  s.finish();
  CHECK(read_bytes(d / "deep/er/f.lance").size() == 1);

  if (::geteuid() != 0) {  // root ignores directory permissions
    make_directories(d / "ro");
    REQUIRE(::chmod((d / "ro").c_str(), 0555) == 0);
    msg = message_of<io_error>([&] { file_sink r(d / "ro/f"); });
    CHECK(contains(msg, d / "ro/"));
    CHECK(contains(msg, "Permission denied"));
  }
}

TEST_CASE("file_sink: a failing write is an io_error, the sink is poisoned, nothing is published") {
  // RLIMIT_FSIZE makes write(2) fail with EFBIG once the file would grow past the limit
  // (with SIGXFSZ ignored): a real kernel write error, no mocks.
  io_temp_dir d;
  struct rlimit old;
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &lim) == 0);
  std::string msg;
  std::string temp;
  {
    file_sink s(d / "big.lance", {.buffer_bytes = 1024});
    temp = s.working_path();
    s.write(bv(pattern(3000)));
    msg = message_of<io_error>([&] { s.write(bv(pattern(3000))); });
    CHECK_THROWS_WITH_AS(s.write(bv("x")), doctest::Contains("earlier failure"), io_error);
    CHECK_THROWS_AS(s.finish(), io_error);
    CHECK(path_exists(temp));
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  CHECK(contains(msg, d / "big.lance"));
  CHECK(contains(msg, temp));
  CHECK(contains(msg, "File too large"));
  CHECK(d.list().empty());
}

TEST_CASE("file_sink straight to a device neither fsyncs nor unlinks it") {
  // /dev/null is a character device: finish() must not fail on fsync, and abort()
  // must not remove the device node.
  {
    file_sink s("/dev/null", {.publish_by_rename = false});
    s.write(bv("discarded"));
    s.finish();
  }
  {
    file_sink s("/dev/null", {.publish_by_rename = false});
    s.write(bv("discarded"));
  }
  CHECK(path_exists("/dev/null"));
}

// ---------------------------------------------------------------- failing_sink

TEST_CASE("failing_sink fails at exactly N bytes, forwarding the bytes before it") {
  memory_sink inner;
  failing_sink f(inner, failure_plan{.fail_after_bytes = 10});
  static_assert(std::is_same_v<decltype(f), failing_sink<memory_sink&>>);
  f.write(bv("0123"));
  f.write(bv("4567"));
  auto msg = message_of<io_error>([&] { f.write(bv("89ab")); });
  CHECK(contains(msg, "byte 10"));
  CHECK(inner.position() == 10);
  CHECK(f.position() == 10);
  CHECK(byte_vector(shared_bytes::copy_of(inner.view())) == byte_vector(shared_bytes::copy_of(bv("0123456789"))));
  CHECK_THROWS_AS(f.write(bv("x")), io_error);  // stays full
  f.write(bytes_view{});                         // an empty write is not a write
  CHECK(f.failures() == 2);
  CHECK(inner.position() == 10);

  // Exactly N bytes pass; the N+1-th fails.
  memory_sink m2;
  failing_sink g(m2, {.fail_after_bytes = 8});
  g.write(bv("01234567"));
  CHECK_THROWS_AS(g.write(bv("8")), io_error);
  CHECK(m2.position() == 8);

  memory_sink m3;
  failing_sink z(m3, {.fail_after_bytes = 0});
  CHECK_THROWS_AS(z.write(bv("a")), io_error);
  CHECK(m3.position() == 0);
}

TEST_CASE("failing_sink fails on finish on demand and can change its plan") {
  failing_sink f(memory_sink{}, {.fail_on_finish = true});
  static_assert(std::is_same_v<decltype(f), failing_sink<memory_sink>>);
  f.write(bv("abc"));
  CHECK_THROWS_WITH_AS(f.finish(), doctest::Contains("finish"), io_error);
  CHECK_FALSE(f.inner().finished());
  f.set_plan({});
  f.finish();
  CHECK(f.inner().finished());

  failing_sink late(memory_sink{});
  late.write(bv(pattern(100)));
  late.set_plan({.fail_after_bytes = 150});
  late.write(bv(pattern(50)));
  CHECK_THROWS_AS(late.write(bv("x")), io_error);
  CHECK(late.inner().position() == 150);
}

TEST_CASE("failing_sink over a file_sink: the failure leaves nothing at the final path") {
  io_temp_dir d;
  {
    failing_sink f(file_sink(d / "x.lance", {.buffer_bytes = 64}), {.fail_after_bytes = 1000});
    f.write(bv(pattern(999)));
    CHECK_THROWS_AS(f.write(bv(pattern(10))), io_error);
    CHECK_FALSE(path_exists(d / "x.lance"));
    abort_sink(f);
    CHECK(f.aborts() == 1);
    CHECK(d.list().empty());
  }
  {
    failing_sink f(file_sink(d / "y.lance"), {.fail_on_finish = true});
    f.write(bv("abc"));
    CHECK_THROWS_AS(f.finish(), io_error);
  }  // destroyed without finish
  CHECK(d.list().empty());
}

// ---------------------------------------------------------------- asio_sink

namespace {
namespace asio = boost::asio;
using local_socket = asio::local::stream_protocol::socket;

std::vector<std::uint8_t> read_to_eof(int fd) {
  std::vector<std::uint8_t> got;
  std::uint8_t buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.insert(got.end(), buf, buf + n);
  }
  return got;
}

// Writes a mix of small and large pieces; returns what was written.
template <class Sink>
std::vector<std::uint8_t> write_mix(Sink& s) {
  std::vector<std::uint8_t> all;
  std::uint32_t seed = 100;
  for (std::size_t n : {std::size_t(3), std::size_t(4000), std::size_t(60000), std::size_t(1),
                        std::size_t(200000), std::size_t(65536), std::size_t(17), std::size_t(1) << 20}) {
    auto p = pattern(n, ++seed);
    s.write(bv(p));
    all.insert(all.end(), p.begin(), p.end());
    REQUIRE(s.position() == all.size());
  }
  return all;
}
}  // namespace

TEST_CASE("asio_sink over a local socket pair delivers every byte in order") {
  for (std::size_t cap : {std::size_t(0), std::size_t(4096), std::size_t(64) << 10}) {
    CAPTURE(cap);
    asio::io_context ctx;
    local_socket a(ctx), b(ctx);
    asio::local::connect_pair(a, b);
    std::vector<std::uint8_t> got;
    std::thread reader([&] { got = read_to_eof(b.native_handle()); });
    std::vector<std::uint8_t> sent;
    {
      asio_sink s(a, "socket", cap);
      sent = write_mix(s);
      s.finish();
      CHECK(s.bytes_sent() == sent.size());
      CHECK_THROWS_AS(s.write(bv("x")), invalid_input_error);
    }
    a.shutdown(asio::socket_base::shutdown_send);
    reader.join();
    CHECK(got == sent);
  }
}

TEST_CASE("asio_sink over a pipe (posix::stream_descriptor)") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  asio::io_context ctx;
  asio::posix::stream_descriptor out(ctx, fds[1]);
  std::vector<std::uint8_t> got;
  std::thread reader([&] { got = read_to_eof(fds[0]); });
  asio_sink s(out, "pipe");
  auto sent = write_mix(s);
  CHECK(s.bytes_sent() == sent.size());  // the last piece was large: sent straight away
  s.write(bv("tail"));
  sent.insert(sent.end(), {'t', 'a', 'i', 'l'});
  CHECK(s.bytes_sent() == sent.size() - 4);  // small pieces wait in the buffer
  s.finish();
  CHECK(s.bytes_sent() == sent.size());
  out.close();
  reader.join();
  ::close(fds[0]);
  CHECK(got == sent);
}

TEST_CASE("asio_sink: a closed peer is an io_error naming the stream") {
  asio::io_context ctx;
  local_socket a(ctx), b(ctx);
  asio::local::connect_pair(a, b);
  b.close();
  asio_sink s(a, "peer-7", 16);
  s.write(bv("0123456789"));  // buffered
  auto msg = message_of<io_error>([&] { s.write(bv(pattern(100))); });
  CHECK(contains(msg, "peer-7"));
  CHECK(contains(msg, "Broken pipe"));
  CHECK_THROWS_WITH_AS(s.finish(), doctest::Contains("earlier failure"), io_error);
  s.abort();
}

namespace {
// A stream with only the AsyncWriteStream half (no write_some), like a user's custom
// async transport; its executor is an io_context run by another thread.
struct async_only_stream {
  local_socket* sock;
  asio::io_context* ctx;
  using executor_type = asio::io_context::executor_type;
  executor_type get_executor() { return ctx->get_executor(); }
  template <class ConstBuffers, class Handler>
  auto async_write_some(const ConstBuffers& bufs, Handler&& h) {
    return sock->async_write_some(bufs, std::forward<Handler>(h));
  }
};
}  // namespace

TEST_CASE("asio_sink over an async-only stream runs through the stream's executor") {
  static_assert(!io::detail::asio_sync_write_stream<async_only_stream>);
  asio::io_context ctx;
  local_socket a(ctx), b(ctx);
  asio::local::connect_pair(a, b);
  auto guard = asio::make_work_guard(ctx);
  std::thread runner([&] { ctx.run(); });
  std::vector<std::uint8_t> got;
  std::thread reader([&] { got = read_to_eof(b.native_handle()); });

  async_only_stream st{&a, &ctx};
  asio_sink s(st, "async");
  auto sent = write_mix(s);
  s.finish();

  // From the executor's own thread the blocking write would deadlock: refused.
  std::atomic<int> outcome{0};
  asio_sink inner(st, "async-inner", 0);
  asio::post(ctx, [&] {
    try {
      inner.write(bv("x"));
      outcome = 1;
    } catch (const invalid_input_error&) {
      outcome = 2;
    }
  });
  while (outcome == 0) std::this_thread::yield();
  CHECK(outcome == 2);

  guard.reset();
  runner.join();
  a.shutdown(asio::socket_base::shutdown_send);
  reader.join();
  CHECK(got == sent);
}

// ---------------------------------------------------------------- sources

TEST_CASE("memory_source reads zero-copy slices and bounds-checks") {
  auto p = pattern(100);
  memory_source src(shared_bytes::copy_of(bv(p)), "buf");
  CHECK(src.size() == 100);
  auto r = src.read(10, 20);
  CHECK(r.data() == src.bytes().data() + 10);
  CHECK(byte_vector(r) == std::vector<std::uint8_t>(p.begin() + 10, p.begin() + 30));
  CHECK(src.read(100, 0).size() == 0);
  auto msg = message_of<corrupt_error>([&] { src.read(90, 11); });
  CHECK(contains(msg, "11 bytes"));
  CHECK(contains(msg, "offset 90"));
  CHECK(contains(msg, "size 100"));
  CHECK(contains(msg, "'buf'"));
  CHECK_THROWS_AS(src.read(101, 0), corrupt_error);
  CHECK_THROWS_AS(src.read(~std::uint64_t(0), 2), corrupt_error);  // no overflow wrap
  CHECK_THROWS_AS(src.read(2, ~std::uint64_t(0)), corrupt_error);
}

TEST_CASE("file_source reads with pread and with a shared mapping") {
  io_temp_dir d;
  auto p = pattern(100000, 3);
  write_file(d / "f.bin", bv(p));
  for (bool mm : {false, true}) {
    CAPTURE(mm);
    shared_bytes kept;
    {
      file_source src(d / "f.bin", {.use_mmap = mm});
      CHECK(src.size() == p.size());
      CHECK(src.is_zero_copy() == mm);
      auto r = src.read(12345, 5000);
      CHECK(byte_vector(r) == std::vector<std::uint8_t>(p.begin() + 12345, p.begin() + 17345));
      CHECK(reinterpret_cast<std::uintptr_t>(src.read(0, 10).data()) % 64 == 0);
      CHECK(byte_vector(src.read_all()) == p);
      auto msg = message_of<corrupt_error>([&] { src.read(99999, 2); });
      CHECK(contains(msg, d / "f.bin"));
      CHECK(contains(msg, "offset 99999"));
      CHECK(contains(msg, "size 100000"));
      kept = src.read(99000, 1000);
      file_source copy = src;  // copies share the descriptor / mapping
      CHECK(byte_vector(copy.read(0, 3)) == std::vector<std::uint8_t>(p.begin(), p.begin() + 3));
    }
    // The bytes outlive the source (for a mapping: the mapping stays alive).
    CHECK(byte_vector(kept) == std::vector<std::uint8_t>(p.begin() + 99000, p.end()));
  }
}

TEST_CASE("file_source: a large read lands in a huge-page block, byte for byte") {
  io_temp_dir d;
  const std::size_t n = lancet::large_alloc_threshold + 3 * 4096 + 17;
  auto p = pattern(n, 5);
  write_file(d / "big.bin", bv(p));
  shared_bytes kept;
  {
    file_source src(d / "big.bin");
    kept = src.read(0, n);
    CHECK((reinterpret_cast<std::uintptr_t>(kept.data()) - lancet::detail::large_block_header) %
              lancet::detail::huge_page_bytes ==
          0);
    CHECK(byte_vector(src.read(5, n - 5)) == std::vector<std::uint8_t>(p.begin() + 5, p.end()));
  }
  CHECK(byte_vector(kept) == p);  // outlives the source; unmapped with the last view
}

TEST_CASE("file_source errors: missing, directory, empty, truncated under us") {
  io_temp_dir d;
  auto msg = message_of<io_error>([&] { file_source s(d / "missing.lance"); });
  CHECK(contains(msg, d / "missing.lance"));
  CHECK(contains(msg, "No such file or directory"));
  msg = message_of<io_error>([&] { file_source s(d.path); });
  CHECK(contains(msg, "not a regular file"));

  write_file(d / "empty", bytes_view{});
  for (bool mm : {false, true}) {
    file_source e(d / "empty", {.use_mmap = mm});
    CHECK(e.size() == 0);
    CHECK(e.read(0, 0).size() == 0);
    CHECK_THROWS_AS(e.read(0, 1), corrupt_error);
  }

  write_file(d / "t", bv(pattern(1000)));
  file_source t(d / "t");
  REQUIRE(::truncate((d / "t").c_str(), 500) == 0);
  msg = message_of<io_error>([&] { t.read(400, 200); });
  CHECK(contains(msg, d / "t"));
  CHECK(contains(msg, "100 of 200"));
}

TEST_CASE("read_into: many ranges end to end, batched for files, from every kind of source") {
  io_temp_dir d;
  const std::size_t n = 3 << 20;
  auto p = pattern(n, 11);
  write_file(d / "r.bin", bv(p));
  // 300 scattered small ranges (several batches of 64), empty ones, a repeated one, an
  // overlapping one, one over 1 MiB (read alone), and the last byte.
  std::mt19937_64 g(5);
  std::vector<byte_range> ranges;
  for (int i = 0; i < 300; ++i) ranges.push_back({g() % (n - 600), 1 + g() % 600});
  ranges.push_back({777, 0});
  ranges.push_back(ranges[3]);
  ranges.push_back({ranges[3].offset + 1, 100});
  ranges.push_back({1000, (1 << 20) + 5});
  ranges.push_back({n - 1, 1});
  std::vector<std::uint8_t> want;
  for (const auto& r : ranges) want.insert(want.end(), p.begin() + std::ptrdiff_t(r.offset), p.begin() + std::ptrdiff_t(r.end()));
  auto read_all = [&](const auto& src) {
    std::vector<std::uint8_t> got(want.size() + 1, 0xEE);
    io::read_into(src, ranges, got.data());
    CHECK(got.back() == 0xEE);  // nothing past the end
    got.pop_back();
    return got;
  };
  for (bool mm : {false, true}) {
    CAPTURE(mm);
    file_source src(d / "r.bin", {.use_mmap = mm});
    CHECK(read_all(src) == want);
    CHECK(read_all(io::any_source(src)) == want);
    // Out of bounds: corrupt_error naming the file and the offset, before anything is read.
    std::vector<byte_range> bad{{10, 5}, {n - 3, 4}};
    std::vector<std::uint8_t> out(9);
    const auto msg = message_of<corrupt_error>([&] { io::read_into(src, bad, out.data()); });
    CHECK(contains(msg, d / "r.bin"));
    CHECK(contains(msg, "offset " + std::to_string(n - 3)));
  }
  CHECK(read_all(memory_source(shared_bytes::copy_of(bv(p)))) == want);
  CHECK(read_all(io::any_source(memory_source(shared_bytes::copy_of(bv(p))))) == want);

  // From several threads at once (each has its own ring), and in a forked child after
  // the parent has read (the child must not share the parent's ring).
  file_source src(d / "r.bin");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int k = 0; k < 20; ++k) ok += read_all(src) == want;
    });
  for (auto& t : threads) t.join();
  CHECK(ok == 80);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    bool same = true;
    for (int k = 0; k < 5; ++k) {
      std::vector<std::uint8_t> got(want.size());
      io::read_into(src, ranges, got.data());
      same = same && got == want;
    }
    ::_exit(same ? 0 : 1);
  }
  CHECK(read_all(src) == want);  // the parent reads while the child does
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));

  // A file truncated under the reader: io_error naming the file and how much came.
  write_file(d / "t", bv(pattern(100000)));
  file_source t(d / "t");
  REQUIRE(::truncate((d / "t").c_str(), 50000) == 0);
  std::vector<byte_range> across{{100, 10}, {49990, 20}, {200, 10}};
  std::vector<std::uint8_t> out(40);
  const auto msg = message_of<io_error>([&] { io::read_into(t, across, out.data()); });
  CHECK(contains(msg, d / "t"));
  CHECK(contains(msg, "10 of 20 bytes at offset 49990"));
}

namespace {
// A non-zero-copy source that counts reads, to observe coalescing.
struct range_log_source {
  memory_source inner;
  mutable std::vector<byte_range> reads;
  std::uint64_t size() const { return inner.size(); }
  shared_bytes read(std::uint64_t off, std::uint64_t len) const {
    reads.push_back({off, len});
    return shared_bytes::copy_of(inner.read(off, len).view());
  }
};
}  // namespace

TEST_CASE("read_ranges returns ranges in order and coalesces nearby ones") {
  auto p = pattern(1 << 20, 9);
  range_log_source src{memory_source(shared_bytes::copy_of(bv(p)), "counted"), {}};
  std::vector<byte_range> ranges = {
      {500, 100}, {0, 100}, {100, 50}, {150, 0}, {120, 10}, {4000, 10}, {900000, 64}, {600, 0},
  };
  auto out = read_ranges(src, ranges);
  REQUIRE(out.size() == ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    CAPTURE(i);
    CHECK(byte_vector(out[i]) == std::vector<std::uint8_t>(p.begin() + static_cast<long>(ranges[i].offset),
                                                   p.begin() + static_cast<long>(ranges[i].end())));
  }
  // [0,150) + [120,130) + [500,600) + [4000,4010) merge (gaps <= 4096); 900000 stands alone.
  CHECK(src.reads == std::vector<byte_range>{{0, 4010}, {900000, 64}});

  src.reads.clear();
  out = read_ranges(src, {{0, 10}, {20, 10}, {100, 10}}, {.max_gap = 0});
  CHECK(src.reads == std::vector<byte_range>{{0, 10}, {20, 10}, {100, 10}});
  src.reads.clear();
  out = read_ranges(src, {{0, 10}, {10, 10}, {20, 10}}, {.max_gap = 0, .max_read = 20});
  CHECK(src.reads == std::vector<byte_range>{{0, 20}, {20, 10}});

  // One bad range: nothing is read, the error names it.
  src.reads.clear();
  auto msg = message_of<corrupt_error>([&] { read_ranges(src, {{0, 10}, {(1 << 20) - 5, 6}}); });
  CHECK(contains(msg, "offset 1048571"));
  CHECK(src.reads.empty());

  // Zero-copy sources are sliced directly.
  memory_source m(shared_bytes::copy_of(bv(p)));
  auto z = read_ranges(m, {{7, 3}, {1, 2}});
  CHECK(z[0].data() == m.bytes().data() + 7);
  CHECK(z[1].data() == m.bytes().data() + 1);

  // And over a file.
  io_temp_dir d;
  write_file(d / "r", bv(p));
  file_source f(d / "r");
  auto fr = read_ranges(f, {{1000, 24}, {0, 8}, {(1 << 20) - 8, 8}});
  CHECK(byte_vector(fr[0]) == std::vector<std::uint8_t>(p.begin() + 1000, p.begin() + 1024));
  CHECK(byte_vector(fr[1]) == std::vector<std::uint8_t>(p.begin(), p.begin() + 8));
  CHECK(byte_vector(fr[2]) == std::vector<std::uint8_t>(p.end() - 8, p.end()));
}
