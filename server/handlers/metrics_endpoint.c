/*
 * The metrics endpoint (see metrics_endpoint.h).
 *
 * Every series is exposed once: request series are summed over workers
 * (each worker keeps its own copy of a (method, route) series, metrics.h),
 * worker scalars are summed too, except the Lua heap, which is per worker
 * with a `worker` label; nothing is exposed both ways. The text is written
 * with printf into a pooled buffer: a scrape is rare next to requests, so
 * this side reads plainly and allocates what it needs (the list of series
 * it sums) for the length of one scrape.
 *
 * Each figure is read once, with an atomic load, so a scrape racing a
 * worker sees every counter at a value it really had. What must agree is
 * derived from one set of reads: a histogram's cumulative buckets and its
 * _count come from the same bucket reads, so they always agree, though
 * moonport_http_requests_total, read apart, may be one request ahead or
 * behind while requests complete.
 */
#include "metrics_endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "errors.h"
#include "metrics.h"
#include "publish.h"
#include "response.h"
#include "shared.h"

#define METRICS_PATH "/__moonport/metrics"
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

bool mp_metrics_endpoint(mp_server *s, mp_request *r) {
  size_t plen;
  const char *path = mp_request_path(r, &plen);
  if (plen != sizeof METRICS_PATH - 1 ||
      memcmp(path, METRICS_PATH, plen) != 0 ||
      (r->msg.method != HTTP_GET && r->msg.method != HTTP_HEAD))
    return false;
  if (!mp_conn_is_loopback(r->conn) &&
      !mp_conn_peer_in(r->conn, &s->cfg->metrics_allow))
    return false;
  mp_buf text = {.pool = &s->out_pool};
  if (mp_metrics_text(s, &text) != 0) {
    mp_response_error(r, 500, "out of memory");
  } else {
    mp_response_header(r, "Cache-Control", 13, "no-store", 8);
    mp_response_send(r, text.data, text.len, CONTENT_TYPE);
  }
  mp_buf_release(&text);
  return true;
}

/* The HELP and TYPE lines of a family. */
static int family(mp_buf *out, const char *name, const char *type,
                  const char *help) {
  return mp_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                       type);
}

/* A family of one series without labels, and its value. */
static int scalar(mp_buf *out, const char *name, const char *type,
                  const char *help, unsigned long long value) {
  int rc = family(out, name, type, help);
  return rc == 0 ? mp_buf_printf(out, "%s %llu\n", name, value) : rc;
}

/* One (method, route) summed over workers. */
typedef struct summed {
  const mp_metrics_series *key; /* label and method: any worker's copy */
  char labels[MP_METRICS_LABEL_MAX * 2 + 48]; /* route="...",method="..." */
  uint64_t requests[MP_METRICS_CLASSES];
  uint64_t buckets[MP_METRICS_BUCKETS];
  uint64_t duration_ns, received, sent, lua_bytes, c_bytes;
} summed;

static int key_cmp(const void *a, const void *b) {
  const mp_metrics_series *x = *(const mp_metrics_series *const *)a;
  const mp_metrics_series *y = *(const mp_metrics_series *const *)b;
  size_t n = x->label_len < y->label_len ? x->label_len : y->label_len;
  int c = memcmp(x->label, y->label, n);
  if (c != 0) return c;
  if (x->label_len != y->label_len) return x->label_len < y->label_len ? -1 : 1;
  return (int)x->method - (int)y->method;
}

static bool same_key(const mp_metrics_series *x, const mp_metrics_series *y) {
  return x->method == y->method && x->label_len == y->label_len &&
         memcmp(x->label, y->label, x->label_len) == 0;
}

/* `route="...",method="..."` for a series, its label escaped as the
 * exposition format wants (backslash, double quote, line feed). */
static void label_text(const mp_metrics_series *k, char *out, size_t cap) {
  size_t n = 0;
  n += (size_t)snprintf(out, cap, "route=\"");
  for (unsigned i = 0; i < k->label_len && n + 3 < cap; i++) {
    char ch = k->label[i];
    if (ch == '\\' || ch == '"') {
      out[n++] = '\\';
      out[n++] = ch;
    } else if (ch == '\n') {
      out[n++] = '\\';
      out[n++] = 'n';
    } else {
      out[n++] = ch;
    }
  }
  const char *method = k->method == MP_METRICS_NO_METHOD
                           ? "NONE"
                           : llhttp_method_name((llhttp_method_t)k->method);
  snprintf(out + n, cap - n, "\",method=\"%s\"", method);
}

