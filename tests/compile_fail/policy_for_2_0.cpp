// Must NOT compile: an encoding policy given to a 2.0 writer (2.0's legacy encodings
// take no policy). The message must say so.
#include <lancet/encoding/structural/policy.hpp>
#include <lancet/file/legacy.hpp>
#include <lancet/file/writer.hpp>
#include <lancet/io/memory_sink.hpp>

int main() {
  lancet::file::file_writer<lancet::file::v2_0, lancet::io::memory_sink, lancet::encoding::structural::default_policy> w{
      lancet::io::memory_sink{}};
  (void)w;
}
