// Compile-cost baseline: only the third-party headers lancet itself depends on, each
// used trivially, so that the lancet TUs' cost is reported relative to "what the
// dependencies cost anyway". Compiled by run.sh, never linked.
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <xsimd/xsimd.hpp>
#include <zstd.h>

#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);

  boost::asio::thread_pool pool(2);
  std::size_t total = 0;
  boost::asio::post(pool, [&] { total = args.size(); });
  pool.join();

  xsimd::batch<float> a(static_cast<float>(argc)), b(2.0f);
  alignas(64) float out[xsimd::batch<float>::size];
  (a * b + a).store_aligned(out);

  return static_cast<int>(total + ZSTD_versionNumber() + static_cast<unsigned>(out[0])) & 1;
}
