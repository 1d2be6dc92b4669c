/*
 * The per-worker figures of server/base/metrics.c, in a block of the
 * shared segment: a series per (method, label), found again after a
 * "restart" (the same block seen through a second mapping), cut labels,
 * the overflow series once every other slot is taken, status classes and
 * latency buckets at their edges.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "metrics.h"
#include "shared.h"

#define MS 1000000ull /* nanoseconds */

static mp_shared *segment(unsigned nslots) {
  mp_store_spec spec = {MP_SHARED_MIN_SIZE, MP_EVICT_LRU};
  mp_shared *s = NULL;
  CHECK_EQ_INT(mp_shared_create(&spec, 1, nslots, &s), 0);
  return s;
}

static void test_series_are_found_again(void) {
  mp_shared *sh = segment(2);
  if (sh == NULL) return;
  mp_worker_metrics *m1 = mp_shared_metrics(sh, 1);
  mp_worker_metrics *m2 = mp_shared_metrics(sh, 2);
  CHECK(m1 != NULL && m2 != NULL && m1 != m2);
  CHECK(mp_shared_metrics(sh, 0) == NULL && mp_shared_metrics(sh, 3) == NULL);
  mp_metrics_series *a = mp_metrics_series_of(m1, 1, "/users/:id", 10);
  mp_metrics_series *b = mp_metrics_series_of(m1, 2, "/users/:id", 10);
  mp_metrics_series *c = mp_metrics_series_of(m1, 1, "/users", 6);
  CHECK(a != b && a != c && b != c);
  CHECK(mp_metrics_series_used(a) && a->method == 1 && a->label_len == 10);
  CHECK(mp_metrics_series_of(m1, 1, "/users/:id", 10) == a);
  /* Another worker's block has series of its own. */
  CHECK(mp_metrics_series_of(m2, 1, "/users/:id", 10) != a);

  /* A worker that replaces this one maps the same segment and finds the
   * series (and its counts) where they were. */
  mp_metrics_count(a, 200, 3 * MS, 10, 20, 30, 40);
  int fd = dup(mp_shared_fd(sh));
  mp_shared *again = NULL;
  CHECK_EQ_INT(mp_shared_attach(fd, &again), 0);
  if (again != NULL) {
    mp_worker_metrics *m = mp_shared_metrics(again, 1);
    mp_metrics_series *found = mp_metrics_series_of(m, 1, "/users/:id", 10);
    CHECK(found != a); /* another mapping, */
    CHECK_EQ_INT(found - m->series, a - m1->series); /* the same slot */
    CHECK_EQ_INT(mp_metrics_get(&found->requests[1]), 1);
    mp_shared_close(again);
  }
  mp_shared_close(sh);
}

static void test_counting(void) {
  mp_shared *sh = segment(1);
  if (sh == NULL) return;
  mp_metrics_series *s = mp_metrics_series_of(mp_shared_metrics(sh, 1), 1,
                                              "/x", 2);
  mp_metrics_count(s, 101, 0, 1, 2, 3, 4);
  mp_metrics_count(s, 204, 100000, 1, 2, 3, 4);     /* = 100 us: first */
  mp_metrics_count(s, 399, 100001, 1, 2, 3, 4);     /* just past: second */
  mp_metrics_count(s, 404, 10000 * MS, 1, 2, 3, 4); /* = 10 s: last bound */
  mp_metrics_count(s, 500, 10001 * MS, 1, 2, 3, 4); /* past it: +Inf */
  mp_metrics_count(s, 0, 1, 1, 2, 3, 4);            /* no status: 5xx */
  CHECK_EQ_INT(s->requests[0], 1);
  CHECK_EQ_INT(s->requests[1], 1);
  CHECK_EQ_INT(s->requests[2], 1);
  CHECK_EQ_INT(s->requests[3], 1);
  CHECK_EQ_INT(s->requests[4], 2);
  CHECK_EQ_INT(s->buckets[0], 3); /* 0, 1 ns and 100 us */
  CHECK_EQ_INT(s->buckets[1], 1);
  CHECK_EQ_INT(s->buckets[MP_METRICS_BOUNDS - 1], 1);
  CHECK_EQ_INT(s->buckets[MP_METRICS_BOUNDS], 1);
  CHECK_EQ_INT(s->duration_ns, 100000 + 100001 + 20001 * MS + 1);
  CHECK_EQ_INT(s->received_bytes, 6);
  CHECK_EQ_INT(s->sent_bytes, 12);
  CHECK_EQ_INT(s->lua_bytes, 18);
  CHECK_EQ_INT(s->c_bytes, 24);
  /* The bounds rise, and their text is what they are in seconds. */
  for (unsigned i = 0; i < MP_METRICS_BOUNDS; i++) {
    if (i > 0) CHECK(mp_metrics_bound_ns[i] > mp_metrics_bound_ns[i - 1]);
    CHECK_EQ_INT((uint64_t)(strtod(mp_metrics_bound_text[i], NULL) * 1e9 + 0.5),
                 mp_metrics_bound_ns[i]);
  }
  mp_shared_close(sh);
}

static void test_bounded(void) {
  mp_shared *sh = segment(1);
  if (sh == NULL) return;
  mp_worker_metrics *m = mp_shared_metrics(sh, 1);
  /* A label past the limit is cut: two that differ only after it are one
   * series. */
  char long1[300], long2[300];
  memset(long1, 'a', sizeof long1);
  memcpy(long2, long1, sizeof long2);
  long2[299] = 'b';
  mp_metrics_series *l = mp_metrics_series_of(m, 1, long1, sizeof long1);
  CHECK_EQ_INT(l->label_len, MP_METRICS_LABEL_MAX);
  CHECK(mp_metrics_series_of(m, 1, long2, sizeof long2) == l);
  /* Every slot but the last can be taken; then the overflow series. */
  mp_metrics_series *over = NULL;
  for (unsigned i = 0; i < MP_METRICS_SERIES + 10; i++) {
    char label[32];
    int n = snprintf(label, sizeof label, "/r%u", i);
    mp_metrics_series *s = mp_metrics_series_of(m, 1, label, (size_t)n);
    if (s == &m->series[MP_METRICS_SERIES - 1]) over = s;
  }
  CHECK(over != NULL);
  if (over != NULL) {
    CHECK_EQ_INT(over->method, MP_METRICS_NO_METHOD);
    CHECK_SPAN(over->label, over->label_len, MP_METRICS_OVERFLOW);
  }
  unsigned used = 0;
  for (unsigned i = 0; i < MP_METRICS_SERIES; i++)
    used += mp_metrics_series_used(&m->series[i]) ? 1 : 0;
  CHECK_EQ_INT(used, MP_METRICS_SERIES);
  /* Series made before the table filled are still found. */
  CHECK(mp_metrics_series_of(m, 1, long1, sizeof long1) == l);
  mp_shared_close(sh);
}

int main(void) {
  test_series_are_found_again();
  test_counting();
  test_bounded();
  return check_report("test_metrics");
}
