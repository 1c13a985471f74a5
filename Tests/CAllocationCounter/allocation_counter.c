// Replaces glibc's malloc family with counting wrappers around glibc's own
// implementations (__libc_malloc and friends, which glibc exports for exactly
// this): an executable's definitions come first in symbol lookup, so the Swift
// runtime's and every library's allocations go through them. Blocks are
// glibc's, so a block from either side may be freed or resized by the other.
//
// Under AddressSanitizer or ThreadSanitizer the sanitizer's runtime owns malloc:
// nothing is replaced and the counter says so (allocation_counter_compiled_in).

#include "allocation_counter.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define ALLOCATION_COUNTER_OFF 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOCATION_COUNTER_OFF 1
#endif

static _Atomic uint64_t allocations;
static _Atomic uint64_t bytes;

uint64_t allocation_counter_allocations(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }

uint64_t allocation_counter_bytes(void) { return atomic_load_explicit(&bytes, memory_order_relaxed); }

#if defined(ALLOCATION_COUNTER_OFF) || !defined(__GLIBC__)

int allocation_counter_compiled_in(void) { return 0; }

#else

int allocation_counter_compiled_in(void) { return 1; }

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static inline void count(size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&bytes, size, memory_order_relaxed);
}

// Weak: should a sanitizer's runtime be linked in all the same, its strong
// definitions win at link time instead of clashing with these.
#define REPLACES __attribute__((weak, visibility("default")))

REPLACES void *malloc(size_t size) {
    count(size);
    return __libc_malloc(size);
}

REPLACES void *calloc(size_t count_, size_t size) {
    count(count_ * size);
    return __libc_calloc(count_, size);
}

REPLACES void *realloc(void *pointer, size_t size) {
    count(size);
    return __libc_realloc(pointer, size);
}

REPLACES void free(void *pointer) { __libc_free(pointer); }

REPLACES void *memalign(size_t alignment, size_t size) {
    count(size);
    return __libc_memalign(alignment, size);
}

REPLACES void *aligned_alloc(size_t alignment, size_t size) {
    count(size);
    return __libc_memalign(alignment, size);
}

REPLACES int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) {
        return EINVAL;
    }
    count(size);
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) {
        return ENOMEM;
    }
    *result = pointer;
    return 0;
}

REPLACES void *valloc(size_t size) {
    count(size);
    return __libc_memalign(4096, size);
}

#endif
