/*
 * The shared stores and worker slots: values of every type in and out,
 * short buffers, add, delete, TTLs, incr, LRU eviction, the buddy allocator
 * merging freed blocks, the size limits, keys, flush, several stores in one
 * segment that cannot evict each other's entries, stores that never evict
 * and stores that drop the oldest written, the slots, atomicity across
 * forked processes, and recovery (of one store) from a process that died
 * holding its lock.
 *
 * shared.c is included rather than linked so that the tests can reach the
 * segment's header: its lock, and the largest block size.
 */
#include "shared.c"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "check.h"

#define STORE (64 * 1024)

/* A segment holding the n stores specs describes, and nslots slots. */
static mp_shared *open_stores(const mp_store_spec *specs, unsigned n,
                              unsigned nslots) {
  mp_shared *s = NULL;
  int rc = mp_shared_create(specs, n, nslots, &s);
  CHECK_EQ_INT(rc, 0);
  if (rc != 0) {
    fprintf(stderr, "  mp_shared_create: %d\n", rc);
    exit(1);
  }
  return s;
}

/* A segment holding one LRU store of size bytes, and nslots slots. */
static mp_shared *open_store(size_t size, unsigned nslots) {
  mp_store_spec spec = {size, MP_EVICT_LRU};
  return open_stores(&spec, 1, nslots);
}

static size_t largest_block(const mp_store *s) {
  return block_size(s->hdr->layout.max_order);
}

static int set_str(mp_store *s, const char *key, const char *str, size_t len,
                   double ttl, int flags, bool *evicted) {
  mp_shared_value v = {.type = MP_SHARED_STRING, .str = str, .len = len};
  return mp_shared_set(s, key, strlen(key), &v, ttl, flags, evicted);
}

static int set_num(mp_store *s, const char *key, double n, double ttl) {
  mp_shared_value v = {.type = MP_SHARED_NUMBER, .number = n};
  return mp_shared_set(s, key, strlen(key), &v, ttl, 0, NULL);
}

static int get(mp_store *s, const char *key, mp_shared_value *v, char *buf,
               size_t cap) {
  return mp_shared_get(s, key, strlen(key), v, buf, cap);
}

static bool present(mp_store *s, const char *key) {
  mp_shared_value v;
  char buf[4096];
  return get(s, key, &v, buf, sizeof buf) == 0;
}

/* Spins, in 1 ms naps, until ms milliseconds of the store's clock pass. */
static void wait_ms(uint64_t ms) {
  uint64_t start = mp_shared_now_ms();
  struct timespec nap = {0, 1000000};
  while (mp_shared_now_ms() - start < ms) nanosleep(&nap, NULL);
}

static void test_create_attach_round_trip(void) {
  mp_shared *s = NULL, *a = NULL;
  mp_store_spec small = {MP_SHARED_MIN_SIZE - 1, MP_EVICT_LRU};
  mp_store_spec odd = {STORE, 7};
  CHECK_EQ_INT(mp_shared_create(&small, 1, 4, &s), MP_INVALID);
  CHECK_EQ_INT(mp_shared_create(&odd, 1, 4, &s), MP_INVALID);
  CHECK_EQ_INT(mp_shared_create(&odd, 0, 4, &s), MP_INVALID);
  CHECK(s == NULL);
  s = open_store(STORE, 4);
  CHECK_EQ_INT(mp_shared_nstores(s), 1);
  CHECK(mp_shared_store(s, 1) == NULL);
  CHECK_EQ_INT(set_str(mp_shared_store(s, 0), "greeting", "hello", 5, 0, 0,
                       NULL), 0);

  CHECK_EQ_INT(mp_shared_attach(dup(mp_shared_fd(s)), &a), 0);
  if (a == NULL) goto out;
  CHECK_EQ_INT(mp_shared_nslots(a), 4);
  CHECK_EQ_INT(mp_shared_nstores(a), 1);
  mp_shared_value v;
  char buf[16];
  CHECK_EQ_INT(get(mp_shared_store(a, 0), "greeting", &v, buf, sizeof buf), 0);
  CHECK_SPAN(v.str, v.len, "hello");
  CHECK_EQ_INT(set_num(mp_shared_store(a, 0), "from-attached", 7, 0), 0);
  CHECK_EQ_INT(get(mp_shared_store(s, 0), "from-attached", &v, buf, sizeof buf),
               0);
  CHECK(v.type == MP_SHARED_NUMBER && v.number == 7);

  /* A descriptor that does not hold a segment is refused, and closed. */
  int fd = memfd_create("not-a-segment", MFD_CLOEXEC);
  CHECK(fd >= 0 && ftruncate(fd, STORE) == 0);
  mp_shared *bad = NULL;
  CHECK_EQ_INT(mp_shared_attach(fd, &bad), MP_INVALID);
  CHECK(bad == NULL);
  CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);

  /* A segment with a sound layout but another magic number is refused. */
  s->hdr->magic ^= 1;
  CHECK_EQ_INT(mp_shared_attach(dup(mp_shared_fd(s)), &bad), MP_INVALID);
  s->hdr->magic ^= 1;
  /* So is one whose store layout does not follow from its size. */
  s->stores[0].hdr->layout.nbuckets *= 2;
  CHECK_EQ_INT(mp_shared_attach(dup(mp_shared_fd(s)), &bad), MP_INVALID);
  s->stores[0].hdr->layout.nbuckets /= 2;

