/*
 * The pools and pooled buffers of server/base/pool.c: blocks handed out,
 * cached up to a limit and freed past it; buffers that start in a pooled
 * block, grow out of the pool and come back to it; and the malloc count
 * and per-request charge that every allocation of the core goes through.
 * Everything is freed by the end (the test runs under AddressSanitizer).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errors.h"
#include "charge.h"
#include "pool.h"

static void test_pool_reuses_blocks(void) {
  mp_pool pool;
  mp_pool_init(&pool, 256, 2);
  uint64_t mallocs = mp_malloc_count;
  void *a = mp_pool_get(&pool);
  void *b = mp_pool_get(&pool);
  CHECK(a != NULL && b != NULL && a != b);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 2);
  CHECK_EQ_INT(pool.nused, 2);
  CHECK_EQ_INT(pool.nfree, 0);
  memset(a, 'a', 256); /* the whole block is the caller's */
  mp_pool_put(&pool, a);
  CHECK_EQ_INT(pool.nused, 1);
  CHECK_EQ_INT(pool.nfree, 1);
  /* The cached block comes back, without a malloc. */
  void *c = mp_pool_get(&pool);
  CHECK(c == a);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 2);
  CHECK_EQ_INT(pool.nfree, 0);
  mp_pool_put(&pool, b);
  mp_pool_put(&pool, c);
  mp_pool_put(&pool, NULL); /* nothing to give back */
  CHECK_EQ_INT(pool.nused, 0);
  CHECK_EQ_INT(pool.nfree, 2);
  /* Last in, first out. */
  CHECK(mp_pool_get(&pool) == c);
  CHECK(mp_pool_get(&pool) == b);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 2);
  mp_pool_put(&pool, b);
  mp_pool_put(&pool, c);
  mp_pool_destroy(&pool);
  CHECK_EQ_INT(pool.nfree, 0);
  CHECK(pool.free_list == NULL);
}

static void test_pool_cache_limit(void) {
  mp_pool pool;
  mp_pool_init(&pool, sizeof(void *), 3);
  void *blocks[8];
  for (int i = 0; i < 8; i++) blocks[i] = mp_pool_get(&pool);
  CHECK_EQ_INT(pool.nused, 8);
  /* Past max_free, a block put back is freed, not cached. */
  for (int i = 0; i < 8; i++) mp_pool_put(&pool, blocks[i]);
  CHECK_EQ_INT(pool.nused, 0);
  CHECK_EQ_INT(pool.nfree, 3);
  uint64_t mallocs = mp_malloc_count;
  for (int i = 0; i < 3; i++) blocks[i] = mp_pool_get(&pool);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 0);
  blocks[3] = mp_pool_get(&pool);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 1);
  for (int i = 0; i < 4; i++) mp_pool_put(&pool, blocks[i]);
  mp_pool_destroy(&pool);

  /* A pool that caches nothing frees every block put back. */
  mp_pool_init(&pool, 64, 0);
  void *x = mp_pool_get(&pool);
  mp_pool_put(&pool, x);
  CHECK_EQ_INT(pool.nfree, 0);
  CHECK(pool.free_list == NULL);
  mp_pool_destroy(&pool);
}

/* Blocks still handed out when the pool is destroyed stay the caller's,
 * and go back to the pool's cache (or malloc) as usual afterwards. */
static void test_pool_destroy_leaves_used_blocks(void) {
  mp_pool pool;
  mp_pool_init(&pool, 128, 4);
  void *kept = mp_pool_get(&pool);
  void *cached = mp_pool_get(&pool);
  mp_pool_put(&pool, cached);
  mp_pool_destroy(&pool);
  CHECK_EQ_INT(pool.nfree, 0);
  CHECK_EQ_INT(pool.nused, 1);
  memset(kept, 'k', 128);
  mp_pool_put(&pool, kept);
  mp_pool_destroy(&pool);
  CHECK_EQ_INT(pool.nused, 0);
  CHECK(pool.free_list == NULL);
}

