/*
 * The resolver (see dns.h). The cache is a short list, most recently
 * resolved first, with at most MAX_CACHED names: a worker talks to a few
 * hosts, and a list that short is searched faster than a hash is built.
 * A lookup in flight lives until libuv calls back, even when cancelled;
 * it then only adds its answer to the cache.
 */
#include "dns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

#define MAX_CACHED 64

typedef struct cached {
  struct cached *next;
  uint64_t expires; /* loop time, ms */
  struct sockaddr_storage addr;
  char host[];
} cached;

struct mp_dns_query {
  uv_getaddrinfo_t req;
  mp_dns *dns;
  mp_dns_query *next, *prev; /* in flight */
  mp_dns_cb cb;              /* NULL once cancelled */
  void *ud;
  int port;
  char host[];
};

struct mp_dns {
  uv_loop_t *loop;
  uint64_t ttl_ms;
  cached *cache;
  unsigned ncached;
  mp_dns_query *flight;
  bool closing;
};

mp_dns *mp_dns_new(uv_loop_t *loop, uint64_t ttl_ms) {
  mp_dns *d = calloc(1, sizeof *d);
  if (d == NULL) return NULL;
  d->loop = loop;
  d->ttl_ms = ttl_ms;
  return d;
}

static void free_cache(mp_dns *d) {
  while (d->cache != NULL) {
    cached *c = d->cache;
    d->cache = c->next;
    free(c);
  }
  d->ncached = 0;
}

void mp_dns_free(mp_dns *d) {
  if (d == NULL) return;
  free_cache(d);
  if (d->flight == NULL) {
    free(d);
    return;
  }
  /* The last lookup to come back frees it. */
  d->closing = true;
  for (mp_dns_query *q = d->flight; q != NULL; q = q->next) {
    q->cb = NULL;
    uv_cancel((uv_req_t *)&q->req);
  }
}

static void set_port(struct sockaddr_storage *a, int port) {
  if (a->ss_family == AF_INET6)
    ((struct sockaddr_in6 *)a)->sin6_port = htons((uint16_t)port);
  else
    ((struct sockaddr_in *)a)->sin_port = htons((uint16_t)port);
}

static int literal(const char *host, int port, struct sockaddr_storage *out) {
  memset(out, 0, sizeof *out);
  struct sockaddr_in *v4 = (struct sockaddr_in *)out;
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    set_port(out, port);
    return 0;
  }
  /* "[::1]" as in a URL, or a bare "::1". */
  char buf[INET6_ADDRSTRLEN + 2];
  size_t n = strlen(host);
  if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof buf) {
    memcpy(buf, host + 1, n - 2);
    buf[n - 2] = '\0';
    host = buf;
  }
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
  if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    set_port(out, port);
    return 0;
  }
  return MP_NOT_FOUND;
}

static cached *lookup(mp_dns *d, const char *host) {
  uint64_t now = uv_now(d->loop);
  cached **link = &d->cache;
  while (*link != NULL) {
    cached *c = *link;
    if (c->expires <= now) { /* stale: drop it */
      *link = c->next;
      free(c);
      d->ncached--;
      continue;
    }
    if (strcmp(c->host, host) == 0) return c;
    link = &c->next;
  }
  return NULL;
}

static void remember(mp_dns *d, const char *host,
                     const struct sockaddr_storage *addr) {
  if (d->ttl_ms == 0 || d->closing) return;
  cached *c = lookup(d, host);
  if (c == NULL) {
    size_t n = strlen(host) + 1;
    c = malloc(sizeof *c + n);
    if (c == NULL) return;
    memcpy(c->host, host, n);
    c->next = d->cache;
    d->cache = c;
    if (++d->ncached > MAX_CACHED) { /* drop the oldest */
      cached **link = &d->cache;
      while ((*link)->next != NULL) link = &(*link)->next;
      free(*link);
      *link = NULL;
      d->ncached--;
    }
  }
  c->addr = *addr;
  c->expires = uv_now(d->loop) + d->ttl_ms;
}

static void unlink_query(mp_dns *d, mp_dns_query *q) {
  if (q->prev != NULL)
    q->prev->next = q->next;
  else
    d->flight = q->next;
  if (q->next != NULL) q->next->prev = q->prev;
}

static void on_resolved(uv_getaddrinfo_t *req, int status,
                        struct addrinfo *res) {
  mp_dns_query *q = req->data;
  mp_dns *d = q->dns;
  unlink_query(d, q);
  struct sockaddr_storage addr;
  memset(&addr, 0, sizeof addr);
  if (status == 0) {
    /* The first answer: getaddrinfo orders them by RFC 6724 already. */
    if (res == NULL || res->ai_addrlen > sizeof addr)
      status = UV_EAI_NONAME;
    else
      memcpy(&addr, res->ai_addr, res->ai_addrlen);
  }
  if (res != NULL) uv_freeaddrinfo(res);
  if (status == 0) {
    remember(d, q->host, &addr);
    set_port(&addr, q->port);
  }
  if (q->cb != NULL) q->cb(q->ud, status, (const struct sockaddr *)&addr);
  free(q);
  if (d->closing && d->flight == NULL) free(d);
}

int mp_dns_resolve(mp_dns *d, const char *host, int port,
                   struct sockaddr_storage *out, mp_dns_cb cb, void *ud,
                   mp_dns_query **qp) {
  if (literal(host, port, out) == 0) return 0;
  cached *c = lookup(d, host);
  if (c != NULL) {
    *out = c->addr;
    set_port(out, port);
    return 0;
  }
  size_t n = strlen(host) + 1;
  mp_dns_query *q = malloc(sizeof *q + n);
  if (q == NULL) return MP_NOMEM;
  memcpy(q->host, host, n);
  q->dns = d;
  q->cb = cb;
  q->ud = ud;
  q->port = port;
  q->req.data = q;
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = uv_getaddrinfo(d->loop, &q->req, on_resolved, q->host, NULL,
                          &hints);
  if (rc != 0) {
    free(q);
    return rc;
  }
  q->prev = NULL;
  q->next = d->flight;
  if (d->flight != NULL) d->flight->prev = q;
  d->flight = q;
  *qp = q;
  return MP_AGAIN;
}

void mp_dns_cancel(mp_dns_query *q) { q->cb = NULL; }
