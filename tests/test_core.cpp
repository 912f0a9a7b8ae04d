#include <doctest/doctest.h>

#include <lancet/core/xxhash64.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <lancet/core/buffer.hpp>
#include <lancet/core/deal.hpp>
#include <lancet/core/endian.hpp>
#include <lancet/core/error.hpp>
#include <lancet/core/executor.hpp>
#include <lancet/core/random.hpp>
#include <lancet/core/release_memory.hpp>
#include <lancet/core/warning.hpp>

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

TEST_CASE("large blocks: own huge-page mappings, reused through a small cache, released on request") {
  // From lancet::large_alloc_threshold on, storage is an anonymous 2 MiB-aligned
  // mapping (huge pages requested) behind a 64-byte header; everything else behaves as
  // for small buffers.
  release_free_memory();
  auto& cache = detail::large_block_cache::instance();
  REQUIRE(cache.kept_blocks() == 0);
  const std::size_t big = lancet::large_alloc_threshold + 12345;
  auto mapped_at = [](const std::uint8_t* p) {
    return reinterpret_cast<std::uintptr_t>(p) % 64 == 0 &&
           (reinterpret_cast<std::uintptr_t>(p) - detail::large_block_header) % detail::huge_page_bytes == 0;
  };
  {
    aligned_buffer b;
    b.resize(1000);
    for (std::size_t i = 0; i < 1000; ++i) b[i] = std::uint8_t(i * 7);
    b.resize(big);  // grows from malloc'd to mapped storage, keeping the bytes
    REQUIRE(b.size() == big);
    CHECK(mapped_at(b.data()));
    bool kept = true, zero = true;
    for (std::size_t i = 0; i < 1000; ++i) kept = kept && b[i] == std::uint8_t(i * 7);
    for (std::size_t i = 1000; i < big; i += 4093) zero = zero && b[i] == 0;
    CHECK(kept);
    CHECK(zero);
    CHECK(b[big - 1] == 0);
    b[big - 1] = 42;
    aligned_buffer c = b;  // a copy gets its own block
    CHECK(c.data() != b.data());
    CHECK(c[big - 1] == 42);
    CHECK(c[999] == std::uint8_t(999 * 7));
    b.append_zeros(lancet::large_alloc_threshold);  // growth moves the bytes to a larger block
    CHECK(b[big - 1] == 42);
    CHECK(b.size() == big + lancet::large_alloc_threshold);
    shared_bytes s(std::move(c));  // the block now belongs to the shared view
    CHECK(s.size() == big);
    CHECK(s.data()[big - 1] == 42);
  }
  // Freed blocks wait for reuse (at most max_blocks); one of about the same size comes back.
  CHECK(cache.kept_blocks() >= 1);
  CHECK(cache.kept_blocks() <= detail::large_block_cache::max_blocks);
  {
    aligned_buffer again;
    again.resize(big);  // zero-filled even when the block is reused
    bool zero = true;
    for (std::size_t i = 0; i < big; i += 4093) zero = zero && again[i] == 0;
    CHECK(zero);
    CHECK(again[big - 1] == 0);
    CHECK(mapped_at(again.data()));
  }
  release_free_memory();
  CHECK(cache.kept_blocks() == 0);
  // Blocks far larger than a cached one are not served from it.
  std::uint8_t* small_block = detail::allocate_bytes(lancet::large_alloc_threshold);
  detail::free_bytes(small_block, lancet::large_alloc_threshold);
  REQUIRE(cache.kept_blocks() == 1);
  std::uint8_t* huge = detail::allocate_bytes(5 * lancet::large_alloc_threshold);
  CHECK(huge != small_block);
  CHECK(cache.kept_blocks() == 1);
  huge[5 * lancet::large_alloc_threshold - 1] = 7;
  detail::free_bytes(huge, 5 * lancet::large_alloc_threshold);
  for (std::size_t n : {std::size_t(64), lancet::large_alloc_threshold - 1, lancet::large_alloc_threshold,
                        lancet::large_alloc_threshold + 1, 3 * detail::huge_page_bytes * 20 + 5}) {
    CAPTURE(n);
    std::uint8_t* p = detail::allocate_bytes(n);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
    p[0] = 1;
    p[n - 1] = 2;
    CHECK(p[n - 1] == 2);
    detail::free_bytes(p, n);
  }
  release_free_memory();
  CHECK(cache.kept_blocks() == 0);
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

TEST_CASE("warnings go to the handler the program sets; null restores the default") {
  std::vector<std::string> got;
  auto previous = lancet::set_warning_handler(
      [](std::string_view m, void* ctx) { static_cast<std::vector<std::string>*>(ctx)->emplace_back(m); }, &got);
  lancet::warn("first");
  lancet::warn(std::string("second ") + std::to_string(2));
  auto mine = lancet::set_warning_handler(previous.first, previous.second);
  CHECK(mine.second == &got);
  lancet::warn("to stderr, not to the vector");
  REQUIRE(got.size() == 2);
  CHECK(got[0] == "first");
  CHECK(got[1] == "second 2");
}

TEST_CASE("internal errors are their own kind") {
  try {
    throw lancet::internal_error("leaf count");
  } catch (const lancet::error& e) {
    CHECK(e.code() == lancet::errc::internal);
    CHECK(std::string(e.what()) == "internal error: leaf count");
  }
  CHECK_FALSE(std::is_base_of_v<lancet::invalid_input_error, lancet::internal_error>);
}

namespace {
// A pool of the caller's own making: executor_ref finds `post` by argument-dependent lookup.
namespace user_pool {
struct inline_pool {
  int posted = 0;
};
inline void post(inline_pool& p, std::function<void()> f) {
  ++p.posted;
  f();
}
}  // namespace user_pool
}  // namespace

TEST_CASE("executor_ref posts to a pool found by argument-dependent lookup, and is null by default") {
  lancet::executor_ref none;
  CHECK_FALSE(none);
  CHECK(none == nullptr);
  user_pool::inline_pool p;
  lancet::executor_ref ex = &p;
  REQUIRE(ex);
  int ran = 0;
  ex.post([&] { ++ran; });
  ex.post([&] { ++ran; });
  CHECK(ran == 2);
  CHECK(p.posted == 2);
  CHECK(ex.target() == &p);
}

TEST_CASE("deal_by_weight: heaviest first, each to the least loaded worker") {
  // 9, 8, 7 to workers 0, 1, 2; then 4 to worker 2 (at 7), the first 3 to worker 1 (at 8),
  // the second to worker 0 (at 9), and 0 to worker 1 (the lower of two at 11).
  const std::vector<std::uint64_t> w = {3, 9, 4, 7, 8, 3, 0};
  const auto d = lancet::deal_by_weight(w, 3);
  CHECK(d.items == std::vector<std::vector<std::size_t>>{{1, 5}, {0, 4, 6}, {2, 3}});
  CHECK(d.load == std::vector<std::uint64_t>{12, 11, 11});
  // Every item once; loads add up.
  const auto one = lancet::deal_by_weight(w, 1);
  CHECK(one.items == std::vector<std::vector<std::size_t>>{{0, 1, 2, 3, 4, 5, 6}});
  CHECK(one.load == std::vector<std::uint64_t>{34});
  // More workers than items: the rest get nothing.
  const auto many = lancet::deal_by_weight(std::vector<std::uint64_t>{5, 5}, 4);
  CHECK(many.items == std::vector<std::vector<std::size_t>>{{0}, {1}, {}, {}});
  CHECK(lancet::deal_by_weight({}, 2).load == std::vector<std::uint64_t>{0, 0});
  CHECK_THROWS_WITH_AS(lancet::deal_by_weight(w, 0), doctest::Contains("0 workers"), lancet::invalid_input_error);
}

TEST_CASE("random_u64: a forked child draws other values than its parent") {
  (void)lancet::random_u64();  // the parent's generator is seeded before the fork
  int fd[2];
  REQUIRE(::pipe(fd) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::uint64_t v[2] = {lancet::random_u64(), lancet::random_u64()};
    const bool sent = ::write(fd[1], v, sizeof v) == ssize_t(sizeof v);
    ::_exit(sent ? 0 : 1);
  }
  ::close(fd[1]);
  std::uint64_t child[2] = {0, 0};
  const bool got = ::read(fd[0], child, sizeof child) == ssize_t(sizeof child);
  ::close(fd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(got);
  const std::uint64_t parent[2] = {lancet::random_u64(), lancet::random_u64()};
  CHECK((child[0] != parent[0] || child[1] != parent[1]));
  CHECK(lancet::random_between(7, 7) == 7);
  for (int i = 0; i < 100; ++i) {
    const auto x = lancet::random_between(3, 5);
    CHECK((x >= 3 && x <= 5));
  }
}

TEST_CASE("xxhash64 matches XXH64's reference values, short keys and every stripe path") {
  CHECK(lancet::xxhash64("") == 0xef46db3751d8e999ull);
  CHECK(lancet::xxhash64("a") == 0xd24ec4f1a98c6e5bull);
  CHECK(lancet::xxhash64("abc") == 0x44bc2cf5ad770999ull);
  std::string bytes(100, '\0');
  for (int i = 0; i < 100; ++i) bytes[std::size_t(i)] = char(i);
  // libxxhash's XXH64(bytes[:n], seed 0): below, at and past one 32-byte stripe.
  const std::vector<std::pair<std::size_t, std::uint64_t>> want = {
      {31, 0xc346d2b59b4d8ee1ull}, {32, 0xcbf59c5116ff32b4ull}, {33, 0x0c535d1acafb8eadull}, {40, 0xf5da40f1b11741e9ull},
      {63, 0xe26aa9e2a95f8e4full}, {64, 0xf7c67301db6713f0ull}, {65, 0xc31eb63b2ae4465bull}, {100, 0x6ac1e58032166597ull}};
  for (const auto& [n, h] : want) {
    CAPTURE(n);
    CHECK(lancet::xxhash64(std::string_view(bytes).substr(0, n)) == h);
  }
}
