/*
 * Publishing a worker's figures (see publish.h). The worker's own counters
 * (mp_stats) start at zero in every process; the block's run since the
 * segment was made, so each is written as what the block held when this
 * process took the worker's place plus what this process has counted.
 */
#include "publish.h"

#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "metrics.h"
#include "pool.h"
#include "router.h"
#include "shared.h"

enum { BASE_REQUESTS, BASE_ACCEPTED, BASE_REFUSED, BASE_LIMIT_HITS,
       BASE_MALLOCS };

void mp_publish_attach(mp_server *s) {
  mp_worker_metrics *m = mp_shared_metrics(s->shared, s->id);
  s->metrics = m;
  if (m == NULL) return;
  s->metrics_base[BASE_REQUESTS] = mp_metrics_get(&m->w.requests);
  s->metrics_base[BASE_ACCEPTED] = mp_metrics_get(&m->w.accepted);
  s->metrics_base[BASE_REFUSED] = mp_metrics_get(&m->w.refused);
  s->metrics_base[BASE_LIMIT_HITS] = mp_metrics_get(&m->w.memory_limit_hits);
  s->metrics_base[BASE_MALLOCS] = mp_metrics_get(&m->w.mallocs);
  /* The gauges are this process's from now on. */
  mp_metrics_set(&m->w.pid, (uint64_t)getpid());
  mp_metrics_set(&m->w.connections, 0);
  mp_metrics_set(&m->w.unsent_bytes, 0);
  mp_metrics_set(&m->w.lua_heap_bytes, 0);
  mp_metrics_set(&m->w.threads, 0);
  mp_metrics_set(&m->w.timers_pending, 0);
  mp_metrics_set(&m->w.timers_running, 0);
  mp_metrics_set(&m->w.upstream_in_use, 0);
  mp_metrics_set(&m->w.upstream_idle, 0);
  mp_metrics_set(&m->w.pg_connections, 0);
}

void mp_publish_worker(mp_server *s) {
  mp_worker_metrics *m = s->metrics;
  if (m == NULL) return;
  const uint64_t *base = s->metrics_base;
  mp_metrics_set(&m->w.requests, base[BASE_REQUESTS] + s->stats.requests);
  mp_metrics_set(&m->w.accepted, base[BASE_ACCEPTED] + s->stats.accepted);
  mp_metrics_set(&m->w.refused, base[BASE_REFUSED] + s->stats.refused);
  mp_metrics_set(&m->w.memory_limit_hits,
                 base[BASE_LIMIT_HITS] + s->stats.memory_limit_hits);
  mp_metrics_set(&m->w.mallocs, base[BASE_MALLOCS] + mp_malloc_count);
  mp_metrics_set(&m->w.connections, s->nconns);
  mp_metrics_set(&m->w.lua_heap_bytes,
                 s->code != NULL ? s->code_ops->heap_size(s->code) : 0);
  mp_metrics_set(&m->w.threads, s->nthreads);
  mp_metrics_set(&m->w.timers_pending, s->ntimers);
  mp_metrics_set(&m->w.timers_running, s->ntimer_runs);
}

void mp_publish_all(mp_server *s) {
  if (s->metrics == NULL) return;
  mp_publish_worker(s);
  mp_metrics_set(&s->metrics->w.unsent_bytes, mp_conn_unsent_all(s));
}

/* The series r counts in: its method, and its route's pattern or the
 * label of what answered it instead. A route's series is kept with the
 * route's figures, so a routed request finds it without a lookup. */
static mp_metrics_series *series_of(mp_request *r) {
  mp_server *s = r->srv;
  mp_worker_metrics *m = s->metrics;
  int method = r->msg.method;
  const char *label = MP_LABEL_UNMATCHED;
  if (r->answered_by == MP_BY_CORE) label = MP_LABEL_CORE;
  if (r->answered_by == MP_BY_FILES) label = MP_LABEL_STATIC;
  const mp_route *route = r->match.route;
  if (r->answered_by != MP_BY_ROUTER || route == NULL || route->fallback)
    return mp_metrics_series_of(m, method, label, strlen(label));
  /* A request on code since replaced has a route of the old router. */
  mp_route_stats *rs = NULL;
  if (r->code == s->code && route->index < s->stats.nroutes &&
      method == route->method)
    rs = &s->stats.routes[route->index];
  if (rs != NULL && rs->series != NULL) return rs->series;
  mp_metrics_series *series = mp_metrics_series_of(
      m, method, route->pattern, strlen(route->pattern));
  if (rs != NULL) rs->series = series;
  return series;
}

void mp_publish_request(mp_request *r, uint64_t ns) {
  if (r->srv->metrics == NULL) return;
  uint64_t received = (uint64_t)r->msg.head_len + r->msg.body_len;
  uint64_t sent = r->head_only ? 0 : r->body_bytes + (uint64_t)r->sent;
  mp_metrics_count(series_of(r), r->aborted ? 499 : r->status, ns, received,
                   sent, r->charge.lua_bytes, r->charge.c_bytes);
}

void mp_publish_invalid(mp_server *s, int status, uint64_t received,
                        uint64_t sent) {
  if (s->metrics == NULL) return;
  mp_metrics_series *series = mp_metrics_series_of(
      s->metrics, MP_METRICS_NO_METHOD, MP_LABEL_INVALID,
      sizeof MP_LABEL_INVALID - 1);
  mp_metrics_count(series, status, 0, received, sent, 0, 0);
  mp_publish_worker(s);
}