static void test_charge(void) {
  mp_charge charge = {0};
  mp_pool pool;
  mp_pool_init(&pool, 512, 4);

  /* Nothing is charged while no request is current. */
  mp_charge_switch(NULL);
  void *warm = mp_pool_get(&pool);
  mp_pool_put(&pool, warm);
  CHECK_EQ_INT(charge.c_bytes, 0);

  mp_charge_switch(&charge);
  uint64_t mallocs = mp_malloc_count;
  /* A block from the cache costs nothing; a new block, its size. */
  void *a = mp_pool_get(&pool);
  CHECK_EQ_INT(charge.c_bytes, 0);
  void *b = mp_pool_get(&pool);
  CHECK_EQ_INT(charge.c_bytes, 512);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 1);
  /* mp_alloc charges what it allocates; mp_realloc only the growth. */
  char *p = mp_alloc(1000);
  CHECK(p != NULL);
  CHECK_EQ_INT(charge.c_bytes, 512 + 1000);
  p = mp_realloc(p, 1000, 3000);
  CHECK(p != NULL);
  CHECK_EQ_INT(charge.c_bytes, 512 + 3000);
  p = mp_realloc(p, 3000, 100);
  CHECK(p != NULL);
  CHECK_EQ_INT(charge.c_bytes, 512 + 3000);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 4);
  /* Giving memory back is not a credit. */
  free(p);
  mp_pool_put(&pool, a);
  mp_pool_put(&pool, b);
  CHECK_EQ_INT(charge.c_bytes, 512 + 3000);
  mp_charge_switch(NULL);
  p = mp_alloc(64);
  CHECK_EQ_INT(charge.c_bytes, 512 + 3000);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 5);
  free(p);
  mp_pool_destroy(&pool);
}

/* A buffer of a pool: its first block comes from the pool, it grows out
 * of it into malloc'ed memory, and once released takes a pooled block
 * again. */
static void test_buf_in_and_out_of_the_pool(void) {
  enum { BLOCK = 1024 };
  mp_pool pool;
  mp_pool_init(&pool, BLOCK, 4);
  void *warm = mp_pool_get(&pool);
  mp_pool_put(&pool, warm);
  mp_charge charge = {0};
  mp_charge_switch(&charge);
  uint64_t mallocs = mp_malloc_count;

  mp_buf b = {.pool = &pool};
  CHECK_EQ_INT(mp_buf_reserve(&b, 10), 0);
  CHECK(b.data == warm);
  CHECK_EQ_INT(b.cap, BLOCK);
  CHECK_EQ_INT(b.len, 0);
  CHECK_EQ_INT(pool.nfree, 0);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 0);
  CHECK_EQ_INT(charge.c_bytes, 0);

  char piece[600];
  memset(piece, 'x', sizeof piece);
  CHECK_EQ_INT(mp_buf_append(&b, piece, sizeof piece), 0);
  CHECK_EQ_INT(b.len, 600);
  CHECK(b.data == warm);
  /* 600 + 600 does not fit: out of the pool, into a block twice as big,
   * with the bytes copied and the pooled block given back. */
  memset(piece, 'y', sizeof piece);
  CHECK_EQ_INT(mp_buf_append(&b, piece, sizeof piece), 0);
  CHECK_EQ_INT(b.len, 1200);
  CHECK_EQ_INT(b.cap, 2 * BLOCK);
  CHECK(b.data != warm);
  CHECK_EQ_INT(pool.nfree, 1);
  CHECK_EQ_INT(pool.nused, 0);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 1);
  CHECK_EQ_INT(charge.c_bytes, 2 * BLOCK);
  CHECK(b.data[0] == 'x' && b.data[599] == 'x' && b.data[600] == 'y' &&
        b.data[1199] == 'y');

  /* Growing again reallocates: only the growth is charged. */
  CHECK_EQ_INT(mp_buf_reserve(&b, 5000), 0);
  CHECK_EQ_INT(b.cap, 8 * BLOCK);
  CHECK_EQ_INT(b.len, 1200);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 2);
  CHECK_EQ_INT(charge.c_bytes, 8 * BLOCK);
  CHECK(b.data[0] == 'x' && b.data[1199] == 'y');
  /* Room already there costs nothing. */
  CHECK_EQ_INT(mp_buf_reserve(&b, 8 * BLOCK - 1200), 0);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 2);

  /* Released: malloc'ed memory goes to free, not into the pool. */
  mp_buf_release(&b);
  CHECK(b.data == NULL);
  CHECK_EQ_INT(b.len, 0);
  CHECK_EQ_INT(b.cap, 0);
  CHECK(b.pool == &pool);
  CHECK_EQ_INT(pool.nfree, 1);

  /* And the next use starts in the pool again. */
  CHECK_EQ_INT(mp_buf_append(&b, "again", 5), 0);
  CHECK(b.data == warm);
  CHECK_EQ_INT(b.cap, BLOCK);
  CHECK_EQ_INT(pool.nfree, 0);
  CHECK_EQ_INT(mp_malloc_count - mallocs, 2);
  CHECK_SPAN(b.data, b.len, "again");
  mp_buf_release(&b);
  CHECK_EQ_INT(pool.nfree, 1);
  CHECK_EQ_INT(pool.nused, 0);
  CHECK_EQ_INT(charge.c_bytes, 8 * BLOCK);

  mp_charge_switch(NULL);
  mp_pool_destroy(&pool);
}

