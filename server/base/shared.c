/*
 * The shared-memory segment (see shared.h): one memfd, mapped MAP_SHARED by
 * the master and every worker, each at its own address.
 *
 * Layout, each part starting on a 64-byte line:
 *
 *   header   magic, version, the size and policy of every store, where each
 *            starts, and the reload status
 *   slots    nslots mp_worker_slot, 64 bytes each
 *   metrics  nslots mp_worker_metrics (metrics.h), one per worker: pages
 *            no worker has written to stay unbacked
 *   stores   one after another, each:
 *     store header  its layout, its roots (LRU ends, free lists, counters)
 *                   and a robust process-shared mutex
 *     buckets       a power-of-two array of chain heads, about one per 256
 *                   bytes of arena
 *     arena         the blocks that hold entries
 *
 * Nothing inside a store is a pointer: every link is a uint32_t offset from
 * the store's own start, and 0 means none (offset 0 is the store's header,
 * never an entry). That is why a store stops at 2 GiB; the segment, which
 * only knows where each store starts, may be larger. Stores share nothing
 * but the segment: each has its own lock, so one store's traffic never
 * waits on another's, and its own arena, so one can never evict another's
 * entries.
 *
 * Each arena is managed by a buddy allocator. Blocks are 64 bytes << order,
 * up to min(1 MiB, the largest power of two the arena holds); the arena is
 * carved at creation into the largest aligned blocks that fit, so its tail,
 * too small for a largest block, is used by smaller ones. Every block starts
 * with its state (free or used) and order, so freeing a block can see
 * whether its buddy is free at the same order and merge with it. Merging is
 * what lets eviction always make room in the end: once enough of the
 * oldest entries are gone, their blocks join up again, and an empty arena is
 * whole again. Free blocks sit on one doubly linked list per order.
 *
 * An entry is one used block: a 48-byte header (chain link, LRU links,
 * hash, expiry, type, lengths, number), then the key, then a string value.
 * Every block is 8-byte aligned, so the header's 64-bit fields are too. The
 * LRU list runs from the most recently used entry (head) to the least
 * (tail); in an MP_EVICT_FIFO store only writes move an entry to the head,
 * so the tail is the oldest written. Expired entries count as absent
 * everywhere and are freed when an operation meets them; set and incr also
 * free up to two expired entries from the LRU tail, as nginx's
 * lua_shared_dict does, so a store that is only ever written does not fill
 * with dead entries before it evicts. An MP_EVICT_NEVER store evicts
 * nothing: a write that finds no free block fails.
 *
 * The mutexes are robust: when a worker dies holding one, the next process
 * to lock it gets EOWNERDEAD, cannot know how far the dead one got through
 * its edit of the lists, and so clears that store before going on. The
 * other stores and the worker slots are outside that lock and survive.
 *
 * The hash is not keyed, so a client that chooses keys can lengthen one
 * chain; scripts that store client-chosen keys should bound how many.
 *
 * This file does not allocate inside operations, does not block while
 * holding a lock (the error log is written after unlocking), and does not
 * know about Lua.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif

#include "shared.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "log.h"
#include "metrics.h"

#define SHM_MAGIC 0x4853504du /* "MPSH" in little-endian memory */
#define SHM_VERSION 3u

/* A store's offsets are uint32_t and must stay below 2^31 so that no sum
 * of an offset and a block size can wrap. */
#define SHM_MAX_SIZE ((size_t)1 << 31)

#define MIN_BLOCK_SHIFT 6 /* 64 bytes */
#define MAX_ORDER 14      /* 64 << 14 = 1 MiB */
#define NORDERS (MAX_ORDER + 1)

/* The arena must hold at least this much. */
#define MIN_ARENA 4096u

/* Expiries further out than this (about 142,000 years) are clamped, so
 * that now + ttl cannot overflow. */
#define TTL_MAX_MS ((uint64_t)1 << 52)

/* Block states: neither is 0, so zeroed memory never looks like a block. */
enum { BLOCK_FREE = 0xF5, BLOCK_USED = 0x5E };

/* Where the parts of a store are, as offsets from its start. Computed from
 * (size, policy) alone, so attach can recompute it and compare. */
typedef struct store_layout {
  uint32_t size; /* a multiple of 64 */
  uint32_t policy;
  uint32_t nbuckets; /* a power of two */
  uint32_t buckets_off;
  uint32_t arena_off;
  uint32_t arena_size; /* a multiple of 64 */
  uint32_t max_order;  /* the largest block is 64 << max_order */
  uint32_t spare;
} store_layout;

