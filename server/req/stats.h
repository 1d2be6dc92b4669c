/*
 * Per-route figures: how many requests, how many bytes each allocated in
 * Lua and in the C core, and how long their handlers took, plus the JSON
 * that GET /__moonport/stats answers with. Recording is a few additions and
 * one histogram increment; nothing here allocates per request.
 */
#ifndef MP_STATS_H
#define MP_STATS_H

#include <stdint.h>

#include "pool.h"

/* Handler-time histogram: exact below 8 us, then 8 buckets per power of
 * two (12.5% wide) up to 2^34 us. */
#define MP_HIST_BUCKETS (8 + 32 * 8)

typedef struct mp_route_stats {
  uint64_t count;
  uint64_t lua_bytes; /* sums over count requests */
  uint64_t c_bytes;
  uint64_t lua_max;
  uint32_t hist[MP_HIST_BUCKETS];
  /* Its requests' series in the shared segment (publish.h) for the
   * route's own method, found on first use; NULL until then. */
  struct mp_metrics_series *series;
} mp_route_stats;

typedef struct mp_stats {
  mp_route_stats *routes; /* one per route, in the router's order */
  unsigned nroutes;
  uint64_t requests;       /* every request answered, routed or not */
  uint64_t accepted;       /* connections */
  uint64_t refused;        /* connections closed at once: --max-connections */
  uint64_t memory_limit_hits;
} mp_stats;

/* Returns 0 or MP_NOMEM. */
int mp_stats_init(mp_stats *s, unsigned nroutes);
void mp_stats_free(mp_stats *s);

/* Starts the per-route figures again for nroutes routes (after a reload);
 * the totals stay. Returns 0 or MP_NOMEM (then nothing changed). */
int mp_stats_reset_routes(mp_stats *s, unsigned nroutes);

/* Adds one finished request of route i that took ns nanoseconds. */
void mp_stats_record(mp_stats *s, unsigned i, uint64_t lua_bytes,
                     uint64_t c_bytes, uint64_t ns);

/* The time below which fraction q (0..1) of route i's handlers finished,
 * in microseconds (a bucket's upper edge), or 0 when it has no requests. */
uint64_t mp_stats_percentile_us(const mp_route_stats *r, double q);

#endif
