/*
 * Shared memory: the key-value stores behind moonport.shared and the mock
 * server's state and journal, and the workers' heartbeat slots, in one
 * segment the master creates before any worker starts and every worker
 * maps. It outlives any one worker, so a crash or a reload loses nothing
 * that was stored.
 *
 * The segment holds up to MP_SHARED_MAX_STORES stores, each with its own
 * size, lock, hash table, LRU list and eviction policy: what one store
 * holds can never push out what another holds. A store maps string keys to
 * strings, numbers or booleans, each with an optional time to live. Its
 * size is fixed at creation; when an entry does not fit, the policy
 * decides: MP_EVICT_LRU evicts the least recently used entries until it
 * does, MP_EVICT_FIFO the oldest written (reads do not reorder), and
 * MP_EVICT_NEVER refuses the write and keeps what is there. Every
 * operation holds its store's process-shared lock only for a hash lookup,
 * a copy of the value and any evictions, never blocks on anything else
 * while holding it, and never allocates from the heap, so it is atomic
 * across workers and safe on the request path.
 *
 * A worker slot is written by its worker only (plain stores of aligned
 * words) and read by the master, which uses it to find a worker stuck in a
 * handler. Beside the slots, each worker has a block of figures
 * (metrics.h) that any worker reads to answer the stats and metrics
 * endpoints for all of them.
 */
#ifndef MP_SHARED_H
#define MP_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mp_shared mp_shared; /* the segment */
typedef struct mp_store mp_store;   /* one store in it */

/* One per worker id, a cache line each so workers do not share lines. */
typedef struct mp_worker_slot {
  volatile int32_t pid;
  volatile int32_t route;          /* index of the route running, or -1 */
  volatile uint64_t busy_since_ms; /* mp_shared_now_ms() when the handler
                                    * was entered; 0 while not in one */
  volatile uint64_t generation;    /* the code version `route` is of */
  volatile int32_t conns;          /* connections open (for the master's log) */
  char pad[36];
} mp_worker_slot;

/* mp_worker_slot.route while the worker loads the app (at startup or on
 * a reload): the master holds it to --load-timeout. */
#define MP_SLOT_LOADING (-2)
/* mp_worker_slot.route while a timer's function (or a light thread of
 * one) runs: held to --handler-timeout like a handler. */
#define MP_SLOT_TIMER (-3)

/* What the last reloads did, written by the master only and read by the
 * workers for the stats endpoint. Readers take no lock: a read racing a
 * write may see a message half replaced, which the next read corrects. */
typedef struct mp_reload_status {
  volatile uint64_t generation; /* code versions loaded: 1 at startup */
  volatile uint64_t reloads;    /* successful reloads */
  volatile uint64_t failures;   /* reloads refused: the new code failed */
  volatile int64_t last_at;     /* time(NULL) of the last attempt, or 0 */
  volatile int32_t last_ok;     /* 1 when the last attempt loaded */
  char last_error[492];         /* "file:line: message", or "" */
} mp_reload_status;

enum {
  MP_SHARED_NIL = 0,
  MP_SHARED_STRING = 1,
  MP_SHARED_NUMBER = 2,
  MP_SHARED_BOOLEAN = 3
};

/* A value going in or coming out. For STRING, str/len; for NUMBER,
 * number; for BOOLEAN, number is 0 or 1. */
typedef struct mp_shared_value {
  int type;
  double number;
  const char *str;
  size_t len;
} mp_shared_value;

/* set's flags. */
enum {
  MP_SHARED_ADD = 1 /* only when the key is absent (or expired) */
};

/* The longest key, in bytes. */
#define MP_SHARED_KEY_MAX 65535

/* The smallest store; the largest is 2 GiB. */
#define MP_SHARED_MIN_SIZE (64 * 1024)

/* The most stores one segment holds. */
#define MP_SHARED_MAX_STORES 4

/* What a store does when an entry does not fit. */
enum {
  MP_EVICT_LRU = 0,  /* evict the least recently used (get and set use) */
  MP_EVICT_FIFO = 1, /* evict the oldest written; get does not reorder */
  MP_EVICT_NEVER = 2 /* evict nothing: the write fails with MP_NOMEM */
};

/* One store of a segment: its bytes (header, hash table and entries,
 * MP_SHARED_MIN_SIZE to 2 GiB) and its MP_EVICT_* policy. */
typedef struct mp_store_spec {
  size_t size;
  int policy;
} mp_store_spec;

/* Creates the segment (a memfd, so it can be handed to exec'd workers)
 * with `nstores` stores as `stores` describes (1 to MP_SHARED_MAX_STORES)
 * and `nslots` worker slots, and maps it. Returns 0, MP_INVALID when a
 * store's size is out of range or its policy unknown, MP_NOMEM, or a
 * negative errno. */
