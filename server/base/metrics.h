/*
 * Every worker's figures in the shared segment (shared.h), one
 * mp_worker_metrics per worker id, so that any worker can answer for all of
 * them: the stats endpoint's `workers` and `total`, and the Prometheus
 * metrics endpoint.
 *
 * One writer per block: the worker of that id (the master writes only
 * `restarts`). Writes are plain 64-bit stores (an increment is a load and a
 * store, which is all one writer needs), made atomic with relaxed ordering so
 * that a reader in another process never sees half a word: no lock, no
 * syscall, nothing that waits. A reader may see one counter of a request
 * updated and the next not yet (a torn snapshot); each counter on its own
 * only ever grows, and readers derive what must agree (a histogram's count
 * is the sum of its buckets) from one set of fields.
 *
 * Counters live as long as the segment: a worker that is replaced leaves its
 * figures in its block, and its successor goes on from them, so a counter
 * summed over workers never goes back. Gauges (open connections, heap
 * bytes) are what the worker last wrote.
 *
 * Requests are counted by series: a (method, route label) pair, where the
 * label is one of the app's route patterns or one of the fixed labels for
 * what no route answered. A block holds MP_METRICS_SERIES series, made on
 * first use and kept; past that, requests are counted in one overflow
 * series, so what a client sends can never grow the set.
 */
#ifndef MP_METRICS_H
#define MP_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Series a worker keeps, the overflow series included. */
#define MP_METRICS_SERIES 256
/* Bytes of a label kept; longer patterns are cut there. */
#define MP_METRICS_LABEL_MAX 118
/* Latency buckets: the finite upper bounds, then +Inf. */
#define MP_METRICS_BOUNDS 16
#define MP_METRICS_BUCKETS (MP_METRICS_BOUNDS + 1)
/* Status classes counted: 1xx to 5xx. */
#define MP_METRICS_CLASSES 5

/* The method of a series whose requests had none (a head that failed to
 * parse), and of the overflow series. */
#define MP_METRICS_NO_METHOD 255

/* The latency buckets' upper bounds, in nanoseconds and as Prometheus
 * writes them (seconds), from 100 us to 10 s. */
extern const uint64_t mp_metrics_bound_ns[MP_METRICS_BOUNDS];
extern const char *const mp_metrics_bound_text[MP_METRICS_BOUNDS];

/* The label of the overflow series. */
#define MP_METRICS_OVERFLOW "(other)"

typedef struct mp_metrics_series {
  uint32_t used; /* set last, once method and label are in; never cleared */
  uint8_t method;    /* llhttp_method_t, or MP_METRICS_NO_METHOD */
  uint8_t label_len;
  char label[MP_METRICS_LABEL_MAX];
  uint8_t spare[4];
  uint64_t requests[MP_METRICS_CLASSES]; /* by status class */
  uint64_t buckets[MP_METRICS_BUCKETS];  /* not cumulative; +Inf last */
  uint64_t duration_ns;                  /* sum of the requests' latencies */
  uint64_t received_bytes; /* request heads and decoded bodies */
  uint64_t sent_bytes;     /* response bodies */
  uint64_t lua_bytes;      /* Lua bytes allocated for the requests */
  uint64_t c_bytes;        /* C bytes charged to the requests */
  uint8_t pad[40];
} mp_metrics_series;

/* A worker's scalars. Counters run since the segment was made; gauges are
 * the current worker's. */
typedef struct mp_metrics_scalars {
  uint64_t requests;          /* counter: every request answered */
  uint64_t accepted;          /* counter: connections accepted */
  uint64_t refused;           /* counter: closed at once, --max-connections */
  uint64_t memory_limit_hits; /* counter: requests over their Lua budget */
  uint64_t mallocs;           /* counter: the core's malloc calls */
  uint64_t restarts;          /* counter: written by the master */
  uint64_t pid;               /* gauge: the worker now in this place */
  uint64_t connections;       /* gauge: open */
  uint64_t unsent_bytes;      /* gauge: output not yet taken by clients */
  uint64_t lua_heap_bytes;    /* gauge */
  uint64_t threads;           /* gauge: live light threads */
  uint64_t timers_pending;    /* gauge */
  uint64_t timers_running;    /* gauge */
  uint64_t upstream_in_use;   /* gauge: outbound sockets a request holds */
  uint64_t upstream_idle;     /* gauge: outbound sockets idle in pools */
  uint64_t upstream_errors;   /* counter: outbound connects that failed */
  uint64_t pg_connections;    /* gauge: PostgreSQL connections up */
  uint64_t pg_errors;         /* counter: PostgreSQL connections lost or
                                 refused */
  uint64_t spare[6];
} mp_metrics_scalars;

typedef struct mp_worker_metrics {
  mp_metrics_scalars w;
  mp_metrics_series series[MP_METRICS_SERIES]; /* overflow last */
} mp_worker_metrics;

/* Reads a figure another process writes. */
static inline uint64_t mp_metrics_get(const uint64_t *p) {
  return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Writes a figure of this worker's block (its only writer). */
static inline void mp_metrics_set(uint64_t *p, uint64_t v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* Adds to a counter of this worker's block (its only writer). */
static inline void mp_metrics_add(uint64_t *p, uint64_t by) {
  __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + by,
                   __ATOMIC_RELAXED);
}

/* The series (method, label) of m, made on first use; the overflow series
 * when every other one is taken. Never NULL. Only m's writer calls it.
 * Allocates nothing. A label longer than MP_METRICS_LABEL_MAX is cut. */
mp_metrics_series *mp_metrics_series_of(mp_worker_metrics *m, int method,
                                        const char *label, size_t len);

/* Counts one request in series s: its status (100..599; others count as
 * 5xx), latency and bytes. Only the series' writer calls it. */
void mp_metrics_count(mp_metrics_series *s, int status, uint64_t ns,
                      uint64_t received, uint64_t sent, uint64_t lua_bytes,
                      uint64_t c_bytes);

/* Whether a reader may use series s: its method and label are in place. */
static inline int mp_metrics_series_used(const mp_metrics_series *s) {
  return (int)__atomic_load_n(&s->used, __ATOMIC_ACQUIRE);
}

#endif
