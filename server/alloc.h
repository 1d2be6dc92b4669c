/*
 * The Lua allocator: realloc/free with exact byte counts. Every Lua state
 * the worker makes uses it, so the heap's size is always known, and bytes
 * allocated while a request's handler runs can be charged to that request.
 */
#ifndef MP_ALLOC_H
#define MP_ALLOC_H

#include <stddef.h>
#include <stdint.h>

typedef struct mp_lua_heap {
  size_t in_use;      /* bytes live in the Lua heap */
  uint64_t allocated; /* bytes ever handed out (growths count their growth) */
  uint64_t *charge;   /* also counts into this, when set */
} mp_lua_heap;

/* A lua_Alloc; ud is an mp_lua_heap. Never raises. */
void *mp_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

#endif
