/*
 * The Lua allocator: LuaJIT's own allocator, wrapped to keep exact byte
 * counts. Every Lua state the worker makes uses it, so the heap's size is
 * always known, and bytes allocated while a request's handler runs can be
 * charged to that request.
 */
#ifndef MP_ALLOC_H
#define MP_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lua.h>

typedef struct mp_lua_heap {
  lua_Alloc base;     /* LuaJIT's own allocator, which does the work */
  void *base_ud;
  size_t in_use;      /* bytes live in the Lua heap */
  uint64_t allocated; /* bytes ever handed out (growths count their growth) */
  /* While a request's handler runs: the bytes it allocated (*charge), the
   * heap's growth while it ran (*live: allocations less frees, whoever made
   * the freed blocks), and its limit. An allocation that would take *live
   * past limit is refused (Lua raises "not enough memory" in the handler)
   * and *exceeded is set. The limit bounds what a request holds, so a
   * handler may stream far more than it through short-lived strings. */
  uint64_t *charge;
  int64_t *live;
  uint64_t limit;
  bool *exceeded;
  /* The first allocation refused since *exceeded was last clear: its
   * size, and what the holder would have held with it. */
  uint64_t refused_size;
  int64_t refused_live;
} mp_lua_heap;

/* A lua_Alloc; ud is an mp_lua_heap. Never raises. Shrinking and freeing
 * always succeed. */
void *mp_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

#endif