out:
  mp_shared_close(a);
  mp_shared_close(s);
}

static void test_types(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  mp_shared_value v;
  char buf[64];

  CHECK_EQ_INT(set_str(s, "nul", "a\0b", 3, 0, 0, NULL), 0);
  CHECK_EQ_INT(get(s, "nul", &v, buf, sizeof buf), 0);
  CHECK_EQ_INT(v.type, MP_SHARED_STRING);
  CHECK_EQ_INT(v.len, 3);
  CHECK(v.str == buf && memcmp(v.str, "a\0b", 3) == 0);

  CHECK_EQ_INT(set_str(s, "empty", "", 0, 0, 0, NULL), 0);
  CHECK_EQ_INT(get(s, "empty", &v, buf, sizeof buf), 0);
  CHECK_EQ_INT(v.type, MP_SHARED_STRING);
  CHECK_EQ_INT(v.len, 0);
  CHECK(v.str != NULL);

  CHECK_EQ_INT(set_num(s, "neg", -2.5, 0), 0);
  CHECK_EQ_INT(get(s, "neg", &v, buf, sizeof buf), 0);
  CHECK(v.type == MP_SHARED_NUMBER && v.number == -2.5);
  CHECK_EQ_INT(set_num(s, "frac", 0.125, 0), 0);
  CHECK_EQ_INT(get(s, "frac", &v, buf, sizeof buf), 0);
  CHECK(v.type == MP_SHARED_NUMBER && v.number == 0.125);
  CHECK_EQ_INT(set_num(s, "frac", 0.25, 0), 0); /* rewritten in place */
  CHECK_EQ_INT(get(s, "frac", &v, buf, sizeof buf), 0);
  CHECK(v.type == MP_SHARED_NUMBER && v.number == 0.25);

  mp_shared_value t = {.type = MP_SHARED_BOOLEAN, .number = 1};
  mp_shared_value f = {.type = MP_SHARED_BOOLEAN, .number = 0};
  CHECK_EQ_INT(mp_shared_set(s, "yes", 3, &t, 0, 0, NULL), 0);
  CHECK_EQ_INT(mp_shared_set(s, "no", 2, &f, 0, 0, NULL), 0);
  CHECK_EQ_INT(get(s, "yes", &v, buf, sizeof buf), 0);
  CHECK(v.type == MP_SHARED_BOOLEAN && v.number == 1);
  CHECK_EQ_INT(get(s, "no", &v, buf, sizeof buf), 0);
  CHECK(v.type == MP_SHARED_BOOLEAN && v.number == 0);

  /* Replacing with another type and size class leaves one entry. */
  CHECK_EQ_INT(set_str(s, "neg", "now a string of some length", 27, 0, 0,
                       NULL), 0);
  CHECK_EQ_INT(get(s, "neg", &v, buf, sizeof buf), 0);
  CHECK_SPAN(v.str, v.len, "now a string of some length");
  size_t cap, used;
  unsigned entries;
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK_EQ_INT(entries, 6);
  mp_shared_close(seg);
}