typedef struct store_header {
  store_layout layout;
  /* The store; written only with the lock held. */
  uint32_t lru_head; /* most recently used entry */
  uint32_t lru_tail; /* least recently used entry */
  uint32_t nentries;
  uint32_t free_head[NORDERS];
  uint64_t used; /* bytes in used blocks */
  pthread_mutex_t lock;
} store_header;

typedef struct shm_header {
  uint32_t magic;
  uint32_t version;
  uint64_t size; /* the whole segment */
  uint32_t nslots;
  uint32_t nstores;
  uint64_t slots_off;
  uint64_t metrics_off;
  uint64_t store_off[MP_SHARED_MAX_STORES];
  mp_reload_status reload; /* outside the stores: the master writes it */
} shm_header;

/* The start of every block, free or used. */
typedef struct shm_free {
  uint8_t state; /* BLOCK_FREE */
  uint8_t order;
  uint8_t spare[2];
  uint32_t prev; /* free list of the same order */
  uint32_t next;
} shm_free;

typedef struct shm_entry {
  uint8_t state; /* BLOCK_USED */
  uint8_t order;
  uint8_t type; /* MP_SHARED_STRING, _NUMBER or _BOOLEAN */
  uint8_t spare;
  uint32_t klen;
  uint32_t vlen;  /* string bytes after the key; 0 for other types */
  uint32_t hnext; /* next entry in the bucket's chain */
  uint32_t lprev; /* toward the LRU head (more recent) */
  uint32_t lnext; /* toward the LRU tail */
  uint64_t hash;
  uint64_t expires; /* mp_shared_now_ms() when it expires; 0: never */
  double number;    /* NUMBER, or BOOLEAN as 0 or 1 */
} shm_entry;

_Static_assert(sizeof(mp_worker_slot) == 64, "a worker slot is one line");
_Static_assert(sizeof(shm_entry) == 48, "entry header size");
_Static_assert(sizeof(shm_entry) % 8 == 0, "keys follow an aligned header");
_Static_assert(sizeof(shm_free) <= 64, "a free block fits the smallest");

/* This process's view of one store. */
struct mp_store {
  char *base; /* the store's start: offset 0 */
  store_header *hdr;
  uint32_t *buckets;
  /* Set by lock() when it cleared the store after a dead owner, so that
   * unlock() can log it once the lock is released. */
  bool recovered;
};

struct mp_shared {
  int fd;
  char *base;
  size_t size;
  shm_header *hdr;
  mp_worker_slot *slots;
  mp_worker_metrics *metrics;
  unsigned nstores;
  mp_store stores[MP_SHARED_MAX_STORES];
};

/* ---- Layout ---- */

static uint64_t floor_pow2(uint64_t n) {
  return n == 0 ? 0 : (uint64_t)1 << (63 - __builtin_clzll(n));
}

static uint64_t align64(uint64_t n) { return (n + 63) & ~(uint64_t)63; }

static uint32_t block_size(unsigned order) {
  return (uint32_t)1 << (MIN_BLOCK_SHIFT + order);
}

static int plan_store(size_t size, int policy, store_layout *l) {
  if (size < MP_SHARED_MIN_SIZE || size > SHM_MAX_SIZE) return MP_INVALID;
  if (policy != MP_EVICT_LRU && policy != MP_EVICT_FIFO &&
      policy != MP_EVICT_NEVER)
    return MP_INVALID;
  memset(l, 0, sizeof *l);
  size &= ~(size_t)63;
  uint64_t buckets_off = align64(sizeof(store_header));
  uint64_t nbuckets = floor_pow2((size - buckets_off) / 256);
  if (nbuckets == 0) nbuckets = 1;
  uint64_t arena_off = align64(buckets_off + nbuckets * sizeof(uint32_t));
  if (arena_off + MIN_ARENA > size) return MP_INVALID;
  uint64_t arena_size = (size - arena_off) & ~(uint64_t)63;
  uint64_t top = floor_pow2(arena_size);
  unsigned max_order = 0;
  while (max_order < MAX_ORDER && block_size(max_order + 1) <= top)
    max_order++;

  l->size = (uint32_t)size;
  l->policy = (uint32_t)policy;
  l->nbuckets = (uint32_t)nbuckets;
  l->buckets_off = (uint32_t)buckets_off;
  l->arena_off = (uint32_t)arena_off;
  l->arena_size = (uint32_t)arena_size;
  l->max_order = max_order;
  return 0;
}

