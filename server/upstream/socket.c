/*
 * Outbound stream sockets (see socket.h): the record of one connection,
 * the handles that name it, its operations and their waits.
 *
 * A record is one connection, from connect to close. Handles are slots in
 * a table (slot, generation), so a handle can move to another record: a
 * connect that waited in a pool's backlog is handed an idle connection by
 * giving that connection its slot. A record is freed once no slot names
 * it and its libuv handles (the stream, the timer) have closed.
 *
 * An operation that cannot finish at once makes the calling request wait
 * on the record (the "socket" wait below), arms the record's timer, and
 * ends in a libuv callback, which resumes the request directly; an
 * operation ended from inside a Lua call (another coroutine closing the
 * socket) resumes it on the next loop turn. The request then asks again:
 * receive matches its pattern against the buffer once more, the others
 * fetch the outcome kept in the record.
 *
 * A connection, once it has read, reads whenever bytes arrive, in use or
 * idle in its pool, so a request costs no epoll change per receive; it
 * stops only at its end, an error, or MP__READ_AHEAD unread bytes that no
 * receive waits for. Idle, its bytes go to a scrap buffer, and any byte
 * or close drops it from the pool.
 */
#define _GNU_SOURCE /* memmem */
#include "socket.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "pool.h"
#include "request.h"
#include "socket_int.h"
#include "wait.h"

/* The free room a read asks for; a bigger pattern asks for what it
 * needs. */
#define READ_ROOM 4096
/* Read buffers of READ_ROOM bytes kept for reuse: a connection gives its
 * buffer back when it goes into its pool or closes, and the next read
 * takes one from here, so a request on a pooled connection costs no
 * malloc once the worker is warm. */
#define RBUFS_KEPT 256
/* Handles: the generation times 2^20 plus the slot. */
#define SLOT_BITS 20
#define MAX_SLOTS (1u << SLOT_BITS)

typedef struct slot {
  mp_usock *sock; /* NULL when free */
  uint32_t gen;
} slot;

static struct {
  mp_server *srv;
  mp_dns *dns;
  slot *slots;
  uint32_t nslots, cap;
  uint32_t *free;
  uint32_t nfree;
  mp_usock *busy;   /* sockets with an operation in progress */
  unsigned in_use, idle;
  uint64_t connect_errors; /* connects that failed, since the worker began */
  mp_pool rbufs;    /* the read buffers' first blocks */
} up;

/* ---- Handles ---- */

static double handle_of(const mp_usock *s) {
  return (double)up.slots[s->slot].gen * (double)MAX_SLOTS + (double)s->slot;
}

mp_usock *mp__usock_from_handle(double h) {
  if (!(h >= 0) || h >= 9007199254740992.0) return NULL;
  uint64_t v = (uint64_t)h;
  uint32_t i = (uint32_t)(v & (MAX_SLOTS - 1));
  uint32_t gen = (uint32_t)(v >> SLOT_BITS);
  if (i >= up.nslots || up.slots[i].sock == NULL || up.slots[i].gen != gen)
    return NULL;
  return up.slots[i].sock;
}

static int take_slot(mp_usock *s) {
  uint32_t i;
  if (up.nfree > 0) {
    i = up.free[--up.nfree];
  } else {
    if (up.nslots == MAX_SLOTS) return MP_NOMEM;
    if (up.nslots == up.cap) {
      uint32_t cap = up.cap ? up.cap * 2 : 64;
      slot *slots = realloc(up.slots, cap * sizeof *slots);
      if (slots == NULL) return MP_NOMEM;
      up.slots = slots;
      uint32_t *fr = realloc(up.free, cap * sizeof *fr);
      if (fr == NULL) return MP_NOMEM;
      up.free = fr;
      up.cap = cap;
    }
    i = up.nslots++;
    up.slots[i].gen = 0;
  }
  up.slots[i].sock = s;
  s->slot = i;
  return 0;
}

static void unlink_owner(mp_usock *s);
static void maybe_free(mp_usock *s);
static void stop_reading(mp_usock *s);

/* The handle naming s goes stale; s leaves its owner. */
static void drop_handle(mp_usock *s) {
  if (s->slot != MP__NO_SLOT) {
    up.slots[s->slot].sock = NULL;
    up.slots[s->slot].gen++;
    up.free[up.nfree++] = s->slot;
    s->slot = MP__NO_SLOT;
  }
  unlink_owner(s);
}

