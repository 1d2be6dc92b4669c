/*
 * Keep-alive pools of outbound connections, per worker, keyed by a name
 * ("host:port", the socket's path, or the pool option given to connect).
 *
 * Idle connections are kept most recently used first (lua-nginx-module's
 * order: the warmest is reused, the coldest idle out), at most the pool's
 * size; a pool's size and backlog are fixed when it is made. With a
 * backlog, the pool caps the connections open under its name (in use and
 * idle) at its size, and connects beyond that wait in a FIFO of at most
 * backlog entries for one to come back or close (OpenResty's semantics).
 *
 * Pools are few (one per upstream a worker talks to), so they are a list;
 * they live until the worker stops.
 */
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "socket_int.h"

/* Pools are keyed by what handlers connect to, which a request may
 * choose: past this many, connects to new keys fail rather than grow the
 * list without end. */
#define MAX_POOLS 4096

static mp_kpool *pools;
static unsigned npools;

mp_kpool *mp__kpool_get(const char *key, unsigned size, int backlog) {
  for (mp_kpool *p = pools; p != NULL; p = p->next)
    if (strcmp(p->key, key) == 0) return p;
  if (npools == MAX_POOLS) return NULL;
  size_t n = strlen(key) + 1;
  mp_kpool *p = calloc(1, sizeof *p + n);
  if (p == NULL) return NULL;
  memcpy(p->key, key, n);
  p->size = size > 0 ? size : MP__POOL_SIZE;
  p->sized = size > 0;
  p->backlog = backlog;
  p->next = pools;
  pools = p;
  npools++;
  return p;
}

void mp__kpool_unlink_idle(mp_kpool *p, mp_usock *s) {
  if (s->pprev != NULL)
    s->pprev->pnext = s->pnext;
  else
    p->idle = s->pnext;
  if (s->pnext != NULL)
    s->pnext->pprev = s->pprev;
  else
    p->idle_tail = s->pprev;
  s->pnext = s->pprev = NULL;
  p->nidle--;
}

mp_usock *mp__kpool_take(mp_kpool *p) {
  mp_usock *s = p->idle;
  if (s != NULL) mp__kpool_unlink_idle(p, s);
  return s;
}

void mp__kpool_put(mp_kpool *p, mp_usock *s) {
  s->pprev = NULL;
  s->pnext = p->idle;
  if (p->idle != NULL)
    p->idle->pprev = s;
  else
    p->idle_tail = s;
  p->idle = s;
  p->nidle++;
  while (p->nidle > p->size) mp__usock_close(p->idle_tail, MP_CLOSED);
}

void mp__kpool_enqueue(mp_kpool *p, mp_usock *s) {
  s->pnext = NULL;
  s->pprev = p->waiting_tail;
  if (p->waiting_tail != NULL)
    p->waiting_tail->pnext = s;
  else
    p->waiting = s;
  p->waiting_tail = s;
  p->nwait++;
}

void mp__kpool_unlink_waiting(mp_kpool *p, mp_usock *s) {
  if (s->pprev != NULL)
    s->pprev->pnext = s->pnext;
  else
    p->waiting = s->pnext;
  if (s->pnext != NULL)
    s->pnext->pprev = s->pprev;
  else
    p->waiting_tail = s->pprev;
  s->pnext = s->pprev = NULL;
  p->nwait--;
}

void mp__kpool_dispatch(mp_kpool *p) {
  while (p->waiting != NULL) {
    mp_usock *idle = p->idle;
    if (idle == NULL && p->open >= p->size) return;
    mp_usock *w = p->waiting;
    mp__kpool_unlink_waiting(p, w);
    if (idle != NULL) mp__kpool_unlink_idle(p, idle);
    mp__usock_unqueue(w, idle);
  }
}

void mp__kpool_free_all(void) {
  while (pools != NULL) {
    mp_kpool *p = pools;
    while (p->idle != NULL) mp__usock_retire(p->idle);
    if (p->session != NULL) mp_tls_session_free(p->session);
    pools = p->next;
    free(p);
  }
  npools = 0;
}