static bool layout_equal(const store_layout *a, const store_layout *b) {
  return a->size == b->size && a->policy == b->policy &&
         a->nbuckets == b->nbuckets && a->buckets_off == b->buckets_off &&
         a->arena_off == b->arena_off && a->arena_size == b->arena_size &&
         a->max_order == b->max_order;
}

/* Where the slots and each store go, and the segment's size: a function
 * of the slot count and each store's layout alone. */
static void plan_segment(unsigned nslots, const store_layout *stores,
                         unsigned nstores, shm_header *h) {
  h->nslots = nslots;
  h->nstores = nstores;
  h->slots_off = align64(sizeof(shm_header));
  h->metrics_off =
      align64(h->slots_off + (uint64_t)nslots * sizeof(mp_worker_slot));
  uint64_t off = align64(h->metrics_off +
                         (uint64_t)nslots * sizeof(mp_worker_metrics));
  for (unsigned i = 0; i < MP_SHARED_MAX_STORES; i++) {
    h->store_off[i] = i < nstores ? off : 0;
    if (i < nstores) off += stores[i].size;
  }
  h->size = off;
}

/* ---- Offsets ---- */

static shm_entry *entry_at(const mp_store *s, uint32_t off) {
  return (shm_entry *)(void *)(s->base + off);
}

static shm_free *free_at(const mp_store *s, uint32_t off) {
  return (shm_free *)(void *)(s->base + off);
}

/* ---- The buddy allocator ---- */

static void free_push(mp_store *s, uint32_t off, unsigned order) {
  store_header *h = s->hdr;
  shm_free *b = free_at(s, off);
  b->state = BLOCK_FREE;
  b->order = (uint8_t)order;
  b->prev = 0;
  b->next = h->free_head[order];
  if (b->next != 0) free_at(s, b->next)->prev = off;
  h->free_head[order] = off;
}

static void free_unlink(mp_store *s, uint32_t off) {
  shm_free *b = free_at(s, off);
  if (b->prev != 0)
    free_at(s, b->prev)->next = b->next;
  else
    s->hdr->free_head[b->order] = b->next;
  if (b->next != 0) free_at(s, b->next)->prev = b->prev;
}

/* A block of the given order, marked used, or 0 when none is free. */
static uint32_t block_alloc(mp_store *s, unsigned order) {
  store_header *h = s->hdr;
  unsigned o = order;
  while (o <= h->layout.max_order && h->free_head[o] == 0) o++;
  if (o > h->layout.max_order) return 0;
  uint32_t off = h->free_head[o];
  free_unlink(s, off);
  while (o > order) {
    o--;
    free_push(s, off + block_size(o), o);
  }
  shm_free *b = free_at(s, off);
  b->state = BLOCK_USED;
  b->order = (uint8_t)order;
  h->used += block_size(order);
  return off;
}

static void block_free(mp_store *s, uint32_t off) {
  store_header *h = s->hdr;
  unsigned order = free_at(s, off)->order;
  assert(free_at(s, off)->state == BLOCK_USED && "freeing a free block");
  h->used -= block_size(order);
  uint32_t rel = off - h->layout.arena_off;
  while (order < h->layout.max_order) {
    uint32_t bsize = block_size(order), buddy = rel ^ bsize;
    /* A buddy running past the arena's end was never carved: the tail's
     * blocks have no partner there. Any buddy inside the arena starts a
     * block, whole or split, so its header is current. */
    if (buddy + bsize > h->layout.arena_size) break;
    shm_free *b = free_at(s, h->layout.arena_off + buddy);
    if (b->state != BLOCK_FREE || b->order != order) break;
    free_unlink(s, h->layout.arena_off + buddy);
    rel &= ~bsize;
    order++;
  }
  free_push(s, h->layout.arena_off + rel, order);
}

/* Empties the store: no entries, the arena carved into free blocks, the
 * largest aligned ones that fit. Reads only the layout, which nothing
 * changes after creation, so it is safe on a store a dead worker left
 * half-edited. `zeroed` skips clearing buckets a new memfd already has
 * as zeros, so a large segment does not touch them all at creation. */
