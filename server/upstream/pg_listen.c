/*
 * LISTEN/NOTIFY for moonport.pg (see pg.h's mp_pg_listen): a listener is
 * a channel of a client and the notifications that came for it, waiting
 * for the task that reads them (lua/moonport/core/pg.lua runs one per
 * listener, in a timer). The LISTENs go on a connection of the client's
 * own (pg.c's listening connection), sent when the first reader asks and
 * again after every reconnect. Listening again to a client's channel (a
 * reload runs the app's db:listen again) replaces the listener: the old
 * reader is told, and ends; so does every reader once the worker stops
 * (a reader waits at most RECHECK_MS before it asks again).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "pg.h"
#include "pg_int.h"
#include "request.h"
#include "server.h"
#include "wait.h"

#define MAX_LISTENERS 64

typedef struct note {
  struct note *next;
  size_t len;
  char payload[];
} note;

typedef struct listener {
  int client;
  char *channel;
  uint32_t epoch;     /* bumped when replaced: older ids go stale */
  bool sent;          /* its LISTEN has been asked for */
  note *head, *tail;  /* notifications not yet read */
  note *given;        /* the one handed over last, freed at the next call */
  mp_request *waiter;
  uint32_t waiter_gen;
} listener;

static listener listeners[MAX_LISTENERS];
static unsigned nlisteners;

static double id_of(unsigned i) {
  return (double)listeners[i].epoch * 1024.0 + (double)i;
}

static listener *from_id(double id) {
  if (!(id >= 0)) return NULL;
  uint64_t v = (uint64_t)id;
  unsigned i = (unsigned)(v % 1024);
  if (i >= nlisteners || listeners[i].epoch != (uint32_t)(v / 1024))
    return NULL;
  return &listeners[i];
}

static void clear_waiter(mp_request *r) {
  uv_timer_stop(&r->timer);
  for (unsigned i = 0; i < nlisteners; i++)
    if (listeners[i].waiter == r) listeners[i].waiter = NULL;
}

static const mp_wait_ops waiting = {
    .name = "notification",
    .cleanup = clear_waiter,
};

/* A reader waits at most this long, then asks again: so it sees the
 * worker stopping (and ends) within that. */
#define RECHECK_MS 1000

static void on_recheck(uv_timer_t *t) {
  mp_request *r = t->data;
  if (r->wait == &waiting) {
    clear_waiter(r);
    mp_request_wake(r);
  }
}

/* Resumes l's reader, if it waits, on the next loop turn. */
static void wake(listener *l) {
  mp_request *r = l->waiter;
  l->waiter = NULL;
  if (r != NULL && r->live && r->gen == l->waiter_gen && r->wait == &waiting)
    mp_wait_end_soon(r);
}

/* "LISTEN <channel>", the channel quoted as an identifier. */
static int send_listen(listener *l) {
  size_t n = strlen(l->channel);
  char *sql = malloc(2 * n + 16);
  if (sql == NULL) return MP_NOMEM;
  char *p = sql + sprintf(sql, "LISTEN \"");
  for (size_t k = 0; k < n; k++) {
    if (l->channel[k] == '"') *p++ = '"';
    *p++ = l->channel[k];
  }
  strcpy(p, "\"");
  int rc = mp__pg_listener_send(l->client, sql);
  free(sql);
  return rc;
}

int mp_pg_listen(int client, const char *channel, double *id) {
  for (unsigned i = 0; i < nlisteners; i++) {
    listener *l = &listeners[i];
    if (l->client == client && strcmp(l->channel, channel) == 0) {
      l->epoch++; /* the old reader's id goes stale */
      wake(l);
      *id = id_of(i);
      return 0;
    }
  }
  if (nlisteners == MAX_LISTENERS) return MP_NOMEM;
  listener *l = &listeners[nlisteners];
  memset(l, 0, sizeof *l);
  l->client = client;
  l->channel = strdup(channel);
  if (l->channel == NULL) return MP_NOMEM;
  *id = id_of(nlisteners++);
  return 0;
}

int mp_pg_notification(mp_request *r, double id, const char **payload,
                       size_t *len) {
  listener *l = from_id(id);
  if (l == NULL || mp_server_self == NULL || mp_server_self->stopping)
    return MP_DECLINED;
  if (r == NULL) return MP_BAD_CONTEXT;
  free(l->given);
  l->given = NULL;
  if (!l->sent) {
    int rc = send_listen(l);
    if (rc != 0) return rc;
    l->sent = true;
  }
  note *n = l->head;
  if (n != NULL) {
    l->head = n->next;
    if (l->head == NULL) l->tail = NULL;
    l->given = n;
    *payload = n->payload;
    *len = n->len;
    return 0;
  }
  int rc = mp_wait_begin(r, &waiting);
  if (rc != 0) return rc;
  l->waiter = r;
  l->waiter_gen = r->gen;
  uv_timer_start(&r->timer, on_recheck, RECHECK_MS, 0);
  return MP_AGAIN;
}

void mp__pg_take_notifications(int client, PGconn *conn) {
  PGnotify *pn;
  while ((pn = PQnotifies(conn)) != NULL) {
    for (unsigned i = 0; i < nlisteners; i++) {
      listener *l = &listeners[i];
      if (l->client != client || strcmp(l->channel, pn->relname) != 0)
        continue;
      size_t len = strlen(pn->extra);
      note *n = malloc(sizeof *n + len + 1);
      if (n == NULL) continue;
      n->next = NULL;
      n->len = len;
      memcpy(n->payload, pn->extra, len + 1);
      if (l->tail != NULL)
        l->tail->next = n;
      else
        l->head = n;
      l->tail = n;
      wake(l);
    }
    PQfreemem(pn);
  }
}

void mp__pg_relisten(int client) {
  for (unsigned i = 0; i < nlisteners; i++)
    if (listeners[i].client == client && listeners[i].sent)
      send_listen(&listeners[i]);
}

void mp_pg_listen_close(void) {
  for (unsigned i = 0; i < nlisteners; i++) {
    listener *l = &listeners[i];
    while (l->head != NULL) {
      note *n = l->head;
      l->head = n->next;
      free(n);
    }
    free(l->given);
    free(l->channel);
  }
  nlisteners = 0;
}
