// boost::asio::thread_pool, declared only: options and search parameters hold a pointer
// to the pool a caller lends them, which needs no definition. Whoever makes a pool or
// posts to one includes <boost/asio/thread_pool.hpp> (core/parallel.hpp does), so a
// header that only names the pool does not parse Boost.Asio.
#pragma once

namespace boost::asio {
class thread_pool;
}  // namespace boost::asio
