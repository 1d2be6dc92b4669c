/*
 * Memory the core reuses instead of asking malloc for it per request.
 *
 * mp_pool hands out blocks of one fixed size from a free list; blocks come
 * back with mp_pool_put and stay cached up to a limit. mp_buf is a growable
 * byte buffer whose first block comes from a pool, so the common case (a
 * response head, a small body) costs no malloc once the pool is warm.
 *
 * mp_malloc_count counts every malloc the core makes for pools and buffers,
 * so that "no malloc per request in steady state" can be checked; the
 * bytes are also charged to the request being served (base/charge.h).
 */
#ifndef MP_POOL_H
#define MP_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct mp_pool {
  size_t block_size;
  void *free_list;    /* singly linked through the first word of each block */
  unsigned nfree;     /* blocks on the free list */
  unsigned max_free;  /* blocks kept cached; more are freed on put */
  unsigned nused;     /* blocks handed out and not yet put back */
} mp_pool;

extern uint64_t mp_malloc_count;

/* malloc and realloc that count into mp_malloc_count and charge the
 * current request (old_size is what p had, for the growth). */
void *mp_alloc(size_t size);
void *mp_realloc(void *p, size_t old_size, size_t size);

void mp_pool_init(mp_pool *pool, size_t block_size, unsigned max_free);
/* A block of pool->block_size bytes, or NULL when malloc fails. */
void *mp_pool_get(mp_pool *pool);
void mp_pool_put(mp_pool *pool, void *block);
/* Frees the cached blocks; blocks still handed out are the caller's. */
void mp_pool_destroy(mp_pool *pool);

typedef struct mp_buf {
  char *data;
  size_t len;
  size_t cap;
  mp_pool *pool; /* where data came from while cap == pool->block_size */
} mp_buf;

/* Makes room for n more bytes. Returns 0 or MP_NOMEM. */
int mp_buf_reserve(mp_buf *b, size_t n);
/* Appends n bytes. Returns 0 or MP_NOMEM (then nothing was appended). */
int mp_buf_append(mp_buf *b, const void *p, size_t n);
/* Appends printf's output for fmt. Returns 0 or MP_NOMEM (then nothing
 * was appended). */
int mp_buf_printf(mp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Gives the memory back (to its pool when it came from one). */
void mp_buf_release(mp_buf *b);

#endif