static void test_invalid_arguments(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  static char long_key[MP_SHARED_KEY_MAX + 1];
  memset(long_key, 'k', sizeof long_key);
  mp_shared_value v = {.type = MP_SHARED_NUMBER, .number = 1};
  mp_shared_value nil = {.type = MP_SHARED_NIL};
  CHECK_EQ_INT(mp_shared_set(s, "", 0, &v, 0, 0, NULL), MP_INVALID);
  CHECK_EQ_INT(mp_shared_set(s, long_key, sizeof long_key, &v, 0, 0, NULL),
               MP_INVALID);
  CHECK_EQ_INT(mp_shared_set(s, "k", 1, &v, -1, 0, NULL), MP_INVALID);
  CHECK_EQ_INT(mp_shared_set(s, "k", 1, &nil, 0, 0, NULL), MP_INVALID);
  CHECK(!present(s, "k"));
  mp_shared_close(seg);
}

static void test_short_buffer(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  char value[100], small[10], big[100];
  memset(value, 'x', sizeof value);
  CHECK_EQ_INT(set_str(s, "long", value, sizeof value, 0, 0, NULL), 0);
  mp_shared_value v;
  CHECK_EQ_INT(get(s, "long", &v, small, sizeof small), MP_AGAIN);
  CHECK_EQ_INT(v.len, 100);
  CHECK_EQ_INT(get(s, "long", &v, big, sizeof big), 0);
  CHECK(v.len == 100 && memcmp(v.str, value, 100) == 0);
  mp_shared_close(seg);
}

static void test_add(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  mp_shared_value v;
  char buf[16];
  CHECK_EQ_INT(set_str(s, "k", "first", 5, 0, MP_SHARED_ADD, NULL), 0);
  CHECK_EQ_INT(set_str(s, "k", "second", 6, 0, MP_SHARED_ADD, NULL),
               MP_DECLINED);
  CHECK_EQ_INT(get(s, "k", &v, buf, sizeof buf), 0);
  CHECK_SPAN(v.str, v.len, "first");
  mp_shared_close(seg);
}

static void test_delete(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  CHECK_EQ_INT(set_num(s, "k", 1, 0), 0);
  CHECK_EQ_INT(mp_shared_delete(s, "k", 1), 0);
  CHECK(!present(s, "k"));
  CHECK_EQ_INT(mp_shared_delete(s, "k", 1), MP_NOT_FOUND);
  size_t cap, used;
  unsigned entries;
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK_EQ_INT(entries, 0);
  CHECK_EQ_INT(used, 0);
  mp_shared_close(seg);
}

static void test_ttl(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  double ttl = -1;
  CHECK_EQ_INT(set_num(s, "short", 1, 0.05), 0);
  CHECK_EQ_INT(set_num(s, "forever", 1, 0), 0);
  CHECK_EQ_INT(mp_shared_ttl(s, "short", 5, &ttl), 0);
  CHECK(ttl > 0 && ttl <= 0.05);
  CHECK_EQ_INT(mp_shared_ttl(s, "forever", 7, &ttl), 0);
  CHECK(ttl == 0);

  wait_ms(60);
  CHECK(!present(s, "short"));
  CHECK_EQ_INT(mp_shared_ttl(s, "short", 5, &ttl), MP_NOT_FOUND);
  CHECK(present(s, "forever"));
  /* An expired key can be added again. */
  mp_shared_value v = {.type = MP_SHARED_NUMBER, .number = 2};
  CHECK_EQ_INT(set_num(s, "again", 1, 0.001), 0);
  wait_ms(2);
  CHECK_EQ_INT(mp_shared_set(s, "again", 5, &v, 0, MP_SHARED_ADD, NULL), 0);
  mp_shared_close(seg);
}