/* A first reservation bigger than a block skips the pool. */
static void test_buf_too_big_for_the_pool(void) {
  mp_pool pool;
  mp_pool_init(&pool, 1024, 4);
  mp_charge charge = {0};
  mp_charge_switch(&charge);
  mp_buf b = {.pool = &pool};
  CHECK_EQ_INT(mp_buf_reserve(&b, 5000), 0);
  CHECK_EQ_INT(b.cap, 8192); /* from 4096, doubled until it fits */
  CHECK_EQ_INT(pool.nused, 0);
  CHECK_EQ_INT(charge.c_bytes, 8192);
  mp_buf_release(&b);
  CHECK_EQ_INT(pool.nfree, 0); /* freed, not cached */
  mp_charge_switch(NULL);
  mp_pool_destroy(&pool);
}

/* A buffer without a pool starts at 4 KiB and doubles. */
static void test_buf_without_a_pool(void) {
  mp_buf b = {0};
  mp_charge charge = {0};
  mp_charge_switch(&charge);
  CHECK_EQ_INT(mp_buf_append(&b, "", 0), 0);
  CHECK_EQ_INT(b.len, 0);
  CHECK_EQ_INT(mp_buf_append(&b, "abc", 3), 0);
  CHECK_EQ_INT(b.cap, 4096);
  CHECK_EQ_INT(charge.c_bytes, 4096);
  char big[10000];
  memset(big, 'z', sizeof big);
  CHECK_EQ_INT(mp_buf_append(&b, big, sizeof big), 0);
  CHECK_EQ_INT(b.len, 10003);
  CHECK_EQ_INT(b.cap, 16384);
  CHECK_EQ_INT(charge.c_bytes, 16384);
  CHECK_SPAN(b.data, 3, "abc");
  CHECK(b.data[10002] == 'z');
  /* A size that cannot be had fails and changes nothing. */
  char *data = b.data;
  CHECK_EQ_INT(mp_buf_reserve(&b, SIZE_MAX / 2 + 2), MP_NOMEM);
  CHECK(b.data == data);
  CHECK_EQ_INT(b.len, 10003);
  CHECK_EQ_INT(b.cap, 16384);
  mp_buf_release(&b);
  mp_buf_release(&b); /* twice is harmless */
  CHECK(b.data == NULL);
  mp_charge_switch(NULL);
}

/* A size whose sum with what is there wraps is refused, not taken for
 * room already there. */
static void test_buf_refuses_sizes_that_wrap(void) {
  mp_buf b = {0};
  CHECK_EQ_INT(mp_buf_append(&b, "abc", 3), 0);
  CHECK_EQ_INT(mp_buf_reserve(&b, SIZE_MAX - 1), MP_NOMEM);
  CHECK_EQ_INT(b.len, 3);
  mp_buf_release(&b);
}

int main(void) {
  test_pool_reuses_blocks();
  test_pool_cache_limit();
  test_pool_destroy_leaves_used_blocks();
  test_charge();
  test_buf_in_and_out_of_the_pool();
  test_buf_too_big_for_the_pool();
  test_buf_without_a_pool();
  test_buf_refuses_sizes_that_wrap();
  return check_report("test_pool");
}
