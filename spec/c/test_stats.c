/*
 * Per-route figures of server/req/stats.c: counts and byte sums per route,
 * handler-time percentiles read from the histogram's buckets (a bucket's
 * upper edge, at most 12.5% above the true time), and the reset a reload
 * makes when the routes change.
 */
#include <stdint.h>

#include "check.h"
#include "stats.h"

#define US 1000ull /* nanoseconds */

static void test_recording(void) {
  mp_stats s;
  CHECK_EQ_INT(mp_stats_init(&s, 3), 0);
  CHECK_EQ_INT(s.nroutes, 3);
  mp_stats_record(&s, 0, 100, 0, 5 * US);
  mp_stats_record(&s, 0, 300, 4096, 7 * US);
  mp_stats_record(&s, 2, 50, 10, 1 * US);
  /* A route index the table does not have is not recorded. */
  mp_stats_record(&s, 3, 1, 1, 1 * US);
  mp_stats_record(&s, 1000, 1, 1, 1 * US);

  const mp_route_stats *r = &s.routes[0];
  CHECK_EQ_INT(r->count, 2);
  CHECK_EQ_INT(r->lua_bytes, 400);
  CHECK_EQ_INT(r->c_bytes, 4096);
  CHECK_EQ_INT(r->lua_max, 300);
  CHECK_EQ_INT(s.routes[1].count, 0);
  CHECK_EQ_INT(s.routes[1].lua_bytes, 0);
  CHECK_EQ_INT(s.routes[2].count, 1);
  CHECK_EQ_INT(s.routes[2].lua_bytes, 50);
  CHECK_EQ_INT(s.routes[2].c_bytes, 10);
  CHECK_EQ_INT(s.routes[2].lua_max, 50);
  /* The totals are the worker's to keep; recording leaves them alone. */
  CHECK_EQ_INT(s.requests, 0);
  mp_stats_free(&s);
  CHECK(s.routes == NULL);
}

/* One request of `us` microseconds: the time every percentile reports. */
static uint64_t single(uint64_t us) {
  mp_stats s;
  if (mp_stats_init(&s, 1) != 0) return 0;
  mp_stats_record(&s, 0, 0, 0, us * US);
  uint64_t p = mp_stats_percentile_us(&s.routes[0], 0.5);
  CHECK_EQ_INT(mp_stats_percentile_us(&s.routes[0], 0.0), p);
  CHECK_EQ_INT(mp_stats_percentile_us(&s.routes[0], 1.0), p);
  mp_stats_free(&s);
  return p;
}

static void test_bucket_edges(void) {
  /* Below 8 us every microsecond has its bucket: the edge is us + 1. */
  for (uint64_t us = 0; us < 8; us++) CHECK_EQ_INT(single(us), us + 1);
  /* Above, 8 buckets per power of two: the edge is above the time and
   * at most an eighth more. */
  CHECK_EQ_INT(single(8), 9);
  CHECK_EQ_INT(single(15), 16);
  CHECK_EQ_INT(single(16), 18);
  CHECK_EQ_INT(single(100), 104);
  CHECK_EQ_INT(single(1000), 1024);
  for (uint64_t us = 8; us < (1ull << 34); us = us * 3 / 2 + 1) {
    uint64_t top = single(us);
    check_count++;
    if (!(top > us && top <= us + us / 8)) {
      check_failures++;
      fprintf(stderr, "%llu us reported as %llu us\n",
              (unsigned long long)us, (unsigned long long)top);
    }
  }
  /* Past 2^35 us (about 9.5 hours) the last bucket takes everything. */
  CHECK_EQ_INT(single((1ull << 35) - 1), 1ull << 35);
  CHECK_EQ_INT(single(1ull << 40), 1ull << 35);
  CHECK_EQ_INT(single(UINT64_MAX / US), 1ull << 35);
}