/* ---- Owners and the busy list ---- */

static void link_owner(mp_usock *s, mp_request *r) {
  s->owner = r;
  s->oprev = NULL;
  s->onext = r->outbound;
  if (s->onext != NULL) s->onext->oprev = s;
  r->outbound = s;
}

static void unlink_owner(mp_usock *s) {
  mp_request *r = s->owner;
  if (r == NULL) return;
  if (s->oprev != NULL)
    s->oprev->onext = s->onext;
  else
    r->outbound = s->onext;
  if (s->onext != NULL) s->onext->oprev = s->oprev;
  s->onext = s->oprev = NULL;
  s->owner = NULL;
}

static void link_busy(mp_usock *s) {
  s->bprev = NULL;
  s->bnext = up.busy;
  if (up.busy != NULL) up.busy->bprev = s;
  up.busy = s;
}

static void unlink_busy(mp_usock *s) {
  if (s->bprev != NULL)
    s->bprev->bnext = s->bnext;
  else if (up.busy == s)
    up.busy = s->bnext;
  if (s->bnext != NULL) s->bnext->bprev = s->bprev;
  s->bnext = s->bprev = NULL;
}

/* ---- Waiting ---- */

static mp_usock *waited_by(const mp_request *r) {
  for (mp_usock *s = up.busy; s != NULL; s = s->bnext)
    if (s->waiter == r) return s;
  return NULL;
}

static bool cut_short(const mp_request *r) { return r->aborted; }

static void abandon_op(mp_request *r);

/* A socket operation: ended by its own callbacks (or timer), or cut
 * short when the client leaves before the response is complete. */
static const mp_wait_ops waiting = {
    .name = "socket",
    .client_gone = cut_short,
    .cleanup = abandon_op,
};

static void on_timeout(uv_timer_t *t);

/* r waits on s's operation op, for at most timeout_ms (<= 0: no limit). */
int mp__usock_begin_op(mp_usock *s, mp_request *r, us_op op,
                       double timeout_ms) {
  int rc = mp_wait_begin(r, &waiting);
  if (rc != 0) return rc;
  s->op = op;
  s->waiter = r;
  s->result = 0;
  link_busy(s);
  if (timeout_ms > 0) {
    if (timeout_ms > 9007199254740992.0) timeout_ms = 9007199254740992.0;
    /* The loop's clock is the time its turn began and counts whole ms:
     * brought up to date, and one ms more, the timer never fires before
     * timeout_ms have passed. */
    uv_update_time(up.srv->loop);
    uv_timer_start(&s->timer, on_timeout, (uint64_t)timeout_ms + 1, 0);
  }
  return MP_AGAIN;
}

/* The operation r just began on s could not start: r does not wait. */
static void take_back_op(mp_usock *s, mp_request *r) {
  s->op = OP_NONE;
  s->waiter = NULL;
  unlink_busy(s);
  uv_timer_stop(&s->timer);
  mp_wait_cancel(r);
}

/* s's operation is over with result: its request goes on, at once from a
 * libuv callback (soon: from inside a Lua call). */
void mp__usock_end_op(mp_usock *s, int result, bool soon) {
  if (s->op == OP_NONE) return;
  s->op = OP_NONE;
  s->result = result;
  uv_timer_stop(&s->timer);
  unlink_busy(s);
  mp_request *r = s->waiter;
  s->waiter = NULL;
  if (r == NULL || r->wait != &waiting) return;
  if (soon)
    mp_wait_end_soon(r);
  else
    mp_request_wake(r);
}

void mp__usock_fail_op(mp_usock *s, int result) {
  mp_request *r = s->waiter;
  bool waiting_op = s->op != OP_NONE;
  if (waiting_op) {
    s->waiter = NULL;
    s->op = OP_NONE;
    uv_timer_stop(&s->timer);
    unlink_busy(s);
  }
  mp__usock_close(s, result);
  if (!waiting_op) return;
  s->result = result;
  if (r != NULL && r->wait == &waiting) mp_request_wake(r);
}

/* r's wait ends without its operation (the client left): a read stops and
 * the connection stays; a connect or a write cannot be taken back, so the
 * connection closes. */
