/*
 * Per-route figures (see stats.h). The histogram trades exactness for a
 * fixed 2 KiB per route: percentiles come out as bucket edges, at most
 * 12.5% above the true value.
 */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

int mp_stats_init(mp_stats *s, unsigned nroutes) {
  memset(s, 0, sizeof *s);
  s->routes = calloc(nroutes ? nroutes : 1, sizeof *s->routes);
  if (s->routes == NULL) return MP_NOMEM;
  s->nroutes = nroutes;
  return 0;
}

int mp_stats_reset_routes(mp_stats *s, unsigned nroutes) {
  mp_route_stats *routes = calloc(nroutes ? nroutes : 1, sizeof *routes);
  if (routes == NULL) return MP_NOMEM;
  free(s->routes);
  s->routes = routes;
  s->nroutes = nroutes;
  return 0;
}

void mp_stats_free(mp_stats *s) {
  free(s->routes);
  s->routes = NULL;
}

static unsigned bucket_of(uint64_t us) {
  if (us < 8) return (unsigned)us;
  unsigned e = 63u - (unsigned)__builtin_clzll(us); /* us >= 2^e, e >= 3 */
  if (e > 34) return MP_HIST_BUCKETS - 1;
  unsigned sub = (unsigned)(us >> (e - 3)) & 7u;
  return 8 + (e - 3) * 8 + sub;
}

static uint64_t bucket_top(unsigned i) {
  if (i < 8) return i + 1;
  unsigned e = (i - 8) / 8 + 3, sub = (i - 8) % 8;
  return (uint64_t)(9 + sub) << (e - 3);
}

void mp_stats_record(mp_stats *s, unsigned i, uint64_t lua_bytes,
                     uint64_t c_bytes, uint64_t ns) {
  if (i >= s->nroutes) return;
  mp_route_stats *r = &s->routes[i];
  r->count++;
  r->lua_bytes += lua_bytes;
  r->c_bytes += c_bytes;
  if (lua_bytes > r->lua_max) r->lua_max = lua_bytes;
  r->hist[bucket_of(ns / 1000)]++;
}

uint64_t mp_stats_percentile_us(const mp_route_stats *r, double q) {
  if (r->count == 0) return 0;
  uint64_t rank = (uint64_t)(q * (double)r->count);
  if (rank >= r->count) rank = r->count - 1;
  uint64_t seen = 0;
  for (unsigned i = 0; i < MP_HIST_BUCKETS; i++) {
    seen += r->hist[i];
    if (seen > rank) return bucket_top(i);
  }
  return bucket_top(MP_HIST_BUCKETS - 1);
}