/* Every worker's series, summed by (method, route) into *out (sorted by
 * route, then method; *n of them). Returns 0 or MP_NOMEM. */
static int sum_series(mp_shared *sh, summed **out, size_t *n) {
  unsigned nw = mp_shared_nslots(sh);
  size_t cap = (size_t)nw * MP_METRICS_SERIES, used = 0, groups = 0;
  const mp_metrics_series **all = NULL;
  summed *sums = NULL;
  *out = NULL;
  *n = 0;
  all = malloc((cap ? cap : 1) * sizeof *all);
  if (all == NULL) goto err;
  for (unsigned id = 1; id <= nw; id++) {
    const mp_worker_metrics *m = mp_shared_metrics(sh, id);
    for (unsigned i = 0; i < MP_METRICS_SERIES; i++)
      if (mp_metrics_series_used(&m->series[i])) all[used++] = &m->series[i];
  }
  qsort(all, used, sizeof *all, key_cmp);
  sums = calloc(used ? used : 1, sizeof *sums);
  if (sums == NULL) goto err;
  for (size_t i = 0; i < used; i++) {
    const mp_metrics_series *x = all[i];
    if (groups == 0 || !same_key(sums[groups - 1].key, x)) {
      sums[groups].key = x;
      label_text(x, sums[groups].labels, sizeof sums[groups].labels);
      groups++;
    }
    summed *g = &sums[groups - 1];
    for (unsigned k = 0; k < MP_METRICS_CLASSES; k++)
      g->requests[k] += mp_metrics_get(&x->requests[k]);
    for (unsigned k = 0; k < MP_METRICS_BUCKETS; k++)
      g->buckets[k] += mp_metrics_get(&x->buckets[k]);
    g->duration_ns += mp_metrics_get(&x->duration_ns);
    g->received += mp_metrics_get(&x->received_bytes);
    g->sent += mp_metrics_get(&x->sent_bytes);
    g->lua_bytes += mp_metrics_get(&x->lua_bytes);
    g->c_bytes += mp_metrics_get(&x->c_bytes);
  }
  free(all);
  *out = sums;
  *n = groups;
  return 0;

err:
  free(all);
  free(sums);
  return MP_NOMEM;
}

/* The request families: counts by status class, the latency histogram,
 * and the byte counters. */
static int request_families(mp_buf *out, const summed *g, size_t n) {
  static const char *const classes[MP_METRICS_CLASSES] = {"1xx", "2xx", "3xx",
                                                          "4xx", "5xx"};
  int rc = family(out, "moonport_http_requests_total", "counter",
                  "Requests answered, by route pattern, method and status "
                  "class.");
  for (size_t i = 0; rc == 0 && i < n; i++)
    for (unsigned k = 0; rc == 0 && k < MP_METRICS_CLASSES; k++)
      if (g[i].requests[k] > 0)
        rc = mp_buf_printf(
            out, "moonport_http_requests_total{%s,code=\"%s\"} %llu\n",
            g[i].labels, classes[k], (unsigned long long)g[i].requests[k]);
  if (rc == 0)
    rc = family(out, "moonport_http_request_duration_seconds", "histogram",
                "Time from a request's complete head to its handler's end.");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    uint64_t cum = 0;
    for (unsigned k = 0; rc == 0 && k < MP_METRICS_BUCKETS; k++) {
      cum += g[i].buckets[k];
      rc = mp_buf_printf(
          out,
          "moonport_http_request_duration_seconds_bucket{%s,le=\"%s\"} "
          "%llu\n",
          g[i].labels,
          k < MP_METRICS_BOUNDS ? mp_metrics_bound_text[k] : "+Inf",
          (unsigned long long)cum);
    }
    if (rc == 0)
      rc = mp_buf_printf(
          out,
          "moonport_http_request_duration_seconds_sum{%s} %.9f\n"
          "moonport_http_request_duration_seconds_count{%s} %llu\n",
          g[i].labels, (double)g[i].duration_ns / 1e9, g[i].labels,
          (unsigned long long)cum);
  }
  static const struct {
    const char *name, *help;
    size_t off;
  } sums[] = {
      {"moonport_http_request_received_bytes_total",
       "Bytes of request heads and decoded request bodies.",
       offsetof(summed, received)},
      {"moonport_http_response_sent_bytes_total",
       "Bytes of response bodies sent.", offsetof(summed, sent)},
      {"moonport_http_request_lua_allocated_bytes_total",
       "Lua bytes allocated while handling requests.",
       offsetof(summed, lua_bytes)},
      {"moonport_http_request_c_allocated_bytes_total",
       "C bytes the core charged to requests.", offsetof(summed, c_bytes)},
  };
  for (size_t f = 0; rc == 0 && f < sizeof sums / sizeof sums[0]; f++) {
    rc = family(out, sums[f].name, "counter", sums[f].help);
    for (size_t i = 0; rc == 0 && i < n; i++) {
      uint64_t v;
      memcpy(&v, (const char *)&g[i] + sums[f].off, sizeof v);
      rc = mp_buf_printf(out, "%s{%s} %llu\n", sums[f].name, g[i].labels,
                         (unsigned long long)v);
    }
  }
  return rc;
}

