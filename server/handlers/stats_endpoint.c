/*
 * The stats endpoint (see stats_endpoint.h). The JSON is written with
 * printf into a pooled buffer; it is asked for rarely, so clarity beats
 * speed here.
 */
#include "stats_endpoint.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "errors.h"
#include "metrics.h"
#include "publish.h"
#include "shared.h"
#include "str.h"

#define STATS_PATH "/__moonport/stats"

bool mp_stats_endpoint(mp_server *s, mp_request *r) {
  size_t plen;
  const char *path = mp_request_path(r, &plen);
  if (plen != sizeof STATS_PATH - 1 || memcmp(path, STATS_PATH, plen) != 0 ||
      (r->msg.method != HTTP_GET && r->msg.method != HTTP_HEAD) ||
      !mp_conn_is_loopback(r->conn))
    return false;
  mp_buf json = {.pool = &s->out_pool};
  if (mp_stats_json(s, &json) != 0) {
    mp_response_error(r, 500, "out of memory");
  } else {
    mp_response_header(r, "Cache-Control", 13, "no-store", 8);
    mp_response_send(r, json.data, json.len, "application/json");
  }
  mp_buf_release(&json);
  return true;
}

/* "reload":{...}: what the master's last reloads did. */
static int reload_json(mp_server *s, mp_buf *out) {
  const mp_reload_status *st = mp_shared_reload(s->shared);
  char msg[sizeof st->last_error];
  memcpy(msg, st->last_error, sizeof msg);
  msg[sizeof msg - 1] = '\0';
  char quoted[sizeof msg * 6 + 3];
  size_t n = mp_str_json(quoted, sizeof quoted - 1, msg, strlen(msg));
  quoted[n] = '\0';
  return mp_buf_printf(
      out,
      "\"reload\":{\"generation\":%llu,\"reloads\":%llu,"
      "\"failures\":%llu,\"last_ok\":%s,\"last_error\":%s}",
      (unsigned long long)st->generation, (unsigned long long)st->reloads,
      (unsigned long long)st->failures, st->last_ok ? "true" : "false",
      msg[0] ? quoted : "null");
}

/* "name":{...}: how full store i is. */
static int store_json(mp_server *s, mp_buf *out, const char *name,
                      unsigned i) {
  size_t cap = 0, used = 0;
  unsigned entries = 0;
  mp_shared_usage(mp_shared_store(s->shared, i), &cap, &used, &entries);
  return mp_buf_printf(out,
                       "\"%s\":{\"capacity_bytes\":%zu,\"used_bytes\":%zu,"
                       "\"entries\":%u},",
                       name, cap, used, entries);
}

/* The figures every worker published (metrics.h), as "workers" (one
 * object per worker id, shaped as "worker" is, plus its restarts) and
 * "total" (their sums). Counters in the blocks run since the master
 * started, across a worker's replacements; gauges are the current
 * worker's. Each figure is read once, so total is the sum of the objects
 * written, whatever workers do meanwhile. */
static int workers_json(mp_server *s, mp_buf *out) {
  enum { REQ, ACC, REF, UNSENT, OPEN, HEAP, MALLOCS, HITS, THREADS, PEND,
         RUN, RESTARTS, NFIG };
  uint64_t total[NFIG] = {0};
  unsigned n = mp_shared_nslots(s->shared);
  mp_publish_all(s); /* this worker's own figures, as of now */
  int rc = mp_buf_printf(out, "\"workers\":[");
  for (unsigned id = 1; rc == 0 && id <= n; id++) {
    mp_worker_metrics *m = mp_shared_metrics(s->shared, id);
    const mp_metrics_scalars *w = &m->w;
    uint64_t f[NFIG] = {[REQ] = mp_metrics_get(&w->requests),
                        [ACC] = mp_metrics_get(&w->accepted),
                        [REF] = mp_metrics_get(&w->refused),
                        [UNSENT] = mp_metrics_get(&w->unsent_bytes),
                        [OPEN] = mp_metrics_get(&w->connections),
                        [HEAP] = mp_metrics_get(&w->lua_heap_bytes),
                        [MALLOCS] = mp_metrics_get(&w->mallocs),
                        [HITS] = mp_metrics_get(&w->memory_limit_hits),
                        [THREADS] = mp_metrics_get(&w->threads),
                        [PEND] = mp_metrics_get(&w->timers_pending),
                        [RUN] = mp_metrics_get(&w->timers_running),
                        [RESTARTS] = mp_metrics_get(&w->restarts)};
    for (unsigned i = 0; i < NFIG; i++) total[i] += f[i];
    rc = mp_buf_printf(
        out,
        "%s{\"id\":%u,\"pid\":%llu,\"requests\":%llu,"
        "\"connections\":{\"open\":%llu,\"accepted\":%llu,"
        "\"refused\":%llu,\"unsent_bytes\":%llu},"
        "\"lua_heap_bytes\":%llu,\"mallocs\":%llu,"
        "\"memory_limit_hits\":%llu,\"threads\":%llu,"
        "\"timers\":{\"pending\":%llu,\"running\":%llu},"
        "\"restarts\":%llu}",
        id > 1 ? "," : "", id, (unsigned long long)mp_metrics_get(&w->pid),
        (unsigned long long)f[REQ], (unsigned long long)f[OPEN],
        (unsigned long long)f[ACC], (unsigned long long)f[REF],
        (unsigned long long)f[UNSENT], (unsigned long long)f[HEAP],
        (unsigned long long)f[MALLOCS], (unsigned long long)f[HITS],
        (unsigned long long)f[THREADS], (unsigned long long)f[PEND],
        (unsigned long long)f[RUN], (unsigned long long)f[RESTARTS]);
  }
  if (rc == 0)
    rc = mp_buf_printf(
        out,
        "],\"total\":{\"workers\":%u,\"requests\":%llu,"
        "\"connections\":{\"open\":%llu,\"accepted\":%llu,"
        "\"refused\":%llu,\"unsent_bytes\":%llu},"
        "\"lua_heap_bytes\":%llu,\"mallocs\":%llu,"
        "\"memory_limit_hits\":%llu,\"threads\":%llu,"
        "\"timers\":{\"pending\":%llu,\"running\":%llu},"
        "\"restarts\":%llu},",
        n, (unsigned long long)total[REQ], (unsigned long long)total[OPEN],
        (unsigned long long)total[ACC], (unsigned long long)total[REF],
        (unsigned long long)total[UNSENT], (unsigned long long)total[HEAP],
        (unsigned long long)total[MALLOCS], (unsigned long long)total[HITS],
        (unsigned long long)total[THREADS], (unsigned long long)total[PEND],
        (unsigned long long)total[RUN], (unsigned long long)total[RESTARTS]);
  return rc;
}