static void abandon_op(mp_request *r) {
  mp_usock *s = waited_by(r);
  if (s == NULL) return;
  s->waiter = NULL;
  us_op op = s->op;
  s->op = OP_NONE;
  s->result = MP_CLOSED;
  uv_timer_stop(&s->timer);
  unlink_busy(s);
  if (op != OP_READ)
    mp__usock_close(s, MP_CLOSED);
  else if (s->udp)
    stop_reading(s);
}

/* ---- Records ---- */

void mp__usock_handle_closed(mp_usock *s) {
  s->handles--;
  maybe_free(s);
}

static void on_timer_closed(uv_handle_t *h) { mp__usock_handle_closed(h->data); }

static void on_stream_closed(mp_stream *st) { mp__usock_handle_closed(st->data); }

static void maybe_free(mp_usock *s) {
  if (s->handles > 0 || s->slot != MP__NO_SLOT) return;
  mp_buf_release(&s->rbuf);
  mp_buf_release(&s->wbuf);
  mp_buf_release(&s->until);
  mp__tls_free(s);
  free(s->host);
  free(s);
  /* A buffer given back after the worker closed the module goes too. */
  if (up.srv == NULL) mp_pool_destroy(&up.rbufs);
}

static mp_usock *new_record(void) {
  mp_usock *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->slot = MP__NO_SLOT;
  s->state = US_NEW;
  s->rbuf.pool = &up.rbufs;
  uv_timer_init(up.srv->loop, &s->timer);
  s->timer.data = s;
  s->handles = 1;
  return s;
}

/* Closes s's connection (reason: what an operation in progress answers).
 * Its handle, if any, stays valid and answers MP_CLOSED from now on. */
void mp__usock_close(mp_usock *s, int reason) {
  if (s->state == US_CLOSED) return;
  us_state was = s->state;
  s->state = US_CLOSED;
  if (s->query != NULL) {
    mp_dns_cancel(s->query);
    s->query = NULL;
  }
  mp_kpool *p = s->pool;
  if (p != NULL) {
    if (was == US_IDLE) {
      mp__kpool_unlink_idle(p, s);
      up.idle--;
    } else if (was == US_QUEUED) {
      mp__kpool_unlink_waiting(p, s);
    }
  }
  if (was == US_OPEN) up.in_use--;
  mp__usock_end_op(s, reason, true);
  uv_timer_stop(&s->timer);
  if (s->stream_open) {
    s->stream_open = false;
    s->reading = false;
    mp_stream_close(&s->stream, false, on_stream_closed);
  }
  if (s->udp_open) mp__udp_close(s);
  if (s->counted && p != NULL) {
    s->counted = false;
    p->open--;
    mp__kpool_dispatch(p);
  }
  mp_buf_release(&s->rbuf);
  s->rpos = 0;
  /* Nothing names a closed connection idle in a pool: it goes. */
  if (s->slot == MP__NO_SLOT && s->owner == NULL && s->op == OP_NONE &&
      was == US_IDLE)
    mp__usock_retire(s);
}

/* The last of s: its connection closes, its handle goes stale, its timer
 * closes, and the record is freed after. */
void mp__usock_retire(mp_usock *s) {
  mp__usock_close(s, MP_CLOSED);
  drop_handle(s);
  if (!s->timer_closing) {
    s->timer_closing = true;
    uv_close((uv_handle_t *)&s->timer, on_timer_closed);
  }
}

/* ---- Connecting ---- */

static void on_connected(mp_stream *st, int status) {
  mp_usock *s = st->data;
  if (s->state != US_CONNECTING) return; /* closed meanwhile */
  if (status != 0) {
    up.connect_errors++;
    mp__usock_close(s, status);
    return;
  }
  mp__usock_opened(s);
  mp__usock_end_op(s, 0, false);
}

void mp__usock_opened(mp_usock *s) {
  s->state = US_OPEN;
  s->opened = true;
  up.in_use++;
}

static void connect_to(mp_usock *s, const struct sockaddr *addr) {
  if (s->udp) {
    int rc = mp__udp_connect(s, addr);
    if (rc != 0) {
      mp__usock_close(s, rc);
      return;
    }
    mp__usock_opened(s);
    /* Setting a datagram socket's peer is over at once, maybe inside the
     * Lua call that asked for it. */
    mp__usock_end_op(s, 0, true);
    return;
  }
  s->state = US_CONNECTING;
  s->stream_open = true;
  s->handles++;
  int rc = s->unix_path
               ? mp_stream_pipe_connect(&s->stream, up.srv->loop, s->host,
                                        &s->creq, on_connected)
               : mp_stream_tcp_connect(&s->stream, up.srv->loop, addr,
                                       &s->creq, on_connected);
  s->stream.data = s;
  if (rc != 0) mp__usock_close(s, rc);
}