static void store_reset(mp_store *s, bool zeroed) {
  store_header *h = s->hdr;
  const store_layout *l = &h->layout;
  if (!zeroed) memset(s->buckets, 0, (size_t)l->nbuckets * sizeof(uint32_t));
  h->lru_head = h->lru_tail = 0;
  h->nentries = 0;
  h->used = 0;
  memset(h->free_head, 0, sizeof h->free_head);
  uint32_t rel = 0;
  while (rel + block_size(0) <= l->arena_size) {
    unsigned order = l->max_order;
    while (order > 0 && ((rel & (block_size(order) - 1)) != 0 ||
                         rel + block_size(order) > l->arena_size))
      order--;
    free_push(s, l->arena_off + rel, order);
    rel += block_size(order);
  }
}

/* ---- The lock ---- */

static void lock(mp_store *s) {
  int rc = pthread_mutex_lock(&s->hdr->lock);
  if (rc == 0) return;
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(&s->hdr->lock);
    store_reset(s, false);
    s->recovered = true;
    return;
  }
  /* ENOTRECOVERABLE would need an owner that died and a locker that did
   * not call pthread_mutex_consistent; every path above does. Going on
   * without the lock would corrupt the store for every worker. */
  mp_log(MP_LOG_ERROR, "shared: locking the store failed: %s", strerror(rc));
  abort();
}

static void unlock(mp_store *s) {
  pthread_mutex_unlock(&s->hdr->lock);
  if (s->recovered) {
    s->recovered = false;
    mp_log(MP_LOG_ERROR,
           "shared: a worker died inside a shared-store operation; the "
           "store was cleared to stay consistent");
  }
}

/* ---- Entries ---- */

/* MurmurHash64A (Austin Appleby, public domain), eight bytes a step. The
 * result depends on byte order, which every process mapping one segment
 * shares. */
static uint64_t hash_key(const char *key, size_t len) {
  const uint64_t m = 0xc6a4a7935bd1e995ull;
  const unsigned char *p = (const unsigned char *)key;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * m);
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t k;
    memcpy(&k, p, 8);
    k *= m;
    k ^= k >> 47;
    k *= m;
    h ^= k;
    h *= m;
  }
  if (len > 0) {
    for (size_t i = len; i-- > 0;) h ^= (uint64_t)p[i] << (8 * i);
    h *= m;
  }
  h ^= h >> 47;
  h *= m;
  h ^= h >> 47;
  return h;
}

static bool key_ok(const char *key, size_t klen) {
  return key != NULL && klen > 0 && klen <= MP_SHARED_KEY_MAX;
}

static bool expired(const shm_entry *e, uint64_t now) {
  return e->expires != 0 && e->expires <= now;
}

static uint64_t expiry(uint64_t now, double ttl) {
  if (ttl <= 0) return 0;
  double ms = ttl * 1000.0 + 0.5;
  uint64_t d = ms >= (double)TTL_MAX_MS ? TTL_MAX_MS : (uint64_t)ms;
  return now + (d == 0 ? 1 : d);
}

/* The smallest order whose block holds need bytes; need must fit one. */
static unsigned order_for(size_t need) {
  unsigned order = 0;
  while (block_size(order) < need) order++;
  return order;
}

static uint32_t *bucket_of(mp_store *s, uint64_t hash) {
  return &s->buckets[hash & (s->hdr->layout.nbuckets - 1)];
}

static void lru_unlink(mp_store *s, shm_entry *e) {
  store_header *h = s->hdr;
  if (e->lprev != 0)
    entry_at(s, e->lprev)->lnext = e->lnext;
  else
    h->lru_head = e->lnext;
  if (e->lnext != 0)
    entry_at(s, e->lnext)->lprev = e->lprev;
  else
    h->lru_tail = e->lprev;
}

static void lru_push(mp_store *s, uint32_t off) {
  store_header *h = s->hdr;
  shm_entry *e = entry_at(s, off);
  e->lprev = 0;
  e->lnext = h->lru_head;
  if (h->lru_head != 0)
    entry_at(s, h->lru_head)->lprev = off;
  else
    h->lru_tail = off;
  h->lru_head = off;
}

static void lru_touch(mp_store *s, uint32_t off) {
  if (s->hdr->lru_head == off) return;
  lru_unlink(s, entry_at(s, off));
  lru_push(s, off);
}

/* Unlinks an entry from its chain and the LRU list and frees its block. */
static void entry_remove(mp_store *s, uint32_t off) {
  shm_entry *e = entry_at(s, off);
  uint32_t *link = bucket_of(s, e->hash);
  while (*link != off && *link != 0) link = &entry_at(s, *link)->hnext;
  assert(*link == off && "an entry is on its bucket's chain");
  if (*link == off) *link = e->hnext;
  lru_unlink(s, e);
  s->hdr->nentries--;
  block_free(s, off);
}