static void test_percentiles(void) {
  mp_stats s;
  CHECK_EQ_INT(mp_stats_init(&s, 2), 0);
  /* No requests: 0. */
  CHECK_EQ_INT(mp_stats_percentile_us(&s.routes[0], 0.5), 0);
  /* 90 requests of 10 us, 9 of 1 ms, 1 of 50 ms. */
  for (int i = 0; i < 90; i++) mp_stats_record(&s, 0, 0, 0, 10 * US);
  for (int i = 0; i < 9; i++) mp_stats_record(&s, 0, 0, 0, 1000 * US);
  mp_stats_record(&s, 0, 0, 0, 50000 * US);
  const mp_route_stats *r = &s.routes[0];
  CHECK_EQ_INT(r->count, 100);
  CHECK_EQ_INT(mp_stats_percentile_us(r, 0.0), 11);
  CHECK_EQ_INT(mp_stats_percentile_us(r, 0.5), 11);
  CHECK_EQ_INT(mp_stats_percentile_us(r, 0.89), 11);
  CHECK_EQ_INT(mp_stats_percentile_us(r, 0.90), 1024);
  CHECK_EQ_INT(mp_stats_percentile_us(r, 0.98), 1024);
  CHECK_EQ_INT(mp_stats_percentile_us(r, 0.99), 53248);
  CHECK_EQ_INT(mp_stats_percentile_us(r, 1.0), 53248);
  /* The other route's figures are its own. */
  CHECK_EQ_INT(mp_stats_percentile_us(&s.routes[1], 0.99), 0);
  mp_stats_record(&s, 1, 0, 0, 3 * US);
  CHECK_EQ_INT(mp_stats_percentile_us(&s.routes[1], 0.99), 4);
  CHECK_EQ_INT(mp_stats_percentile_us(r, 0.5), 11);
  /* Sub-microsecond times count as 0 us. */
  mp_stats_record(&s, 1, 0, 0, 999);
  CHECK_EQ_INT(mp_stats_percentile_us(&s.routes[1], 0.0), 1);
  mp_stats_free(&s);
}

static void test_reset_routes(void) {
  mp_stats s;
  CHECK_EQ_INT(mp_stats_init(&s, 2), 0);
  s.requests = 7;
  s.accepted = 3;
  s.refused = 1;
  s.memory_limit_hits = 2;
  mp_stats_record(&s, 0, 10, 20, 30 * US);
  mp_stats_record(&s, 1, 10, 20, 30 * US);
  /* A reload with three routes: the per-route figures start again, the
   * worker's totals stay. */
  CHECK_EQ_INT(mp_stats_reset_routes(&s, 3), 0);
  CHECK_EQ_INT(s.nroutes, 3);
  for (unsigned i = 0; i < 3; i++) {
    CHECK_EQ_INT(s.routes[i].count, 0);
    CHECK_EQ_INT(s.routes[i].lua_bytes, 0);
    CHECK_EQ_INT(s.routes[i].c_bytes, 0);
    CHECK_EQ_INT(s.routes[i].lua_max, 0);
    CHECK_EQ_INT(mp_stats_percentile_us(&s.routes[i], 0.5), 0);
  }
  CHECK_EQ_INT(s.requests, 7);
  CHECK_EQ_INT(s.accepted, 3);
  CHECK_EQ_INT(s.refused, 1);
  CHECK_EQ_INT(s.memory_limit_hits, 2);
  mp_stats_record(&s, 2, 5, 6, 7 * US);
  CHECK_EQ_INT(s.routes[2].count, 1);
  /* Down to one route: the third is gone, and recording it does nothing. */
  CHECK_EQ_INT(mp_stats_reset_routes(&s, 1), 0);
  CHECK_EQ_INT(s.nroutes, 1);
  mp_stats_record(&s, 2, 5, 6, 7 * US);
  CHECK_EQ_INT(s.routes[0].count, 0);
  /* And to none: an app without routes still has a table to free. */
  CHECK_EQ_INT(mp_stats_reset_routes(&s, 0), 0);
  CHECK_EQ_INT(s.nroutes, 0);
  CHECK(s.routes != NULL);
  mp_stats_record(&s, 0, 1, 1, 1 * US);
  mp_stats_free(&s);

  CHECK_EQ_INT(mp_stats_init(&s, 0), 0);
  CHECK(s.routes != NULL);
  CHECK_EQ_INT(s.nroutes, 0);
  mp_stats_free(&s);
}

int main(void) {
  test_recording();
  test_bucket_edges();
  test_percentiles();
  test_reset_routes();
  return check_report("test_stats");
}