static void test_incr(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  double r = 0, ttl = 0;
  CHECK_EQ_INT(mp_shared_incr(s, "n", 1, 5, 10, 0, &r, NULL), 0);
  CHECK(r == 15);
  CHECK_EQ_INT(mp_shared_incr(s, "n", 1, -0.5, 10, 0, &r, NULL), 0);
  CHECK(r == 14.5);
  mp_shared_value v;
  char buf[8];
  CHECK_EQ_INT(get(s, "n", &v, buf, sizeof buf), 0);
  CHECK(v.type == MP_SHARED_NUMBER && v.number == 14.5);

  /* A new key gets init_ttl; an existing one keeps its expiry. */
  CHECK_EQ_INT(mp_shared_incr(s, "t", 1, 1, 0, 30, &r, NULL), 0);
  CHECK_EQ_INT(mp_shared_ttl(s, "t", 1, &ttl), 0);
  CHECK(ttl > 29 && ttl <= 30);
  CHECK_EQ_INT(mp_shared_incr(s, "n", 1, 1, 0, 30, &r, NULL), 0);
  CHECK_EQ_INT(mp_shared_ttl(s, "n", 1, &ttl), 0);
  CHECK(ttl == 0);

  CHECK_EQ_INT(set_str(s, "str", "abc", 3, 0, 0, NULL), 0);
  CHECK_EQ_INT(mp_shared_incr(s, "str", 3, 1, 0, 0, &r, NULL), MP_INVALID);
  CHECK_EQ_INT(get(s, "str", &v, buf, sizeof buf), 0);
  CHECK_SPAN(v.str, v.len, "abc");
  mp_shared_close(seg);
}

static void test_eviction_is_lru(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  char value[900], key[16];
  memset(value, 'v', sizeof value);
  bool evicted = false;
  int i, first_evicting = -1, last = -1;
  for (i = 0; i < 1000; i++) {
    snprintf(key, sizeof key, "key%03d", i);
    CHECK_EQ_INT(set_str(s, key, value, sizeof value, 0, 0, &evicted), 0);
    /* Reading key000 makes it recent: an LRU keeps it, a FIFO would not. */
    if (i == 9) CHECK(present(s, "key000"));
    if (evicted && first_evicting < 0) first_evicting = i;
    if (first_evicting >= 0 && i == first_evicting + 4) {
      last = i;
      break;
    }
  }
  CHECK(first_evicting > 10);
  CHECK(last > 0);
  CHECK(present(s, "key000"));
  for (i = 1; i <= 5; i++) {
    snprintf(key, sizeof key, "key%03d", i);
    CHECK(!present(s, key));
  }
  snprintf(key, sizeof key, "key%03d", 6);
  CHECK(present(s, key));
  snprintf(key, sizeof key, "key%03d", last);
  CHECK(present(s, key));
  mp_shared_close(seg);
}

static void test_expired_are_not_evictions(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  char value[900], key[16];
  memset(value, 'v', sizeof value);
  bool evicted = false;
  int n;
  for (n = 0; n < 1000 && !evicted; n++) {
    snprintf(key, sizeof key, "old%03d", n);
    CHECK_EQ_INT(set_str(s, key, value, sizeof value, 0.05, 0, &evicted), 0);
  }
  CHECK(evicted);
  wait_ms(60);
  /* The store holds n - 1 such entries. Each set frees expired entries
   * from the tail before it would evict, so filling it again with new ones
   * evicts nothing. */
  int evictions = 0;
  for (int i = 0; i < n - 1; i++) {
    snprintf(key, sizeof key, "new%03d", i);
    CHECK_EQ_INT(set_str(s, key, value, sizeof value, 0, 0, &evicted), 0);
    evictions += evicted;
  }
  CHECK_EQ_INT(evictions, 0);
  mp_shared_close(seg);
}