int mp_stats_json(mp_server *s, mp_buf *out) {
  const mp_stats *st = &s->stats;
  int rc = mp_buf_printf(
      out,
      "{\"worker\":{\"id\":%u,\"pid\":%d,\"requests\":%llu,"
      "\"connections\":{\"open\":%u,\"accepted\":%llu,\"refused\":%llu,"
      "\"unsent_bytes\":%zu},"
      "\"lua_heap_bytes\":%zu,\"mallocs\":%llu,"
      "\"memory_limit_hits\":%llu,\"threads\":%u,"
      "\"timers\":{\"pending\":%u,\"running\":%u}},",
      s->id, (int)getpid(), (unsigned long long)st->requests, s->nconns,
      (unsigned long long)st->accepted, (unsigned long long)st->refused,
      mp_conn_unsent_all(s), s->code_ops->heap_size(s->code),
      (unsigned long long)mp_malloc_count,
      (unsigned long long)st->memory_limit_hits, s->nthreads, s->ntimers,
      s->ntimer_runs);
  if (rc == 0) rc = workers_json(s, out);
  if (rc == 0) rc = store_json(s, out, "shared", MP_STORE_SHARED);
  if (rc == 0) rc = store_json(s, out, "mock_state", MP_STORE_MOCK);
  if (rc == 0) rc = store_json(s, out, "mock_journal", MP_STORE_JOURNAL);
  if (rc == 0)
    rc = mp_buf_printf(out, "\"routes\":[");
  for (unsigned i = 0; rc == 0 && i < st->nroutes; i++) {
    const mp_route *route = mp_router_route(s->router, i);
    const mp_route_stats *r = &st->routes[i];
    double n = r->count ? (double)r->count : 1.0;
    char pattern[600];
    size_t plen = mp_str_json(pattern, sizeof pattern - 1, route->pattern,
                              strlen(route->pattern));
    pattern[plen] = '\0';
    rc = mp_buf_printf(
        out,
        "%s{\"method\":\"%s\",\"pattern\":%s,\"count\":%llu,"
        "\"lua_bytes\":{\"mean\":%.1f,\"max\":%llu,\"total\":%llu},"
        "\"c_bytes\":{\"mean\":%.1f,\"total\":%llu},"
        "\"handler_ms\":{\"p50\":%.3f,\"p99\":%.3f}}",
        i ? "," : "", llhttp_method_name((llhttp_method_t)route->method),
        pattern, (unsigned long long)r->count, (double)r->lua_bytes / n,
        (unsigned long long)r->lua_max, (unsigned long long)r->lua_bytes,
        (double)r->c_bytes / n, (unsigned long long)r->c_bytes,
        (double)mp_stats_percentile_us(r, 0.50) / 1000.0,
        (double)mp_stats_percentile_us(r, 0.99) / 1000.0);
  }
  if (rc == 0)
    rc = mp_buf_printf(out, "],");
  if (rc == 0)
    rc = reload_json(s, out);
  if (rc == 0)
    rc = mp_buf_printf(out, "}");
  return rc;
}
