/*
 * The counting Lua allocator (see heap.h). LuaJIT passes the old size of
 * every block it frees or resizes, so the counts are exact without storing
 * a size header next to each block. The blocks themselves come from
 * LuaJIT's built-in allocator (a dlmalloc over its own mmap'ed arenas):
 * faster than the C library's malloc for the small objects Lua makes, and
 * it keeps the Lua heap apart from the core's.
 *
 * Refusing is safe: LuaJIT turns a NULL into a catchable memory error, and
 * a refused realloc leaves the old block as it was. Once a request is over
 * its limit every further growth is refused too, so a handler that catches
 * the error with pcall cannot go on allocating.
 */
#include "heap.h"


void *mp_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  mp_lua_heap *heap = ud;
  if (ptr == NULL) osize = 0; /* then osize encodes the object's type */
  mp_charge *c = mp_charge_now;
  if (nsize == 0) {
    heap->base(heap->base_ud, ptr, osize, 0);
    heap->in_use -= osize;
    if (c != NULL) c->lua_live -= (int64_t)osize;
    return NULL;
  }
  size_t growth = nsize > osize ? nsize - osize : 0;
  if (c != NULL && growth > 0 &&
      (c->lua_exceeded || c->lua_live + (int64_t)growth > (int64_t)heap->limit)) {
    if (!c->lua_exceeded) {
      c->refused_size = growth;
      c->refused_live = c->lua_live + (int64_t)growth;
    }
    c->lua_exceeded = true;
    return NULL;
  }
  void *p = heap->base(heap->base_ud, ptr, osize, nsize);
  if (p == NULL) return NULL;
  heap->in_use = heap->in_use - osize + nsize;
  heap->allocated += growth;
  if (c != NULL) {
    c->lua_bytes += growth;
    c->lua_live += (int64_t)nsize - (int64_t)osize;
  }
  return p;
}
