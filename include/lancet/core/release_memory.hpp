// Hands freed memory back to the system: the large blocks lancet keeps for reuse
// (core/buffer.hpp) and glibc's free heap pages. Long builds allocate and free blocks of
// many sizes (page reads, encoded batches, per-partition graphs), and glibc, whose mmap
// threshold grows with the largest block freed, keeps freed pages resident otherwise:
// several times the memory actually in use, which a memory budget must not count on.
// Budgeted builds call it between stages; a program may call it after a large scan.
#pragma once

#include "lancet/core/buffer.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace lancet {

inline void release_free_memory() noexcept {
  detail::large_block_cache::instance().clear();
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace lancet