/* The live entry for key, or 0. An expired one met here is freed. */
static uint32_t entry_find(mp_store *s, const char *key, size_t klen,
                           uint64_t hash, uint64_t now) {
  for (uint32_t off = *bucket_of(s, hash); off != 0;) {
    shm_entry *e = entry_at(s, off);
    if (e->hash == hash && e->klen == klen &&
        memcmp((const char *)(e + 1), key, klen) == 0) {
      if (!expired(e, now)) return off;
      entry_remove(s, off);
      return 0;
    }
    off = e->hnext;
  }
  return 0;
}

/* Frees up to n expired entries from the LRU tail, stopping at the first
 * live one. Not an eviction: those entries were already gone. */
static void expire_tail(mp_store *s, uint64_t now, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    uint32_t off = s->hdr->lru_tail;
    if (off == 0 || !expired(entry_at(s, off), now)) return;
    entry_remove(s, off);
  }
}

/* A used block of the given order, evicting from the LRU tail until one is
 * free (in an MP_EVICT_NEVER store, only a block already free). Returns 0
 * when there is none: in a store that evicts, only when the store is empty
 * and still has no such block, which cannot happen for an order up to
 * max_order. */
static uint32_t alloc_evicting(mp_store *s, unsigned order, bool *evicted) {
  for (;;) {
    uint32_t off = block_alloc(s, order);
    if (off != 0) return off;
    if (s->hdr->lru_tail == 0 || s->hdr->layout.policy == MP_EVICT_NEVER)
      return 0;
    entry_remove(s, s->hdr->lru_tail);
    *evicted = true;
  }
}

/* Writes type, value and expiry into an entry whose key is in place. */
static void entry_write_value(shm_entry *e, int type, double number,
                              const char *str, size_t vlen, uint64_t expires) {
  e->type = (uint8_t)type;
  e->number = number;
  e->vlen = (uint32_t)vlen;
  e->expires = expires;
  if (vlen > 0) memcpy((char *)(e + 1) + e->klen, str, vlen);
}

/* Fills a newly allocated block and links it in as most recently used. */
static void entry_insert(mp_store *s, uint32_t off, const char *key,
                         size_t klen, uint64_t hash, int type, double number,
                         const char *str, size_t vlen, uint64_t expires) {
  shm_entry *e = entry_at(s, off);
  e->spare = 0;
  e->klen = (uint32_t)klen;
  e->hash = hash;
  memcpy((char *)(e + 1), key, klen);
  entry_write_value(e, type, number, str, vlen, expires);
  uint32_t *bucket = bucket_of(s, hash);
  e->hnext = *bucket;
  *bucket = off;
  lru_push(s, off);
  s->hdr->nentries++;
}

/* ---- The interface ---- */

static void bind_segment(mp_shared *s, int fd, void *base, size_t size) {
  s->fd = fd;
  s->base = base;
  s->size = size;
  s->hdr = base;
  s->slots = (mp_worker_slot *)(void *)(s->base + s->hdr->slots_off);
  s->metrics = (mp_worker_metrics *)(void *)(s->base + s->hdr->metrics_off);
  s->nstores = s->hdr->nstores;
  for (unsigned i = 0; i < s->nstores; i++) {
    mp_store *st = &s->stores[i];
    st->base = s->base + s->hdr->store_off[i];
    st->hdr = (store_header *)(void *)st->base;
    st->buckets = (uint32_t *)(void *)(st->base + st->hdr->layout.buckets_off);
    st->recovered = false;
  }
}

/* Sets up a new store's header and lock in zeroed memory. */
static int store_init(mp_store *st, const store_layout *l) {
  pthread_mutexattr_t attr;
  int rc = pthread_mutexattr_init(&attr);
  if (rc != 0) return -rc;
  st->hdr->layout = *l;
  if ((rc = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED)) ||
      (rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST)) ||
      (rc = pthread_mutex_init(&st->hdr->lock, &attr)))
    rc = -rc;
  pthread_mutexattr_destroy(&attr);
  if (rc == 0) store_reset(st, true);
  return rc;
}

