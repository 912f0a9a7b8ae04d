// executor_ref: where lancet runs work in parallel, without lancet's headers naming a
// thread pool type. It refers to (does not own) a pool such as boost::asio::thread_pool
// (anything whose get_executor().post(fn, allocator) queues fn, or that an ADL-found
// `post(pool, fn)` accepts): `opts.pool = &pool;` works as with a plain pointer, and
// only the caller's translation unit, which made the pool, includes Asio.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

namespace lancet {

namespace detail {
// An executor whose post() queues work (never runs it inline), as Asio's thread_pool
// executor does; found on the pool's class itself, so <boost/asio/post.hpp> is not needed.
template <class Pool>
concept executor_posting = requires(Pool& p, std::function<void()> f) {
  p.get_executor().post(std::move(f), std::allocator<void>());
};
// Otherwise `post(pool, fn)`, found by argument-dependent lookup (outside the class, so
// that executor_ref::post does not hide it).
template <class Pool>
concept adl_posting = requires(Pool& p, std::function<void()> f) { post(p, std::move(f)); };
template <class Pool>
concept postable = executor_posting<Pool> || adl_posting<Pool>;

template <class Pool>
void post_to_pool(void* pool, std::function<void()> fn) {
  auto& p = *static_cast<Pool*>(pool);
  if constexpr (executor_posting<Pool>) p.get_executor().post(std::move(fn), std::allocator<void>());
  else post(p, std::move(fn));
}
}  // namespace detail

class executor_ref {
 public:
  executor_ref() = default;
  executor_ref(std::nullptr_t) noexcept {}
  template <detail::postable Pool>
  executor_ref(Pool* pool) noexcept  // implicit, as the plain pointer it replaces
      : pool_(pool), post_(pool ? &detail::post_to_pool<Pool> : nullptr) {}

  explicit operator bool() const noexcept { return pool_ != nullptr; }
  friend bool operator==(const executor_ref& a, std::nullptr_t) noexcept { return a.pool_ == nullptr; }

  // Runs fn on the pool (some time later, on one of its threads).
  void post(std::function<void()> fn) const { post_(pool_, std::move(fn)); }
  void* target() const noexcept { return pool_; }

 private:
  void* pool_ = nullptr;
  void (*post_)(void*, std::function<void()>) = nullptr;
};

}  // namespace lancet
