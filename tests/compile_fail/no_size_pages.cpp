// Must NOT compile: a policy without size_pages (neither defined nor inherited) given to
// dataset::write's file writer. The message must name size_pages.
#include <lancet/file/structural.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/io/memory_sink.hpp>

namespace v21 = lancet::encoding::structural;

struct half_policy {
  v21::page_plan plan_page(const v21::leaf_info&, const v21::data_block&, const v21::page_facts&) const { return {}; }
};

int main() {
  lancet::file::file_writer<lancet::file::v2_1, lancet::io::memory_sink, half_policy> w{lancet::io::memory_sink{}};
  (void)w;
}