int mp_shared_create(const mp_store_spec *stores, unsigned nstores,
                     unsigned nslots, mp_shared **out);

/* Maps a segment made by mp_shared_create from its descriptor (inherited
 * by a worker). Returns 0, MP_INVALID when fd does not hold one, MP_NOMEM,
 * or a negative errno. Takes ownership of fd: it is closed on failure. */
int mp_shared_attach(int fd, mp_shared **out);

/* The segment's descriptor (to pass to a worker). */
int mp_shared_fd(const mp_shared *s);

/* Unmaps and closes. NULL is allowed. */
void mp_shared_close(mp_shared *s);

/* Store i (0-based, in the order given to mp_shared_create), or NULL when
 * i is out of range. Valid as long as the segment is mapped. */
mp_store *mp_shared_store(mp_shared *s, unsigned i);
unsigned mp_shared_nstores(const mp_shared *s);

/* The reload status in the segment. */
mp_reload_status *mp_shared_reload(mp_shared *s);

/* Worker slot `id` (1-based), or NULL when id is out of range. */
mp_worker_slot *mp_shared_slot(mp_shared *s, unsigned id);
unsigned mp_shared_nslots(const mp_shared *s);

/* Worker `id`'s figures (metrics.h; 1-based), or NULL when id is out of
 * range. Written by that worker only, read by any process. */
struct mp_worker_metrics *mp_shared_metrics(mp_shared *s, unsigned id);

/* The clock TTLs and heartbeats use: CLOCK_MONOTONIC in milliseconds, the
 * same in every process. */
uint64_t mp_shared_now_ms(void);

/* Looks key up. Returns 0 with *out filled (a string is copied into buf
 * and out->str points there), MP_NOT_FOUND when absent or expired (or the
 * key is one set would refuse), or MP_AGAIN when a string value is longer
 * than cap (out->len says how long: grow buf and call again). A found
 * entry becomes the most recently used, in an MP_EVICT_LRU store. */
int mp_shared_get(mp_store *s, const char *key, size_t klen,
                  mp_shared_value *out, char *buf, size_t cap);

/* Stores v under key, replacing what was there, expiring after ttl seconds
 * (0: never). With MP_SHARED_ADD, a key present and not expired is left
 * alone and MP_DECLINED returned. *evicted (evicted may be NULL) is set
 * true when other entries had to be evicted to make room; expired entries
 * freed on the way do not count. Returns 0, MP_DECLINED, MP_INVALID (empty
 * or too long key, negative ttl, type NIL), or MP_NOMEM when the entry is
 * larger than the store's largest block (1 MiB at most) and so could never
 * fit (nothing is evicted then), or, in an MP_EVICT_NEVER store, when no
 * block is free: the store is left as it was, the old value included (it
 * needs room for the new entry beside the old one). */
int mp_shared_set(mp_store *s, const char *key, size_t klen,
                  const mp_shared_value *v, double ttl, int flags,
                  bool *evicted);

/* Adds `by` to the number under key and stores the sum in *result. An
 * absent or expired key starts from `init` and gets `init_ttl` (seconds,
 * 0: never); an existing key keeps its expiry. Returns 0, MP_INVALID when
 * the value there is not a number (or the key is bad), or MP_NOMEM. */
int mp_shared_incr(mp_store *s, const char *key, size_t klen, double by,
                   double init, double init_ttl, double *result,
                   bool *evicted);

/* Removes key. Returns 0, or MP_NOT_FOUND when it was not there. */
int mp_shared_delete(mp_store *s, const char *key, size_t klen);

/* Seconds until key expires in *ttl (0 when it never does). Returns 0 or
 * MP_NOT_FOUND. Does not change the LRU order. */
int mp_shared_ttl(mp_store *s, const char *key, size_t klen, double *ttl);

/* Writes up to max keys (0: all) that have not expired into buf, each as a
 * 4-byte length (host order) followed by its bytes; *count says how many
 * and *used how many bytes. Returns 0, or MP_AGAIN when cap is short
 * (*used then says how much is needed). Order is unspecified. */
int mp_shared_keys(mp_store *s, unsigned max, char *buf, size_t cap,
                   size_t *used, unsigned *count);

/* Removes every entry. */
void mp_shared_flush(mp_store *s);

/* Capacity (bytes entries can use), bytes in use, and live entries. */
void mp_shared_usage(mp_store *s, size_t *capacity, size_t *used,
                     unsigned *entries);

/* The stores of the shared segment (mp_shared_store): moonport.shared's,
 * the mock server's state (admin-added mappings, scenario states,
 * counters; never evicted) and the mock's journal (only its entries;
 * the oldest written are dropped first). */
enum {
  MP_STORE_SHARED = 0,
  MP_STORE_MOCK = 1,
  MP_STORE_JOURNAL = 2,
  MP_NSTORES = 3
};

#endif
