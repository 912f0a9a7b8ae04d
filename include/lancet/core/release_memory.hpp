// Hands freed heap pages back to the system. Long builds allocate and free blocks of
// many sizes (page reads, encoded batches, per-partition graphs), and glibc, whose mmap
// threshold grows with the largest block freed, keeps freed pages resident otherwise:
// several times the memory actually in use, which a memory budget must not count on.
#pragma once

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace lancet {

inline void release_free_memory() noexcept {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace lancet