static void test_buddy_coalescing(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  char key[16];
  size_t cap, used;
  unsigned entries;
  int evictions = 0;
  for (int i = 0; i < 900; i++) {
    snprintf(key, sizeof key, "s%d", i);
    mp_shared_value v = {.type = MP_SHARED_NUMBER, .number = i};
    bool evicted;
    CHECK_EQ_INT(mp_shared_set(s, key, strlen(key), &v, 0, 0, &evicted), 0);
    evictions += evicted;
  }
  CHECK_EQ_INT(evictions, 0);
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK_EQ_INT(entries, 900);
  CHECK_EQ_INT(used, 900 * 64);
  /* The small blocks took more than the arena's tail: the largest block
   * was split. */
  CHECK(used > cap - largest_block(s));
  for (int i = 0; i < 900; i++) {
    snprintf(key, sizeof key, "s%d", i);
    CHECK_EQ_INT(mp_shared_delete(s, key, strlen(key)), 0);
  }
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK_EQ_INT(used, 0);

  size_t len = largest_block(s) - sizeof(shm_entry) - 3;
  char *big = malloc(len);
  memset(big, 'b', len);
  bool evicted = true;
  CHECK_EQ_INT(set_str(s, "big", big, len, 0, 0, &evicted), 0);
  CHECK(!evicted);
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK_EQ_INT(used, largest_block(s));
  free(big);
  mp_shared_close(seg);
}

static void test_too_large(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  CHECK_EQ_INT(set_num(s, "keep", 1, 0), 0);
  size_t len = largest_block(s) - sizeof(shm_entry) - 3 + 1;
  char *big = malloc(len);
  memset(big, 'b', len);
  bool evicted = true;
  CHECK_EQ_INT(set_str(s, "big", big, len, 0, 0, &evicted), MP_NOMEM);
  CHECK(!evicted);
  CHECK(present(s, "keep"));
  CHECK_EQ_INT(set_str(s, "big", big, len - 1, 0, 0, &evicted), 0);
  free(big);
  mp_shared_close(seg);
}

static void test_keys(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  const char *names[] = {"alpha", "b", "gamma", "delta", "epsilon"};
  bool seen[5] = {false};
  for (int i = 0; i < 5; i++) CHECK_EQ_INT(set_num(s, names[i], i, 0), 0);
  CHECK_EQ_INT(set_num(s, "dead", 1, 0.001), 0);
  wait_ms(2);

  char buf[256];
  size_t used = 0;
  unsigned count = 0;
  CHECK_EQ_INT(mp_shared_keys(s, 0, buf, sizeof buf, &used, &count), 0);
  CHECK_EQ_INT(count, 5);
  CHECK_EQ_INT(used, 5 * 4 + 5 + 1 + 5 + 5 + 7);
  for (size_t p = 0; p + 4 <= used;) {
    uint32_t len;
    memcpy(&len, buf + p, 4);
    int found = 0;
    for (int i = 0; i < 5; i++) {
      if (strlen(names[i]) == len && memcmp(buf + p + 4, names[i], len) == 0) {
        CHECK(!seen[i]);
        seen[i] = true;
        found = 1;
      }
    }
    CHECK(found);
    p += 4 + len;
  }
  for (int i = 0; i < 5; i++) CHECK(seen[i]);

  CHECK_EQ_INT(mp_shared_keys(s, 2, buf, sizeof buf, &used, &count), 0);
  CHECK_EQ_INT(count, 2);

  size_t need = 0;
  CHECK_EQ_INT(mp_shared_keys(s, 0, buf, 10, &need, &count), MP_AGAIN);
  CHECK_EQ_INT(need, 5 * 4 + 5 + 1 + 5 + 5 + 7);
  CHECK_EQ_INT(mp_shared_keys(s, 0, buf, need, &used, &count), 0);
  CHECK_EQ_INT(count, 5);
  mp_shared_close(seg);
}

static void test_flush(void) {
  mp_shared *seg = open_store(STORE, 1);
  mp_store *s = mp_shared_store(seg, 0);
  for (int i = 0; i < 10; i++) {
    char key[8];
    snprintf(key, sizeof key, "f%d", i);
    CHECK_EQ_INT(set_num(s, key, i, 0), 0);
  }
  mp_shared_flush(s);
  size_t cap, used;
  unsigned entries;
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK_EQ_INT(entries, 0);
  CHECK_EQ_INT(used, 0);
  CHECK(!present(s, "f3"));
  CHECK_EQ_INT(set_num(s, "f3", 3, 0), 0);
  CHECK(present(s, "f3"));
  mp_shared_close(seg);
}