static void on_resolved(void *ud, int status, const struct sockaddr *addr) {
  mp_usock *s = ud;
  s->query = NULL;
  if (s->state != US_RESOLVING) return;
  if (status != 0) {
    mp__usock_close(s, status);
    return;
  }
  connect_to(s, addr);
}

/* s (its op a connect) opens a connection of its own. */
void mp__usock_open(mp_usock *s) {
  if (s->pool != NULL) {
    s->counted = true;
    s->pool->open++;
  }
  if (s->unix_path) {
    connect_to(s, NULL);
    return;
  }
  struct sockaddr_storage addr;
  s->state = US_RESOLVING;
  int rc = mp_dns_resolve(up.dns, s->host, s->port, &addr, on_resolved, s,
                          &s->query);
  if (rc == 0)
    connect_to(s, (const struct sockaddr *)&addr);
  else if (rc != MP_AGAIN)
    mp__usock_close(s, rc);
}

/* idle, taken from its pool, goes to work for owner. */
static void activate(mp_usock *idle, mp_request *owner) {
  link_owner(idle, owner);
  idle->state = US_OPEN;
  idle->reused++;
  up.idle--;
  up.in_use++;
  uv_timer_stop(&idle->timer);
  /* The idle watch reads on, into the buffer now. */
}

void mp__usock_unqueue(mp_usock *w, mp_usock *idle) {
  if (idle == NULL) {
    mp__usock_open(w);
    return;
  }
  mp_request *waiter = w->waiter;
  mp_request *owner = w->owner;
  w->waiter = NULL;
  w->op = OP_NONE;
  uv_timer_stop(&w->timer);
  unlink_busy(w);
  w->state = US_CLOSED;
  /* idle takes w's handle. */
  idle->slot = w->slot;
  up.slots[idle->slot].sock = idle;
  w->slot = MP__NO_SLOT;
  unlink_owner(w);
  activate(idle, owner);
  mp__usock_retire(w);
  /* The waiting request goes on with the pooled connection. */
  idle->op = OP_CONNECT;
  idle->waiter = waiter;
  link_busy(idle);
  mp__usock_end_op(idle, 0, true);
}

mp_usock *mp__usock_new(mp_request *r, double *h) {
  mp_usock *s = new_record();
  if (s == NULL) return NULL;
  if (take_slot(s) != 0) {
    mp__usock_retire(s);
    return NULL;
  }
  link_owner(s, r);
  *h = handle_of(s);
  return s;
}

int mp_usock_connect(mp_request *r, const mp_usock_target *t, double *h) {
  if (r == NULL) return MP_BAD_CONTEXT;
  bool unix_path = strncmp(t->host, "unix:", 5) == 0;
  char key[600];
  const char *name = t->pool;
  if (name == NULL) {
    if (unix_path)
      snprintf(key, sizeof key, "%s", t->host);
    else
      snprintf(key, sizeof key, "%s:%d", t->host, t->port);
    name = key;
  }
  mp_kpool *p = mp__kpool_get(
      name, t->pool_size > 0 ? (unsigned)t->pool_size : 0, t->backlog);
  if (p == NULL) return MP_NOMEM;

  mp_usock *idle = mp__kpool_take(p);
  if (idle != NULL) {
    if (take_slot(idle) != 0) {
      mp__kpool_put(p, idle);
      return MP_NOMEM;
    }
    activate(idle, r);
    *h = handle_of(idle);
    return 0;
  }
  mp_usock *s = mp__usock_new(r, h);
  if (s == NULL) return MP_NOMEM;
  s->pool = p;
  const char *host = unix_path ? t->host + 5 : t->host;
  s->host = strdup(host);
  if (s->host == NULL) {
    mp__usock_retire(s);
    return MP_NOMEM;
  }
  s->unix_path = unix_path;
  s->port = t->port;
  if (p->backlog >= 0 && p->open >= p->size) {
    if (p->nwait >= (unsigned)p->backlog) {
      mp__usock_retire(s);
      return MP_DECLINED;
    }
    int rc = mp__usock_begin_op(s, r, OP_CONNECT, t->timeout_ms);
    if (rc != MP_AGAIN) {
      mp__usock_retire(s);
      return rc;
    }
    s->state = US_QUEUED;
    mp__kpool_enqueue(p, s);
    return MP_AGAIN;
  }
  int rc = mp__usock_begin_op(s, r, OP_CONNECT, t->timeout_ms);
  if (rc != MP_AGAIN) {
    mp__usock_retire(s);
    return rc;
  }
  mp__usock_open(s);
  return MP_AGAIN;
}