int mp_shared_create(const mp_store_spec *stores, unsigned nstores,
                     unsigned nslots, mp_shared **out) {
  mp_shared *s = NULL;
  int fd = -1;
  void *base = MAP_FAILED;
  store_layout layouts[MP_SHARED_MAX_STORES];
  shm_header plan;
  int rc = MP_INVALID;

  *out = NULL;
  if (nstores == 0 || nstores > MP_SHARED_MAX_STORES) goto err;
  for (unsigned i = 0; i < nstores; i++)
    if ((rc = plan_store(stores[i].size, stores[i].policy, &layouts[i])) != 0)
      goto err;
  memset(&plan, 0, sizeof plan);
  plan_segment(nslots, layouts, nstores, &plan);
  s = calloc(1, sizeof *s);
  if (s == NULL) {
    rc = MP_NOMEM;
    goto err;
  }
  /* No MFD_CLOEXEC: workers are exec'd and inherit the descriptor. */
  fd = memfd_create("moonport-shared", 0);
  if (fd < 0 || ftruncate(fd, (off_t)plan.size) != 0) {
    rc = -errno;
    goto err;
  }
  base = mmap(NULL, plan.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    rc = -errno;
    goto err;
  }
  /* Every store's header first: binding reads each one's layout. */
  for (unsigned i = 0; i < nstores; i++)
    ((store_header *)(void *)((char *)base + plan.store_off[i]))->layout =
        layouts[i];
  *(shm_header *)base = plan;
  bind_segment(s, fd, base, plan.size);
  for (unsigned i = 0; i < nstores; i++)
    if ((rc = store_init(&s->stores[i], &layouts[i])) != 0) goto err;
  for (unsigned i = 0; i < nslots; i++) s->slots[i].route = -1;
  s->hdr->version = SHM_VERSION;
  s->hdr->magic = SHM_MAGIC;
  *out = s;
  return 0;

err:
  if (base != MAP_FAILED) munmap(base, plan.size);
  if (fd >= 0) close(fd);
  free(s);
  return rc;
}

/* Whether the mapped segment h (size bytes) is one mp_shared_create made:
 * every offset is recomputed from the sizes and policies before one is
 * followed. */
static bool segment_sound(const shm_header *h, size_t size) {
  store_layout layouts[MP_SHARED_MAX_STORES];
  shm_header plan;
  if (size < sizeof(shm_header) || h->magic != SHM_MAGIC ||
      h->version != SHM_VERSION || h->nstores == 0 ||
      h->nstores > MP_SHARED_MAX_STORES || h->size != size)
    return false;
  for (unsigned i = 0; i < h->nstores; i++) {
    /* The store's offset is checked below; read its layout only once it
     * lies inside the segment. */
    if (h->store_off[i] + sizeof(store_header) > size) return false;
    const store_header *sh =
        (const store_header *)(const void *)((const char *)h + h->store_off[i]);
    if (plan_store(sh->layout.size, (int)sh->layout.policy, &layouts[i]) != 0 ||
        !layout_equal(&layouts[i], &sh->layout))
      return false;
  }
  memset(&plan, 0, sizeof plan);
  plan_segment(h->nslots, layouts, h->nstores, &plan);
  if (plan.size != size || plan.slots_off != h->slots_off ||
      plan.metrics_off != h->metrics_off)
    return false;
  for (unsigned i = 0; i < MP_SHARED_MAX_STORES; i++)
    if (plan.store_off[i] != h->store_off[i]) return false;
  return true;
}

int mp_shared_attach(int fd, mp_shared **out) {
  mp_shared *s = NULL;
  void *base = MAP_FAILED;
  size_t size = 0;
  struct stat st;
  int rc;

  *out = NULL;
  if (fstat(fd, &st) != 0) {
    rc = -errno;
    goto err;
  }
  if (st.st_size < (off_t)MP_SHARED_MIN_SIZE) {
    rc = MP_INVALID;
    goto err;
  }
  size = (size_t)st.st_size;
  base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    rc = -errno;
    goto err;
  }
  if (!segment_sound(base, size)) {
    rc = MP_INVALID;
    goto err;
  }
  s = calloc(1, sizeof *s);
  if (s == NULL) {
    rc = MP_NOMEM;
    goto err;
  }
  bind_segment(s, fd, base, size);
  *out = s;
  return 0;

err:
  if (base != MAP_FAILED) munmap(base, size);
  if (fd >= 0) close(fd);
  free(s);
  return rc;
}

int mp_shared_fd(const mp_shared *s) { return s->fd; }

