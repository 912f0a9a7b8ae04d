// Compile-cost TU: build an IVF_PQ index over an existing dataset's "vector" column.
// The per-layer umbrella <lancet/index.hpp> is used when it exists (see run.sh).
#if __has_include(<lancet/index.hpp>)
#include <lancet/index.hpp>
#else
#include <lancet/index/build/ivf_builder.hpp>
#endif

#include <string>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string path = argv[1];
  lancet::index::build_options o;
  o.column = "vector";
  o.type = lancet::index::ivf_index_type::ivf_pq;
  lancet::index::build_ivf_index(path, o);
  return 0;
}
