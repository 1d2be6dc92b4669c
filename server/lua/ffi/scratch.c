/*
 * The FFI's scratch buffer (see scratch.h). It grows through pool.h's
 * mp_realloc, so its growth is counted and charged to the request that
 * caused it, as the core's other allocations are.
 */
#include "scratch.h"

#include "pool.h"

static char *scratch;
static size_t scratch_cap;

char *mp__ffi_scratch(size_t n) {
  if (n <= scratch_cap) return scratch;
  char *p = mp_realloc(scratch, scratch_cap, n);
  if (p == NULL) return NULL;
  scratch = p;
  scratch_cap = n;
  return p;
}

char *mp__ffi_scratch_now(size_t *cap) {
  *cap = scratch_cap;
  return scratch;
}