/* Fills s with 900-byte values under prefix0, prefix1, ... until a set
 * evicts or fails. Returns how many sets succeeded without either. */
static int fill_store(mp_store *s, const char *prefix, int *last_rc,
                      bool *evicted) {
  char value[900], key[32];
  memset(value, 'v', sizeof value);
  for (int i = 0; i < 10000; i++) {
    snprintf(key, sizeof key, "%s%d", prefix, i);
    *last_rc = set_str(s, key, value, sizeof value, 0, 0, evicted);
    if (*last_rc != 0 || *evicted) return i;
  }
  return -1;
}

static void test_stores_are_independent(void) {
  mp_store_spec specs[3] = {{STORE, MP_EVICT_LRU},
                            {STORE, MP_EVICT_NEVER},
                            {2 * STORE, MP_EVICT_FIFO}};
  mp_shared *seg = open_stores(specs, 3, 2), *a = NULL;
  mp_store *lru = mp_shared_store(seg, 0), *never = mp_shared_store(seg, 1),
           *fifo = mp_shared_store(seg, 2);
  CHECK_EQ_INT(mp_shared_nstores(seg), 3);
  CHECK(lru != never && never != fifo);
  mp_shared_value v;
  char buf[16];

  /* One key, three values: each store has its own. */
  CHECK_EQ_INT(set_num(lru, "k", 1, 0), 0);
  CHECK_EQ_INT(set_num(never, "k", 2, 0), 0);
  CHECK_EQ_INT(set_num(fifo, "k", 3, 0), 0);
  CHECK_EQ_INT(get(never, "k", &v, buf, sizeof buf), 0);
  CHECK(v.number == 2);

  /* Filling one store to eviction leaves the others whole. */
  int rc;
  bool evicted = false;
  CHECK(fill_store(lru, "x", &rc, &evicted) > 10);
  CHECK(evicted);
  CHECK(fill_store(fifo, "x", &rc, &evicted) > 10);
  CHECK(evicted);
  CHECK(!present(lru, "k"));
  CHECK(!present(fifo, "k"));
  CHECK_EQ_INT(get(never, "k", &v, buf, sizeof buf), 0);
  CHECK(v.number == 2);
  size_t cap[3], used[3];
  unsigned entries[3];
  for (unsigned i = 0; i < 3; i++)
    mp_shared_usage(mp_shared_store(seg, i), &cap[i], &used[i], &entries[i]);
  CHECK_EQ_INT(entries[1], 1);
  CHECK(cap[2] > cap[0]);

  /* A worker sees the same stores in the same order. */
  CHECK_EQ_INT(mp_shared_attach(dup(mp_shared_fd(seg)), &a), 0);
  if (a != NULL) {
    CHECK_EQ_INT(mp_shared_nstores(a), 3);
    CHECK_EQ_INT(get(mp_shared_store(a, 1), "k", &v, buf, sizeof buf), 0);
    CHECK(v.number == 2);
    CHECK(mp_shared_slot(a, 2) != NULL);
  }
  mp_shared_close(a);
  mp_shared_close(seg);
}