int mp_usock_result(double h) {
  mp_usock *s = mp__usock_from_handle(h);
  if (s == NULL) return MP_BAD_CONTEXT;
  int rc = s->result;
  s->result = 0;
  /* A connect that failed leaves nothing for the handle to name; a
   * connection that failed later keeps its handle (answering "closed",
   * and why a handshake failed) until it is closed or its request ends. */
  if (rc != 0 && s->state == US_CLOSED && !s->opened) mp__usock_retire(s);
  return rc;
}

/* ---- Timeouts ---- */

static void on_timeout(uv_timer_t *t) {
  mp_usock *s = t->data;
  switch (s->op) {
  case OP_READ:
    if (s->udp) stop_reading(s);
    mp__usock_end_op(s, MP_TIMEOUT, false);
    break;
  case OP_CONNECT:
  case OP_WRITE:
  case OP_HANDSHAKE:
    /* The request learns of the timeout, not of the close it causes. */
    mp__usock_fail_op(s, MP_TIMEOUT);
    break;
  case OP_NONE:
    if (s->state == US_IDLE) mp__usock_close(s, MP_CLOSED); /* idled out */
    break;
  }
}

/* ---- Reading ---- */

static size_t unread(const mp_usock *s) { return s->rbuf.len - s->rpos; }

/* Where the boundary starts in the unread bytes, searching from scan, or
 * -1. */
static long find_until(mp_usock *s) {
  const char *base = s->rbuf.data + s->rpos;
  size_t n = unread(s), m = s->until.len;
  if (n < m) return -1;
  size_t from = s->scan < n ? s->scan : n;
  const char *hit = memmem(base + from, n - from, s->until.data, m);
  if (hit != NULL) return hit - base;
  /* The boundary may still start in the last m - 1 bytes. */
  s->scan = n - m + 1;
  return -1;
}

static long find_line(mp_usock *s) {
  const char *base = s->rbuf.data + s->rpos;
  size_t n = unread(s);
  const char *nl = s->scan < n ? memchr(base + s->scan, '\n', n - s->scan)
                               : NULL;
  if (nl != NULL) return nl - base;
  s->scan = n;
  return -1;
}

/* Whether the receive in progress can answer now (without taking). */
static bool satisfied(mp_usock *s) {
  if (s->eof || s->rerr != 0) return true;
  size_t n = unread(s);
  switch (s->pattern) {
  case MP_RECV_SIZE:
    return n >= s->want;
  case MP_RECV_LINE:
    return find_line(s) >= 0;
  case MP_RECV_ALL:
    return false;
  case MP_RECV_ANY:
    return n > 0;
  case MP_RECV_UNTIL:
    if (find_until(s) >= 0) return true;
    return s->want > 0 && n >= s->until.len &&
           n - (s->until.len - 1) >= s->want;
  }
  return true;
}

int mp__usock_room(mp_usock *s, size_t room) {
  mp_buf *b = &s->rbuf;
  if (s->rpos == b->len) {
    b->len = s->rpos = s->scan = 0;
  } else if (s->rpos > 0 && b->cap - b->len < room) {
    memmove(b->data, b->data + s->rpos, b->len - s->rpos);
    b->len -= s->rpos;
    s->rpos = 0;
  }
  if (b->cap - b->len >= room) return 0;
  if (b->len + room > up.srv->cfg->request_memory_limit) return MP_NOMEM;
  /* Bytes are the request's that waits for them, else the holder's. */
  mp_request *to = s->waiter != NULL ? s->waiter : s->owner;
  mp_charge *was = mp_charge_switch(to != NULL ? &to->charge : NULL);
  int rc = mp_buf_reserve(b, room);
  mp_charge_switch(was);
  return rc;
}