/* A scalar summed over every worker's block. */
static uint64_t total_of(mp_shared *sh, size_t off) {
  uint64_t sum = 0;
  unsigned nw = mp_shared_nslots(sh);
  for (unsigned id = 1; id <= nw; id++)
    sum += mp_metrics_get(
        (const uint64_t *)(const void *)((const char *)&mp_shared_metrics(sh, id)->w + off));
  return sum;
}

/* The worker scalars, summed over workers (the Lua heap: per worker). */
static int worker_families(mp_server *s, mp_buf *out) {
  static const struct {
    const char *name, *type, *help;
    size_t off;
  } scalars[] = {
      {"moonport_http_connections_open", "gauge",
       "Client connections open.", offsetof(mp_metrics_scalars, connections)},
      {"moonport_http_connections_accepted_total", "counter",
       "Client connections accepted.",
       offsetof(mp_metrics_scalars, accepted)},
      {"moonport_http_connections_refused_total", "counter",
       "Client connections closed at once past --max-connections.",
       offsetof(mp_metrics_scalars, refused)},
      {"moonport_http_unsent_bytes", "gauge",
       "Response bytes waiting for clients to take them.",
       offsetof(mp_metrics_scalars, unsent_bytes)},
      {"moonport_request_memory_limit_hits_total", "counter",
       "Requests failed for going over --request-memory-limit.",
       offsetof(mp_metrics_scalars, memory_limit_hits)},
      {"moonport_core_mallocs_total", "counter",
       "malloc calls the C core made for its pools and buffers.",
       offsetof(mp_metrics_scalars, mallocs)},
      {"moonport_worker_restarts_total", "counter",
       "Workers that exited or were killed and were replaced.",
       offsetof(mp_metrics_scalars, restarts)},
      {"moonport_lua_threads", "gauge", "Light threads alive.",
       offsetof(mp_metrics_scalars, threads)},
      {"moonport_timers_pending", "gauge", "Timers waiting to run.",
       offsetof(mp_metrics_scalars, timers_pending)},
      {"moonport_timers_running", "gauge", "Timers' runs in progress.",
       offsetof(mp_metrics_scalars, timers_running)},
      {"moonport_upstream_connections_in_use", "gauge",
       "Outbound sockets (moonport.socket, moonport.http) held by requests.",
       offsetof(mp_metrics_scalars, upstream_in_use)},
      {"moonport_upstream_connections_idle", "gauge",
       "Outbound sockets idle in keep-alive pools.",
       offsetof(mp_metrics_scalars, upstream_idle)},
      {"moonport_upstream_connect_errors_total", "counter",
       "Outbound TCP connects that failed.",
       offsetof(mp_metrics_scalars, upstream_errors)},
      {"moonport_pg_connections", "gauge",
       "PostgreSQL connections up (moonport.pg).",
       offsetof(mp_metrics_scalars, pg_connections)},
      {"moonport_pg_connection_errors_total", "counter",
       "PostgreSQL connections lost or refused.",
       offsetof(mp_metrics_scalars, pg_errors)},
  };
  mp_shared *sh = s->shared;
  unsigned nw = mp_shared_nslots(sh);
  int rc = scalar(out, "moonport_workers", "gauge", "Worker processes.", nw);
  for (size_t i = 0; rc == 0 && i < sizeof scalars / sizeof scalars[0]; i++)
    rc = scalar(out, scalars[i].name, scalars[i].type, scalars[i].help,
                total_of(sh, scalars[i].off));
  if (rc == 0)
    rc = family(out, "moonport_lua_heap_bytes", "gauge",
                "Bytes live in a worker's Lua heap (after its collector's "
                "last steps).");
  for (unsigned id = 1; rc == 0 && id <= nw; id++)
    rc = mp_buf_printf(out, "moonport_lua_heap_bytes{worker=\"%u\"} %llu\n", id,
                       (unsigned long long)mp_metrics_get(
                           &mp_shared_metrics(sh, id)->w.lua_heap_bytes));
  return rc;
}

