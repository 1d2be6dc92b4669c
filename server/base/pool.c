/*
 * Fixed-size block pools and pooled growable buffers (see pool.h).
 *
 * A pool is not thread-safe: each worker owns its pools. A block on the free
 * list stores the next pointer in its first bytes, so block_size must be at
 * least sizeof(void *).
 */
#include "pool.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "charge.h"
#include "errors.h"

uint64_t mp_malloc_count;
mp_charge *mp_charge_now;

void *mp_alloc(size_t size) {
  mp_malloc_count++;
  if (mp_charge_now != NULL) mp_charge_now->c_bytes += size;
  return malloc(size);
}

void *mp_realloc(void *p, size_t old_size, size_t size) {
  mp_malloc_count++;
  if (mp_charge_now != NULL && size > old_size)
    mp_charge_now->c_bytes += size - old_size;
  return realloc(p, size);
}

void mp_pool_init(mp_pool *pool, size_t block_size, unsigned max_free) {
  assert(block_size >= sizeof(void *) && "pool blocks must hold a pointer");
  memset(pool, 0, sizeof *pool);
  pool->block_size = block_size;
  pool->max_free = max_free;
}

void *mp_pool_get(mp_pool *pool) {
  void *block = pool->free_list;
  if (block != NULL) {
    memcpy(&pool->free_list, block, sizeof(void *));
    pool->nfree--;
  } else {
    block = mp_alloc(pool->block_size);
    if (block == NULL) return NULL;
  }
  pool->nused++;
  return block;
}

void mp_pool_put(mp_pool *pool, void *block) {
  if (block == NULL) return;
  assert(pool->nused > 0 && "pool put without a matching get");
  pool->nused--;
  if (pool->nfree >= pool->max_free) {
    free(block);
    return;
  }
  memcpy(block, &pool->free_list, sizeof(void *));
  pool->free_list = block;
  pool->nfree++;
}

void mp_pool_destroy(mp_pool *pool) {
  while (pool->free_list != NULL) {
    void *block = pool->free_list;
    memcpy(&pool->free_list, block, sizeof(void *));
    free(block);
  }
  pool->nfree = 0;
}

int mp_buf_printf(mp_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || mp_buf_reserve(b, (size_t)n + 1) != 0) return MP_NOMEM;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

int mp_buf_reserve(mp_buf *b, size_t n) {
  if (b->cap - b->len >= n) return 0;
  if (n > SIZE_MAX - b->len) return MP_NOMEM; /* len + n would wrap */
  if (b->data == NULL && b->pool != NULL && n <= b->pool->block_size) {
    b->data = mp_pool_get(b->pool);
    if (b->data == NULL) return MP_NOMEM;
    b->cap = b->pool->block_size;
    return 0;
  }
  size_t want = b->len + n;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < want) {
    if (cap > SIZE_MAX / 2) return MP_NOMEM;
    cap *= 2;
  }
  char *data;
  if (b->pool != NULL && b->data != NULL && b->cap == b->pool->block_size) {
    /* Leaving the pool: copy out of the pooled block. */
    data = mp_alloc(cap);
    if (data == NULL) return MP_NOMEM;
    memcpy(data, b->data, b->len);
    mp_pool_put(b->pool, b->data);
  } else {
    data = mp_realloc(b->data, b->cap, cap);
    if (data == NULL) return MP_NOMEM;
  }
  b->data = data;
  b->cap = cap;
  return 0;
}

int mp_buf_append(mp_buf *b, const void *p, size_t n) {
  int rc = mp_buf_reserve(b, n);
  if (rc != 0) return rc;
  if (n > 0) memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

void mp_buf_release(mp_buf *b) {
  if (b->data != NULL) {
    if (b->pool != NULL && b->cap == b->pool->block_size)
      mp_pool_put(b->pool, b->data);
    else
      free(b->data);
  }
  b->data = NULL;
  b->len = b->cap = 0;
}
