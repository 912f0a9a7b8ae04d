// Must compile: the control for the failing cases (same includes and flags), so that a
// broken include path cannot pass as an expected failure.
#include <lancet/file/structural.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/io/memory_sink.hpp>

namespace v21 = lancet::encoding::structural;

struct only_plan : v21::default_policy {
  v21::page_plan plan_page(const v21::leaf_info& l, const v21::data_block& v, const v21::page_facts& f) const {
    return default_policy::plan_page(l, v, f);
  }
};

int main() {
  lancet::file::file_writer<lancet::file::v2_2, lancet::io::memory_sink, only_plan> w{lancet::io::memory_sink{}};
  (void)w;
}