/* The shared stores' usage and what the last reloads did. */
static int segment_families(mp_server *s, mp_buf *out) {
  static const char *const names[MP_NSTORES] = {
      [MP_STORE_SHARED] = "shared", [MP_STORE_MOCK] = "mock_state",
      [MP_STORE_JOURNAL] = "mock_journal"};
  size_t cap[MP_NSTORES], used[MP_NSTORES];
  unsigned entries[MP_NSTORES];
  for (unsigned i = 0; i < MP_NSTORES; i++)
    mp_shared_usage(mp_shared_store(s->shared, i), &cap[i], &used[i],
                    &entries[i]);
  int rc = family(out, "moonport_shared_store_capacity_bytes", "gauge",
                  "Bytes a shared store's entries may take.");
  for (unsigned i = 0; rc == 0 && i < MP_NSTORES; i++)
    rc = mp_buf_printf(
        out, "moonport_shared_store_capacity_bytes{store=\"%s\"} %zu\n",
        names[i], cap[i]);
  if (rc == 0)
    rc = family(out, "moonport_shared_store_used_bytes", "gauge",
                "Bytes a shared store's entries take.");
  for (unsigned i = 0; rc == 0 && i < MP_NSTORES; i++)
    rc = mp_buf_printf(out,
                       "moonport_shared_store_used_bytes{store=\"%s\"} %zu\n",
                       names[i], used[i]);
  if (rc == 0)
    rc = family(out, "moonport_shared_store_entries", "gauge",
                "Live entries in a shared store.");
  for (unsigned i = 0; rc == 0 && i < MP_NSTORES; i++)
    rc = mp_buf_printf(out, "moonport_shared_store_entries{store=\"%s\"} %u\n",
                       names[i], entries[i]);

  const mp_reload_status *st = mp_shared_reload(s->shared);
  if (rc == 0)
    rc = scalar(out, "moonport_reloads_total", "counter",
                "Reloads that loaded new code.",
                (unsigned long long)st->reloads);
  if (rc == 0)
    rc = scalar(out, "moonport_reload_failures_total", "counter",
                "Reloads refused because the new code failed to load.",
                (unsigned long long)st->failures);
  if (rc == 0)
    rc = scalar(out, "moonport_reload_last_success", "gauge",
                "1 when the last reload attempt loaded, else 0.",
                st->last_ok ? 1 : 0);
  if (rc == 0)
    rc = scalar(out, "moonport_code_generation", "gauge",
                "Code versions loaded, 1 at startup.",
                (unsigned long long)st->generation);
  return rc;
}

int mp_metrics_text(mp_server *s, mp_buf *out) {
  summed *sums = NULL;
  size_t n = 0;
  mp_publish_all(s); /* this worker's own gauges, as of now */
  int rc = sum_series(s->shared, &sums, &n);
  if (rc == 0) rc = request_families(out, sums, n);
  if (rc == 0) rc = worker_families(s, out);
  if (rc == 0) rc = segment_families(s, out);
  free(sums);
  return rc;
}
