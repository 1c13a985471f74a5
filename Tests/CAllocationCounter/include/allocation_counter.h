// Counts the process's heap allocations, for the allocation gate
// (Tests/AllocationGateTests). Linked into AllocationGateChild only.
#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H

#include <stdint.h>

/// Blocks handed out so far by malloc, calloc, realloc, posix_memalign,
/// aligned_alloc, memalign and valloc, on every thread of the process.
uint64_t allocation_counter_allocations(void);

/// Bytes requested by those calls so far.
uint64_t allocation_counter_bytes(void);

/// 1 when this build counts (it replaces malloc), 0 when it cannot: under a
/// sanitizer, whose runtime owns malloc.
int allocation_counter_compiled_in(void);

#endif
