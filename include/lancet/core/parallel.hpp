// Fork-join over a Boost.Asio thread pool: parallel_for(pool, n, fn) runs fn(0..n-1)
// and returns when all calls are done. A null pool runs everything on the calling
// thread. Callers make results independent of the thread count by giving each task a
// fixed slice of the work and combining the slices in task order afterwards.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <type_traits>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

namespace lancet {

namespace detail {

// One fork-join: the caller's fn behind a plain function pointer, so that the job
// posted to the pool is a single type (fork_join_job). Posting a lambda per call site
// made every parallel_for instantiate Asio's handler machinery again.
struct fork_join_state {
  std::size_t n = 0;
  void* fn = nullptr;                              // the caller's callable
  void (*call)(void*, std::size_t) = nullptr;      // calls it with one task index
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;  // guarded by mu
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;  // guarded by mu; the first failure wins
  std::atomic<bool> failed{false};
};

// Claims task indices until none are left. Tasks claimed after a failure are skipped.
inline void fork_join_work(fork_join_state& st) {
  for (;;) {
    const std::size_t i = st.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= st.n) return;
    std::exception_ptr err;
    if (!st.failed.load(std::memory_order_relaxed)) {
      try {
        st.call(st.fn, i);
      } catch (...) {
        err = std::current_exception();
      }
    }
    std::lock_guard<std::mutex> lk(st.mu);
    if (err && !st.error) {
      st.error = err;
      st.failed.store(true, std::memory_order_relaxed);
    }
    if (++st.done == st.n) st.cv.notify_all();
  }
}

// What parallel_for posts: the same type for every caller.
struct fork_join_job {
  std::shared_ptr<fork_join_state> st;
  void operator()() const { fork_join_work(*st); }
};

// Posts n jobs to the pool, works too when called from one of its threads, and waits.
inline void fork_join_run(boost::asio::thread_pool& pool, const std::shared_ptr<fork_join_state>& st) {
  // One job per task: a job claims whatever index is next, so late starters just exit.
  for (std::size_t j = 0; j < st->n; ++j) boost::asio::post(pool, fork_join_job{st});
  if (pool.get_executor().running_in_this_thread()) fork_join_work(*st);
  std::unique_lock<std::mutex> lk(st->mu);
  st->cv.wait(lk, [&] { return st->done == st->n; });
  if (st->error) std::rethrow_exception(st->error);
}

}  // namespace detail

// Runs fn(i) for every i in [0, n). With a pool the calls are spread over its threads;
// when the calling thread is itself one of the pool's threads it works too (so nested
// use cannot deadlock). The first exception thrown by fn is rethrown here once every
// started call has finished.
template <class F>
inline void parallel_for(boost::asio::thread_pool* pool, std::size_t n, F&& fn) {
  if (n == 0) return;
  if (pool == nullptr || n == 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  auto st = std::make_shared<detail::fork_join_state>();
  st->n = n;
  // fn stays valid until we return, and every claimed task finishes before that.
  st->fn = const_cast<void*>(static_cast<const volatile void*>(std::addressof(fn)));
  st->call = [](void* f, std::size_t i) { (*static_cast<Fn*>(f))(i); };
  detail::fork_join_run(*pool, st);
}

}  // namespace lancet
