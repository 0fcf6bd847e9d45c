/* Counts a process's heap allocations (malloc, calloc, realloc and the aligned kinds) and
 * writes the total to $ALLOCCOUNT_FILE when the process exits normally. LD_PRELOAD it;
 * test_allocations.py builds it with gcc. Frees are passed through, uncounted. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_ulong count;
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
/* dlsym may allocate (calloc) before real_calloc is known: serve that from here. */
static char bootstrap[4096];
static size_t bootstrap_used;

static void resolve(void) {
  real_malloc = dlsym(RTLD_NEXT, "malloc");
  real_calloc = dlsym(RTLD_NEXT, "calloc");
  real_realloc = dlsym(RTLD_NEXT, "realloc");
  real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
  real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
}

void *malloc(size_t size) {
  if (!real_malloc) resolve();
  atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
  return real_malloc(size);
}

void *calloc(size_t n, size_t size) {
  if (!real_calloc) {
    size_t total = (n * size + 15) & ~(size_t)15;
    if (bootstrap_used + total > sizeof bootstrap) return NULL;
    void *p = bootstrap + bootstrap_used;
    bootstrap_used += total;
    memset(p, 0, total);
    return p;
  }
  atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
  return real_calloc(n, size);
}

void *realloc(void *p, size_t size) {
  if (!real_realloc) resolve();
  atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
  return real_realloc(p, size);
}

int posix_memalign(void **p, size_t alignment, size_t size) {
  if (!real_posix_memalign) resolve();
  atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
  return real_posix_memalign(p, alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
  if (!real_aligned_alloc) resolve();
  atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
  return real_aligned_alloc(alignment, size);
}

void free(void *p) {
  if ((char *)p >= bootstrap && (char *)p < bootstrap + sizeof bootstrap) return;
  static void (*real_free)(void *);
  if (!real_free) real_free = dlsym(RTLD_NEXT, "free");
  real_free(p);
}

__attribute__((destructor)) static void report(void) {
  const char *path = getenv("ALLOCCOUNT_FILE");
  if (!path) return;
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "%lu\n", atomic_load(&count));
  fclose(f);
}
