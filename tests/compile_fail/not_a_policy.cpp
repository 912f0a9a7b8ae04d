// Must NOT compile: a class passed as an encoding policy that lacks plan_page (it
// misspells it). tests/compile_fail/run.sh checks that the compiler's message names
// the missing member.
#include <lancet/file/structural.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/io/memory_sink.hpp>

namespace v21 = lancet::encoding::structural;

struct misspelt_policy {
  v21::page_plan plan_pages(const v21::leaf_info&, const v21::data_block&, const v21::page_facts&) const { return {}; }
  v21::page_sizing size_pages(const lancet::arrow::field&, const v21::page_sizing& s) const { return s; }
};

int main() {
  lancet::file::file_writer<lancet::file::v2_2, lancet::io::memory_sink, misspelt_policy> w{lancet::io::memory_sink{}};
  (void)w;
}