void mp__usock_on_alloc(mp_stream *st, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  mp_usock *s = st->data;
  if (s->state == US_IDLE) {
    *buf = uv_buf_init(s->scrap, sizeof s->scrap);
    return;
  }
  if (s->tls != NULL) {
    *buf = uv_buf_init(s->cbuf, MP__CBUF_SIZE);
    return;
  }
  size_t room = READ_ROOM;
  if (s->pattern == MP_RECV_SIZE && s->want > unread(s) &&
      s->want - unread(s) > room)
    room = s->want - unread(s);
  if (mp__usock_room(s, room) != 0) {
    *buf = uv_buf_init(NULL, 0); /* libuv answers UV_ENOBUFS */
    return;
  }
  mp_buf *b = &s->rbuf;
  *buf = uv_buf_init(b->data + b->len, (unsigned)(b->cap - b->len));
}

static void stop_reading(mp_usock *s) {
  if (!s->reading) return;
  if (s->udp)
    uv_udp_recv_stop(&s->dgram_handle);
  else
    mp_stream_read_stop(&s->stream);
  s->reading = false;
}

void mp__usock_on_read(mp_stream *st, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  mp_usock *s = st->data;
  if (s->state == US_IDLE) {
    /* An idle connection that speaks or closes is no use any more. */
    if (nread != 0) mp__usock_close(s, MP_CLOSED);
    return;
  }
  if (nread == 0) return;
  if (s->tls != NULL) {
    mp__tls_on_read(s, nread);
    if (s->op == OP_HANDSHAKE || s->state != US_OPEN) return;
  } else if (nread > 0) {
    s->rbuf.len += (size_t)nread;
  } else if (nread == UV_EOF) {
    s->eof = true;
  } else {
    s->rerr = nread == UV_ENOBUFS ? MP_NOMEM : (int)nread;
  }
  if (s->op == OP_READ && satisfied(s))
    mp__usock_end_op(s, 0, false);
  else if (s->eof || s->rerr != 0)
    stop_reading(s);
  else if (s->op != OP_READ && unread(s) >= MP__READ_AHEAD)
    stop_reading(s); /* nobody reads: no more until somebody does */
}

/* Hands over (consumes) n unread bytes. */
static void give(mp_usock *s, size_t n, const char **out, size_t *len) {
  *out = s->rbuf.data + s->rpos;
  *len = n;
  s->rpos += n;
  s->scan = 0;
}

/* The receive's answer from what is buffered: 0 (data), MP_DECLINED (a
 * boundary), an end (with the partial data), or MP_AGAIN. */
static int take(mp_usock *s, int pattern, size_t want, bool inclusive,
                const char **out, size_t *len) {
  size_t n = unread(s);
  long at;
  switch (pattern) {
  case MP_RECV_SIZE:
    if (n >= want) {
      give(s, want, out, len);
      return 0;
    }
    break;
  case MP_RECV_LINE:
    at = find_line(s);
    if (at >= 0) {
      /* Every CR in the line goes (OpenResty's "*l"). */
      char *line = s->rbuf.data + s->rpos;
      size_t k = 0;
      for (long i = 0; i < at; i++)
        if (line[i] != '\r') line[k++] = line[i];
      *out = line;
      *len = k;
      s->rpos += (size_t)at + 1;
      s->scan = 0;
      return 0;
    }
    break;
  case MP_RECV_ALL:
    if (s->eof) {
      give(s, n, out, len);
      return 0;
    }
    break;
  case MP_RECV_ANY:
    if (n > 0) {
      give(s, n < want ? n : want, out, len);
      return 0;
    }
    break;
  case MP_RECV_UNTIL:
    at = find_until(s);
    if (at >= 0) {
      if (want > 0) {
        if (at == 0) {
          s->rpos += s->until.len;
          s->scan = 0;
          return MP_DECLINED;
        }
        size_t k = (size_t)at < want ? (size_t)at : want;
        give(s, k, out, len);
        return 0;
      }
      give(s, (size_t)at + (inclusive ? s->until.len : 0), out, len);
      if (!inclusive) s->rpos += s->until.len;
      return 0;
    }
    if (want > 0 && n >= s->until.len && n - (s->until.len - 1) >= want) {
      give(s, want, out, len);
      return 0;
    }
    break;
  }
  if (s->rerr != 0 || s->eof) {
    give(s, n, out, len);
    return s->rerr != 0 ? s->rerr : MP_CLOSED;
  }
  return MP_AGAIN;
}