void mp_shared_close(mp_shared *s) {
  if (s == NULL) return;
  munmap(s->base, s->size);
  close(s->fd);
  free(s);
}

mp_store *mp_shared_store(mp_shared *s, unsigned i) {
  return i < s->nstores ? &s->stores[i] : NULL;
}

unsigned mp_shared_nstores(const mp_shared *s) { return s->nstores; }

mp_reload_status *mp_shared_reload(mp_shared *s) { return &s->hdr->reload; }

mp_worker_slot *mp_shared_slot(mp_shared *s, unsigned id) {
  if (id == 0 || id > s->hdr->nslots) return NULL;
  return &s->slots[id - 1];
}

unsigned mp_shared_nslots(const mp_shared *s) { return s->hdr->nslots; }

mp_worker_metrics *mp_shared_metrics(mp_shared *s, unsigned id) {
  if (id == 0 || id > s->hdr->nslots) return NULL;
  return &s->metrics[id - 1];
}

uint64_t mp_shared_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int mp_shared_get(mp_store *s, const char *key, size_t klen,
                  mp_shared_value *out, char *buf, size_t cap) {
  if (!key_ok(key, klen)) return MP_NOT_FOUND;
  uint64_t now = mp_shared_now_ms(), hash = hash_key(key, klen);
  const shm_entry *e;
  uint32_t off;
  int rc = 0;

  lock(s);
  off = entry_find(s, key, klen, hash, now);
  if (off == 0) {
    rc = MP_NOT_FOUND;
    goto out;
  }
  if (s->hdr->layout.policy == MP_EVICT_LRU) lru_touch(s, off);
  e = entry_at(s, off);
  out->type = e->type;
  out->number = e->number;
  out->str = NULL;
  out->len = e->vlen;
  if (e->type == MP_SHARED_STRING) {
    if (e->vlen > cap) {
      rc = MP_AGAIN;
      goto out;
    }
    if (e->vlen > 0) memcpy(buf, (const char *)(e + 1) + e->klen, e->vlen);
    out->str = buf != NULL ? buf : "";
  }

out:
  unlock(s);
  return rc;
}

int mp_shared_set(mp_store *s, const char *key, size_t klen,
                  const mp_shared_value *v, double ttl, int flags,
                  bool *evicted) {
  bool ev = false;
  if (evicted != NULL) *evicted = false;
  if (!key_ok(key, klen) || v == NULL || !(ttl >= 0)) return MP_INVALID;
  double number;
  size_t vlen = 0;
  switch (v->type) {
  case MP_SHARED_STRING:
    if (v->str == NULL && v->len > 0) return MP_INVALID;
    vlen = v->len;
    number = 0;
    break;
  case MP_SHARED_NUMBER:
    number = v->number;
    break;
  case MP_SHARED_BOOLEAN:
    number = v->number != 0 ? 1 : 0;
    break;
  default:
    return MP_INVALID;
  }
  /* The layout never changes, so its largest block can be read unlocked. */
  size_t max = block_size(s->hdr->layout.max_order);
  if (vlen > max || sizeof(shm_entry) + klen + vlen > max) return MP_NOMEM;
  unsigned order = order_for(sizeof(shm_entry) + klen + vlen);
  uint64_t now = mp_shared_now_ms(), hash = hash_key(key, klen);
  uint64_t expires = expiry(now, ttl);
  uint32_t off;
  int rc = 0;

  lock(s);
  off = entry_find(s, key, klen, hash, now);
  if (off != 0 && (flags & MP_SHARED_ADD)) {
    rc = MP_DECLINED;
    goto out;
  }
  /* The entry found is live, so this cannot free it. */
  expire_tail(s, now, 2);
  if (off != 0 && entry_at(s, off)->order == order) {
    entry_write_value(entry_at(s, off), v->type, number, v->str, vlen,
                      expires);
    lru_touch(s, off);
    goto out;
  }
  if (s->hdr->layout.policy == MP_EVICT_NEVER) {
    /* Nothing may be lost: the new entry needs a block before the old one
     * goes. */
    uint32_t fresh = block_alloc(s, order);
    if (fresh == 0) {
      rc = MP_NOMEM;
      goto out;
    }
    if (off != 0) entry_remove(s, off);
    off = fresh;
  } else {
    /* Remove the old entry before allocating, so eviction neither takes
     * it out from under us nor counts its space as taken. */
    if (off != 0) entry_remove(s, off);
    off = alloc_evicting(s, order, &ev);
    if (off == 0) {
      rc = MP_NOMEM;
      goto out;
    }
  }
  entry_insert(s, off, key, klen, hash, v->type, number, v->str, vlen,
               expires);

out:
  unlock(s);
  if (evicted != NULL) *evicted = ev;
  return rc;
}