static void test_never_evicts(void) {
  mp_store_spec spec = {STORE, MP_EVICT_NEVER};
  mp_shared *seg = open_stores(&spec, 1, 1);
  mp_store *s = mp_shared_store(seg, 0);
  char value[900], bigger[2000], key[32];
  memset(value, 'v', sizeof value);
  memset(bigger, 'B', sizeof bigger);
  int rc;
  bool evicted = false;
  int n = fill_store(s, "m", &rc, &evicted);
  CHECK(n > 10);
  CHECK_EQ_INT(rc, MP_NOMEM);
  CHECK(!evicted);
  /* Nothing stored was given up for the write that failed. */
  for (int i = 0; i < n; i++) {
    snprintf(key, sizeof key, "m%d", i);
    CHECK(present(s, key));
  }
  size_t cap, used;
  unsigned entries;
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK_EQ_INT(entries, n);

  /* Full: a value of the same size class is rewritten in place; a larger
   * one, or a new counter, fails and leaves the old value. */
  value[0] = 'r';
  CHECK_EQ_INT(set_str(s, "m0", value, sizeof value, 0, 0, &evicted), 0);
  CHECK_EQ_INT(set_str(s, "m1", bigger, sizeof bigger, 0, 0, &evicted),
               MP_NOMEM);
  mp_shared_value v;
  char buf[1024];
  CHECK_EQ_INT(get(s, "m1", &v, buf, sizeof buf), 0);
  CHECK(v.len == sizeof value && v.str[0] == 'v');
  CHECK_EQ_INT(get(s, "m0", &v, buf, sizeof buf), 0);
  CHECK(v.len == sizeof value && v.str[0] == 'r');
  /* Smaller entries still fit in what is left, until nothing is. */
  double r;
  int small;
  for (small = 0; small < 1000; small++) {
    snprintf(key, sizeof key, "n%d", small);
    if (set_num(s, key, small, 0) != 0) break;
  }
  CHECK(small < 1000);
  CHECK_EQ_INT(mp_shared_incr(s, "counter", 7, 1, 0, 0, &r, &evicted),
               MP_NOMEM);
  CHECK(!evicted);
  CHECK(present(s, "n0"));

  /* Room made by a delete is there for the next write. */
  CHECK_EQ_INT(mp_shared_delete(s, "m2", 2), 0);
  CHECK_EQ_INT(mp_shared_incr(s, "counter", 7, 1, 0, 0, &r, &evicted), 0);
  CHECK(r == 1 && !evicted);
  mp_shared_close(seg);
}

static void test_fifo_drops_oldest_written(void) {
  mp_store_spec spec = {STORE, MP_EVICT_FIFO};
  mp_shared *seg = open_stores(&spec, 1, 1);
  mp_store *s = mp_shared_store(seg, 0);
  char value[900], key[16];
  memset(value, 'f', sizeof value);
  bool evicted = false;
  int i, first_evicting = -1;
  for (i = 0; i < 1000; i++) {
    snprintf(key, sizeof key, "e%03d", i);
    CHECK_EQ_INT(set_str(s, key, value, sizeof value, 0, 0, &evicted), 0);
    /* Reading e000 again and again does not keep it, as it would in an
     * LRU store: only writes count. */
    CHECK(present(s, "e000") == (first_evicting < 0 && !evicted));
    if (evicted) {
      first_evicting = i;
      break;
    }
  }
  CHECK(first_evicting > 10);
  CHECK(!present(s, "e000"));
  snprintf(key, sizeof key, "e%03d", first_evicting);
  CHECK(present(s, key));
  CHECK(present(s, "e002"));
  mp_shared_close(seg);
}

static void test_worker_slots(void) {
  mp_shared *s = open_store(STORE, 3), *a = NULL;
  CHECK_EQ_INT(mp_shared_nslots(s), 3);
  CHECK(mp_shared_slot(s, 0) == NULL);
  CHECK(mp_shared_slot(s, 4) == NULL);
  for (unsigned id = 1; id <= 3; id++) {
    mp_worker_slot *w = mp_shared_slot(s, id);
    CHECK(w != NULL);
    if (w == NULL) continue;
    CHECK_EQ_INT(w->route, -1);
    CHECK_EQ_INT(w->pid, 0);
    CHECK_EQ_INT(w->busy_since_ms, 0);
  }
  CHECK(mp_shared_slot(s, 2) == mp_shared_slot(s, 1) + 1);
  mp_shared_slot(s, 3)->busy_since_ms = 42;
  CHECK_EQ_INT(mp_shared_attach(dup(mp_shared_fd(s)), &a), 0);
  if (a != NULL) CHECK_EQ_INT(mp_shared_slot(a, 3)->busy_since_ms, 42);
  mp_shared_close(a);
  mp_shared_close(s);
}