/* A failed read closes the connection (every error but a timeout). */
static int failed(mp_usock *s, int rc) {
  if (rc != MP_TIMEOUT) {
    /* The partial bytes handed over live in the buffer: it stays. */
    mp_buf keep = s->rbuf;
    size_t pos = s->rpos;
    s->rbuf = (mp_buf){0};
    mp__usock_close(s, rc);
    s->rbuf = keep;
    s->rpos = pos;
  }
  return rc;
}

int mp_usock_receive(mp_request *r, double h, int pattern, size_t want,
                     const char *until, size_t ulen, bool inclusive,
                     double timeout_ms, const char **out, size_t *len) {
  *len = 0;
  *out = "";
  mp_usock *s = mp__usock_from_handle(h);
  if (s == NULL) return MP_CLOSED;
  if (s->state != US_OPEN) {
    if (s->state == US_CLOSED && unread(s) > 0) { /* what came before */
      give(s, unread(s), out, len);
      return MP_CLOSED;
    }
    return MP_CLOSED;
  }
  if (r == NULL) return MP_BAD_CONTEXT;
  if (s->op != OP_NONE) return MP_STATE;
  if (pattern == MP_RECV_UNTIL &&
      (s->until.len != ulen || memcmp(s->until.data, until, ulen) != 0)) {
    s->until.len = 0;
    if (mp_buf_append(&s->until, until, ulen) != 0) return MP_NOMEM;
    s->scan = 0;
  }
  if (pattern != s->pattern) s->scan = 0;
  s->pattern = pattern;
  s->want = want;
  if (s->result == MP_TIMEOUT) { /* the last wait timed out */
    s->result = 0;
    give(s, pattern == MP_RECV_ANY ? 0 : unread(s), out, len);
    return MP_TIMEOUT;
  }
  s->result = 0;
  if (s->tls != NULL) mp__tls_drain(s);
  int rc = take(s, pattern, want, inclusive, out, len);
  if (rc != MP_AGAIN) return rc < 0 && rc != MP_DECLINED ? failed(s, rc) : rc;
  rc = mp__usock_begin_op(s, r, OP_READ, timeout_ms);
  if (rc != MP_AGAIN) return rc;
  if (!s->reading) {
    int st = mp_stream_read_start(&s->stream, mp__usock_on_alloc, mp__usock_on_read);
    if (st != 0) {
      take_back_op(s, r);
      return failed(s, st);
    }
    s->reading = true;
  }
  return MP_AGAIN;
}

/* ---- Writing ---- */

static void on_written(uv_write_t *req, int status) {
  mp_usock *s = req->data;
  s->wbuf.len = 0;
  if (s->state != US_OPEN || s->op != OP_WRITE) return;
  if (status != 0) {
    mp__usock_fail_op(s, status);
    return;
  }
  mp__usock_end_op(s, 0, false);
}

int mp_usock_send(mp_request *r, double h, const char *data, size_t len,
                  double timeout_ms) {
  mp_usock *s = mp__usock_from_handle(h);
  if (s == NULL || s->state != US_OPEN) return MP_CLOSED;
  if (r == NULL) return MP_BAD_CONTEXT;
  if (s->op != OP_NONE) return MP_STATE;
  s->result = 0;
  if (s->tls != NULL) return mp__tls_send(s, r, data, len, timeout_ms);
  uv_buf_t buf = uv_buf_init((char *)data, (unsigned)len);
  int n = len > 0 ? mp_stream_try_write(&s->stream, &buf, 1) : 0;
  if (n == UV_EAGAIN || n == UV_ENOSYS) n = 0;
  if (n < 0) {
    mp__usock_close(s, n);
    return n;
  }
  if ((size_t)n == len) return 0;
  s->wbuf.len = 0;
  if (mp_buf_append(&s->wbuf, data + n, len - (size_t)n) != 0)
    return MP_NOMEM;
  int rc = mp__usock_begin_op(s, r, OP_WRITE, timeout_ms);
  if (rc != MP_AGAIN) return rc;
  s->wreq.data = s;
  buf = uv_buf_init(s->wbuf.data, (unsigned)s->wbuf.len);
  int st = mp_stream_write(&s->stream, &s->wreq, &buf, 1, on_written);
  if (st != 0) {
    take_back_op(s, r);
    mp__usock_close(s, st);
    return st;
  }
  return MP_AGAIN;
}

