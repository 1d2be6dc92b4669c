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
  if (nsize == 0) {
    heap->base(heap->base_ud, ptr, osize, 0);
    heap->in_use -= osize;
    if (heap->live != NULL) *heap->live -= (int64_t)osize;
    return NULL;
  }
  size_t growth = nsize > osize ? nsize - osize : 0;
  if (heap->live != NULL && growth > 0 &&
      (*heap->exceeded || *heap->live + (int64_t)growth > (int64_t)heap->limit)) {
    if (!*heap->exceeded) {
      heap->refused_size = growth;
      heap->refused_live = *heap->live + (int64_t)growth;
    }
    *heap->exceeded = true;
    return NULL;
  }
  void *p = heap->base(heap->base_ud, ptr, osize, nsize);
  if (p == NULL) return NULL;
  heap->in_use = heap->in_use - osize + nsize;
  heap->allocated += growth;
  if (heap->charge != NULL) {
    *heap->charge += growth;
    *heap->live += (int64_t)nsize - (int64_t)osize;
  }
  return p;
}
