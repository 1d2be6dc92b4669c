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

#include "charge.h"

typedef struct mp_lua_heap {
  lua_Alloc base;     /* LuaJIT's own allocator, which does the work */
  void *base_ud;
  size_t in_use;      /* bytes live in the Lua heap */
  uint64_t allocated; /* bytes ever handed out (growths count their growth) */
  /* While a request runs (or an app loads), what it allocates is charged
   * to mp_charge_now (base/charge.h): the bytes handed out, and the heap's
   * growth meanwhile (allocations less frees, whoever made the freed
   * blocks). An allocation that would take that growth past limit is
   * refused (Lua raises "not enough memory") and the charge marked as
   * exceeded. The limit bounds what a request holds, so a handler may
   * stream far more than it through short-lived strings. */
  uint64_t limit;
} mp_lua_heap;

/* A lua_Alloc; ud is an mp_lua_heap. Never raises. Shrinking and freeing
 * always succeed. */
void *mp_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

#endif