int mp_shared_incr(mp_store *s, const char *key, size_t klen, double by,
                   double init, double init_ttl, double *result,
                   bool *evicted) {
  bool ev = false;
  if (evicted != NULL) *evicted = false;
  if (!key_ok(key, klen) || !(init_ttl >= 0)) return MP_INVALID;
  if (sizeof(shm_entry) + klen > block_size(s->hdr->layout.max_order))
    return MP_NOMEM;
  unsigned order = order_for(sizeof(shm_entry) + klen);
  uint64_t now = mp_shared_now_ms(), hash = hash_key(key, klen);
  double sum = 0;
  uint32_t off;
  int rc = 0;

  lock(s);
  off = entry_find(s, key, klen, hash, now);
  if (off != 0) {
    shm_entry *e = entry_at(s, off);
    if (e->type != MP_SHARED_NUMBER) {
      rc = MP_INVALID;
      goto out;
    }
    sum = e->number += by;
    /* A write: the most recent entry in FIFO order too. */
    lru_touch(s, off);
    goto out;
  }
  expire_tail(s, now, 2);
  off = alloc_evicting(s, order, &ev);
  if (off == 0) {
    rc = MP_NOMEM;
    goto out;
  }
  sum = init + by;
  entry_insert(s, off, key, klen, hash, MP_SHARED_NUMBER, sum, NULL, 0,
               expiry(now, init_ttl));

out:
  unlock(s);
  if (rc == 0 && result != NULL) *result = sum;
  if (evicted != NULL) *evicted = ev;
  return rc;
}

int mp_shared_delete(mp_store *s, const char *key, size_t klen) {
  if (!key_ok(key, klen)) return MP_NOT_FOUND;
  uint64_t now = mp_shared_now_ms(), hash = hash_key(key, klen);
  int rc = 0;

  lock(s);
  uint32_t off = entry_find(s, key, klen, hash, now);
  if (off == 0)
    rc = MP_NOT_FOUND;
  else
    entry_remove(s, off);
  unlock(s);
  return rc;
}

int mp_shared_ttl(mp_store *s, const char *key, size_t klen, double *ttl) {
  if (!key_ok(key, klen)) return MP_NOT_FOUND;
  uint64_t now = mp_shared_now_ms(), hash = hash_key(key, klen);
  int rc = 0;

  lock(s);
  uint32_t off = entry_find(s, key, klen, hash, now);
  if (off == 0) {
    rc = MP_NOT_FOUND;
  } else {
    /* A live entry with an expiry has expires > now. */
    const shm_entry *e = entry_at(s, off);
    *ttl = e->expires == 0 ? 0 : (double)(e->expires - now) / 1000.0;
  }
  unlock(s);
  return rc;
}

int mp_shared_keys(mp_store *s, unsigned max, char *buf, size_t cap,
                   size_t *used, unsigned *count) {
  uint64_t now = mp_shared_now_ms();
  size_t need = 0;
  unsigned n = 0;

  lock(s);
  for (uint32_t off = s->hdr->lru_head; off != 0 && (max == 0 || n < max);) {
    shm_entry *e = entry_at(s, off);
    uint32_t next = e->lnext;
    if (expired(e, now)) {
      entry_remove(s, off);
    } else {
      /* Once one key does not fit, need stays past cap and nothing more
       * is written: the caller retries with *used bytes. */
      if (need + 4 + e->klen <= cap) {
        uint32_t klen = e->klen;
        memcpy(buf + need, &klen, 4);
        memcpy(buf + need + 4, (const char *)(e + 1), klen);
      }
      need += 4 + e->klen;
      n++;
    }
    off = next;
  }
  unlock(s);
  *used = need;
  *count = n;
  return need > cap ? MP_AGAIN : 0;
}

void mp_shared_flush(mp_store *s) {
  lock(s);
  store_reset(s, false);
  unlock(s);
}

void mp_shared_usage(mp_store *s, size_t *capacity, size_t *used,
                     unsigned *entries) {
  lock(s);
  *capacity = s->hdr->layout.arena_size;
  *used = (size_t)s->hdr->used;
  *entries = s->hdr->nentries;
  unlock(s);
}