static void test_concurrent_incr(void) {
  mp_shared *seg = open_store(STORE, 4);
  mp_store *s = mp_shared_store(seg, 0);
  pid_t pids[4];
  for (int i = 0; i < 4; i++) {
    pids[i] = fork();
    CHECK(pids[i] >= 0);
    if (pids[i] == 0) {
      int bad = 0;
      for (int k = 0; k < 10000; k++) {
        double r;
        if (mp_shared_incr(s, "ctr", 3, 1, 0, 0, &r, NULL) != 0) bad = 1;
      }
      _exit(bad);
    }
  }
  for (int i = 0; i < 4; i++) {
    int status = -1;
    if (pids[i] > 0) CHECK_EQ_INT(waitpid(pids[i], &status, 0), pids[i]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  mp_shared_value v;
  char buf[8];
  CHECK_EQ_INT(get(s, "ctr", &v, buf, sizeof buf), 0);
  CHECK(v.number == 40000);
  if (v.number != 40000) fprintf(stderr, "  ctr = %.0f\n", v.number);
  mp_shared_close(seg);
}

static void test_robust_lock(void) {
  mp_store_spec specs[2] = {{STORE, MP_EVICT_LRU}, {STORE, MP_EVICT_NEVER}};
  mp_shared *seg = open_stores(specs, 2, 1);
  mp_store *s = mp_shared_store(seg, 0), *other = mp_shared_store(seg, 1);
  CHECK_EQ_INT(set_num(s, "before", 1, 0), 0);
  CHECK_EQ_INT(set_num(other, "before", 1, 0), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    pthread_mutex_lock(&s->hdr->lock);
    _exit(0);
  }
  int status = -1;
  CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  /* Without recovery the next lock never returns: the alarm's default
   * action then ends the test run as a failure instead of hanging it. */
  alarm(10);
  CHECK(!present(s, "before"));
  CHECK_EQ_INT(set_num(s, "after", 2, 0), 0);
  CHECK(present(s, "after"));
  alarm(0);
  size_t cap, used;
  unsigned entries;
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK_EQ_INT(entries, 1);
  CHECK_EQ_INT(used, 64);
  /* Only the store whose lock was held is cleared. */
  CHECK(present(other, "before"));
  mp_shared_close(seg);
}

static void test_large_segment(void) {
  mp_shared *seg = NULL;
  mp_store_spec huge = {SHM_MAX_SIZE + 1, MP_EVICT_LRU};
  CHECK_EQ_INT(mp_shared_create(&huge, 1, 1, &seg), MP_INVALID);
  /* One store of 2 GiB, the most one can be: the segment, a little more,
   * may be larger. */
  seg = open_store(SHM_MAX_SIZE, 64);
  mp_store *s = mp_shared_store(seg, 0);
  size_t cap, used;
  unsigned entries;
  mp_shared_usage(s, &cap, &used, &entries);
  CHECK(cap > SHM_MAX_SIZE / 10 * 9);
  CHECK_EQ_INT(largest_block(s), 1024 * 1024);

  size_t len = largest_block(s) - sizeof(shm_entry) - 3;
  char *big = malloc(len);
  memset(big, 'z', len);
  bool evicted = true;
  CHECK_EQ_INT(set_str(s, "big", big, len, 0, 0, &evicted), 0);
  CHECK(!evicted);
  CHECK_EQ_INT(set_num(s, "n", 5, 0), 0);
  mp_shared_value v;
  char *out = malloc(len);
  CHECK_EQ_INT(get(s, "big", &v, out, len), 0);
  CHECK(v.len == len && memcmp(out, big, len) == 0);
  free(out);
  free(big);
  mp_shared_close(seg);
}

int main(void) {
  test_create_attach_round_trip();
  test_types();
  test_invalid_arguments();
  test_short_buffer();
  test_add();
  test_delete();
  test_ttl();
  test_incr();
  test_eviction_is_lru();
  test_expired_are_not_evictions();
  test_buddy_coalescing();
  test_too_large();
  test_keys();
  test_flush();
  test_stores_are_independent();
  test_never_evicts();
  test_fifo_drops_oldest_written();
  test_worker_slots();
  test_concurrent_incr();
  test_robust_lock();
  test_large_segment();
  return check_report("shared");
}