/* ---- Keep-alive, close, options ---- */

int mp_usock_keepalive(double h, double idle_ms, int pool_size) {
  mp_usock *s = mp__usock_from_handle(h);
  if (s == NULL) return MP_CLOSED;
  if (s->state != US_OPEN || s->eof || s->rerr != 0) {
    mp__usock_retire(s);
    return MP_CLOSED;
  }
  if (s->op != OP_NONE) return MP_STATE;
  if (s->tls != NULL) mp__tls_drain(s);
  if (unread(s) > 0) return MP_DECLINED;
  if (s->writes > 0) return MP_STATE;
  mp_kpool *p = s->pool;
  if (p == NULL) {
    mp__usock_retire(s);
    return MP_CLOSED;
  }
  if (!p->sized) { /* the pool's size is fixed by its first mention */
    p->size = pool_size > 0 ? (unsigned)pool_size : MP__POOL_SIZE;
    p->sized = true;
  }
  if (s->tls != NULL) mp__tls_keep_session(s);
  drop_handle(s);
  mp_buf_release(&s->rbuf);
  mp_buf_release(&s->wbuf);
  mp_buf_release(&s->until);
  s->rpos = s->scan = 0;
  s->state = US_IDLE;
  up.in_use--;
  up.idle++;
  if (idle_ms > 0) {
    if (idle_ms > 9007199254740992.0) idle_ms = 9007199254740992.0;
    uv_timer_start(&s->timer, on_timeout, (uint64_t)idle_ms, 0);
  }
  /* Watch it: a close or stray bytes from the server drop it. */
  if (!s->reading &&
      mp_stream_read_start(&s->stream, mp__usock_on_alloc, mp__usock_on_read) == 0)
    s->reading = true;
  mp__kpool_put(p, s);
  if (s->state == US_IDLE) mp__kpool_dispatch(p);
  return 0;
}

int mp_usock_close(double h) {
  mp_usock *s = mp__usock_from_handle(h);
  if (s == NULL) return MP_CLOSED;
  bool was_open = s->state == US_OPEN;
  mp__usock_retire(s);
  return was_open ? 0 : MP_CLOSED;
}

int mp_usock_reused(double h) {
  mp_usock *s = mp__usock_from_handle(h);
  if (s == NULL || s->state != US_OPEN) return MP_CLOSED;
  return (int)s->reused;
}

int mp_usock_option(double h, int option, int value) {
  mp_usock *s = mp__usock_from_handle(h);
  if (s == NULL || s->state != US_OPEN) return MP_CLOSED;
  return mp_stream_option(&s->stream, option, value);
}

void mp_upstream_counts(unsigned *in_use, unsigned *idle) {
  *in_use = up.in_use;
  *idle = up.idle;
}

uint64_t mp_upstream_connect_errors(void) { return up.connect_errors; }

/* ---- The worker ---- */

/* A request is released: the sockets it still holds close. */
static void release_outbound(mp_request *r) {
  if (up.srv == NULL) return; /* closed already, with every socket */
  while (r->outbound != NULL) mp__usock_retire(r->outbound);
}

int mp_upstream_init(mp_server *srv) {
  memset(&up, 0, sizeof up);
  up.srv = srv;
  up.dns = mp_dns_new(srv->loop, srv->cfg->resolver_cache_ms);
  if (up.dns == NULL) return MP_NOMEM;
  mp_pool_init(&up.rbufs, READ_ROOM, RBUFS_KEPT);
  srv->release_outbound = release_outbound;
  return 0;
}

void mp_upstream_close(void) {
  if (up.srv == NULL) return;
  for (uint32_t i = 0; i < up.nslots; i++)
    if (up.slots[i].sock != NULL) mp__usock_retire(up.slots[i].sock);
  mp__kpool_free_all(); /* and the sockets idle in them */
  mp__tls_close();
  mp_dns_free(up.dns);
  up.dns = NULL;
  free(up.slots);
  free(up.free);
  up.slots = NULL;
  up.free = NULL;
  up.nslots = up.cap = up.nfree = 0;
  up.srv = NULL;
  mp_pool_destroy(&up.rbufs);
}
