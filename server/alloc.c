/*
 * The counting Lua allocator (see alloc.h). LuaJIT passes the old size of
 * every block it frees or resizes, so the counts are exact without storing
 * a size header next to each block.
 */
#include "alloc.h"

#include <stdlib.h>

void *mp_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  mp_lua_heap *heap = ud;
  if (ptr == NULL) osize = 0; /* then osize encodes the object's type */
  if (nsize == 0) {
    free(ptr);
    heap->in_use -= osize;
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p == NULL) return NULL;
  heap->in_use = heap->in_use - osize + nsize;
  if (nsize > osize) {
    heap->allocated += nsize - osize;
    if (heap->charge != NULL) *heap->charge += nsize - osize;
  }
  return p;
}
