/*
 * PostgreSQL clients (see pg.h).
 *
 * A connection is a PGconn in non-blocking pipeline mode and a uv_poll on
 * its socket. Sending a query puts, into libpq's output buffer, a Prepare
 * (the first time this connection sees the SQL text), the Bind/Execute of
 * the prepared statement and a Sync, and flushes; the operation joins the
 * connection's FIFO. libpq sends at every Sync: over TCP the socket is
 * corked (TCP_CORK) from the first query of a loop turn until the turn
 * ends (a uv_prepare, before the loop waits), so that the queries of every
 * request the turn ran leave in as few segments as fit, and the server
 * reads them at once. When the socket is readable, results are taken in
 * order: each command's result, then the Sync's PGRES_PIPELINE_SYNC, which
 * ends the operation at the head of the FIFO. A failed Prepare aborts its
 * query (PGRES_PIPELINE_ABORTED), and the Prepare's error is the
 * operation's; the Sync after each query keeps other queries unharmed.
 *
 * Operations wait in a connection's queue while it connects. A connection
 * that fails fails the operations it carried and queued; the next query
 * connects again, no sooner than the backoff (100 ms, doubling to 1 s)
 * after the last failure.
 *
 * Ended operations wake their request when it has no other operation
 * left; the wakes are made after the results on hand are taken, never in
 * the middle of libpq's calls. Every handle, timer and PGresult is
 * released at mp_pg_close.
 */
#include "pg.h"
#include "pg_int.h"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

#include "errors.h"
#include "log.h"
#include "request.h"
#include "server.h"
#include "wait.h"

#define MAX_CLIENTS 16
#define MAX_POOL 64
/* Transactions open at once per worker, each on a connection of its own. */
#define MAX_PINS 64
/* Operations a connection carries and queues before a query is refused. */
#define MAX_QUEUED 65536
#define SLOT_BITS 20
#define MAX_OPS (1u << SLOT_BITS)
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000

typedef struct pgconn pgconn;

typedef enum { OP_FREE, OP_QUEUED, OP_SENT, OP_DONE } op_state;

typedef struct pgop {
  uint32_t gen;
  op_state state;
  mp_request *waiter;   /* the request waiting for it, or NULL */
  uint32_t waiter_gen;
  mp_request *owner;    /* the request that sent it (freed with it) */
  uint32_t owner_gen;
  pgconn *conn;
  bool prepare;         /* a Prepare goes before it */
  bool prepared_failed; /* the Prepare failed: its result is the answer */
  char name[24];        /* the statement */
  PGresult *res;
  int rc;
  char msg[256];
  uv_timer_t timer;
  uint32_t index; /* its slot */
  bool in_fifo;   /* in its connection's FIFO or queue: results to come */
  bool orphan;    /* let go of while in_fifo: freed when they have come */
  /* A query waiting for its connection: the SQL and the parameters. */
  char *sql;
  int nparams;
  char **values;
  int *lengths;
  uint32_t next; /* in a connection's queue */
} pgop;

typedef struct stmt {
  char *sql;
  char name[24];
} stmt;

typedef enum { C_DOWN, C_CONNECTING, C_READY } conn_state;

typedef struct pgpoll {
  uv_poll_t poll;
  pgconn *conn; /* NULL once the connection let go of it */
} pgpoll;

struct pgconn {
  int client;
  PGconn *pg;
  pgpoll *poll;
  int events;
  conn_state state;
  bool tcp;    /* over TCP: may be corked */
  bool corked; /* in pg.corked until the loop turn ends */
  bool pinned;
  bool listening; /* the client's LISTEN connection (pg_listen.c) */
  uint64_t next_attempt; /* loop time the next connect may start */
  unsigned backoff;
  uv_timer_t retry;
  /* In flight, in the order their results come. */
  uint32_t *fifo;
  unsigned fifo_cap, fifo_head, fifo_len;
  /* Waiting for the connection. */
  uint32_t queue_head, queue_tail;
  unsigned queued;
  stmt *stmts;
  unsigned nstmts, stmts_cap, seq;
};

typedef struct pgclient {
  char *conninfo;
  unsigned size;
  pgconn *conns[MAX_POOL];
  unsigned rr;
  pgconn *listener; /* the connection its LISTENs go on, or NULL */
  pgconn **spare; /* pinned connections not in use */
  unsigned nspare, spare_cap;
} pgclient;

static struct {
  mp_server *srv;
  pgclient clients[MAX_CLIENTS];
  unsigned nclients;
  pgop **ops; /* records, each allocated once */
  uint32_t nops, cap;
  uint32_t *free;
  uint32_t nfree;
  uint32_t *wake; /* ops ended during the current batch of results */
  unsigned nwake, wake_cap;
  pgconn **pins;
  unsigned npins, pins_cap;
  pgconn **corked; /* corked this loop turn */
  unsigned ncorked, corked_cap;
  uv_prepare_t *turn_end;
  void (*release_next)(mp_request *r);
  uint64_t failures; /* connections lost or not made, while serving */
  bool freeing;      /* free_conn is taking one down: not a failure */
} pg;

#define NO_OP UINT32_MAX

/* ---- Waiting ---- */

static bool cut_short(const mp_request *r) { return r->aborted; }

static void forget_waiter(mp_request *r) {
  for (uint32_t i = 0; i < pg.nops; i++)
    if (pg.ops[i]->state != OP_FREE && pg.ops[i]->waiter == r)
      pg.ops[i]->waiter = NULL;
  r->awaiting = 0;
}

static const mp_wait_ops waiting = {
    .name = "query",
    .client_gone = cut_short,
    .cleanup = forget_waiter,
};

/* ---- Operations ---- */

static double handle_of(uint32_t i) {
  return (double)pg.ops[i]->gen * (double)MAX_OPS + (double)i;
}


static pgop *from_handle(double h, uint32_t *index) {
  if (!(h >= 0) || h >= 9007199254740992.0) return NULL;
  uint64_t v = (uint64_t)h;
  uint32_t i = (uint32_t)(v & (MAX_OPS - 1));
  if (i >= pg.nops || pg.ops[i]->state == OP_FREE ||
      pg.ops[i]->gen != (uint32_t)(v >> SLOT_BITS))
    return NULL;
  if (index != NULL) *index = i;
  return pg.ops[i];
}

static int new_op(uint32_t *index) {
  uint32_t i;
  if (pg.nfree > 0) {
    i = pg.free[--pg.nfree];
  } else {
    if (pg.nops == MAX_OPS) return MP_NOMEM;
    if (pg.nops == pg.cap) {
      uint32_t cap = pg.cap ? pg.cap * 2 : 256;
      pgop **ops = realloc(pg.ops, cap * sizeof *ops);
      if (ops == NULL) return MP_NOMEM;
      pg.ops = ops;
      uint32_t *fr = realloc(pg.free, cap * sizeof *fr);
      if (fr == NULL) return MP_NOMEM;
      pg.free = fr;
      pg.cap = cap;
    }
    /* Records never move (libuv holds their timers): one allocation
     * each, kept until the worker stops. */
    pgop *op = calloc(1, sizeof *op);
    if (op == NULL) return MP_NOMEM;
    uv_timer_init(pg.srv->loop, &op->timer);
    op->timer.data = op;
    op->index = pg.nops;
    i = pg.nops;
    pg.ops[pg.nops++] = op;
  }
  pgop *op = pg.ops[i];
  op->state = OP_FREE;
  op->waiter = op->owner = NULL;
  op->conn = NULL;
  op->prepare = op->prepared_failed = false;
  op->res = NULL;
  op->rc = 0;
  op->msg[0] = '\0';
  op->sql = NULL;
  op->values = NULL;
  op->lengths = NULL;
  op->nparams = 0;
  op->next = NO_OP;
  *index = i;
  return 0;
}

static void free_queued_copy(pgop *op) {
  if (op->values != NULL)
    for (int k = 0; k < op->nparams; k++) free(op->values[k]);
  free(op->values);
  free(op->lengths);
  free(op->sql);
  op->values = NULL;
  op->lengths = NULL;
  op->sql = NULL;
}

static void release_op(uint32_t i) {
  pgop *op = pg.ops[i];
  op->orphan = false;
  uv_timer_stop(&op->timer);
  if (op->res != NULL) PQclear(op->res);
  op->res = NULL;
  free_queued_copy(op);
  op->state = OP_FREE;
  op->gen++;
  pg.free[pg.nfree++] = i;
}

/* op ended with rc: its request learns once nothing else is pending. */
static void end_op(uint32_t i, int rc, const char *msg) {
  pgop *op = pg.ops[i];
  op->state = OP_DONE;
  op->rc = rc;
  if (msg != NULL) snprintf(op->msg, sizeof op->msg, "%s", msg);
  uv_timer_stop(&op->timer);
  mp_request *r = op->waiter;
  op->waiter = NULL;
  if (r == NULL || !r->live || r->gen != op->waiter_gen) return;
  if (r->awaiting > 0) r->awaiting--;
  if (r->awaiting == 0 && r->wait == &waiting) {
    if (pg.nwake == pg.wake_cap) {
      unsigned cap = pg.wake_cap ? pg.wake_cap * 2 : 64;
      uint32_t *w = realloc(pg.wake, cap * sizeof *w);
      if (w == NULL) { /* resumed from the loop's next turn instead */
        mp_wait_end_soon(r);
        return;
      }
      pg.wake = w;
      pg.wake_cap = cap;
    }
    pg.wake[pg.nwake++] = i;
  }
}

/* Nobody will read op i: it goes now, or, while its results are still
 * to come on its connection (a query that timed out, or one whose request
 * ended), once they have: its slot must not name another query before
 * then. */
static void let_go(uint32_t i) {
  pgop *op = pg.ops[i];
  op->waiter = op->owner = NULL;
  if (op->in_fifo)
    op->orphan = true;
  else if (op->state == OP_DONE)
    release_op(i);
}

/* Resumes the requests whose last operation ended. */
static void wake_all(void) {
  unsigned n = pg.nwake;
  for (unsigned k = 0; k < n && k < pg.nwake; k++) {
    /* The op's waiter was cleared by end_op: find the request through
     * its owner, which sent it and waits for it. */
    pgop *op = pg.ops[pg.wake[k]];
    mp_request *r = op->owner;
    if (r != NULL && r->live && r->gen == op->owner_gen &&
        r->wait == &waiting && r->awaiting == 0)
      mp_request_wake(r);
  }
  pg.nwake = 0;
}

/* Asks the server to cancel what a connection runs now (libpq's
 * PQcancel blocks while it connects: on the thread pool). */
typedef struct cancel {
  uv_work_t work;
  PGcancel *cancel;
} cancel;

static void cancel_work(uv_work_t *w) {
  cancel *c = w->data;
  char err[256];
  PQcancel(c->cancel, err, sizeof err);
}

static void cancel_done(uv_work_t *w, int status) {
  (void)status;
  cancel *c = w->data;
  PQfreeCancel(c->cancel);
  free(c);
}

static void cancel_running(pgconn *c) {
  cancel *k = malloc(sizeof *k);
  if (k == NULL) return;
  k->cancel = PQgetCancel(c->pg);
  k->work.data = k;
  if (k->cancel == NULL ||
      uv_queue_work(pg.srv->loop, &k->work, cancel_work, cancel_done) != 0) {
    if (k->cancel != NULL) PQfreeCancel(k->cancel);
    free(k);
  }
}

static void on_op_timeout(uv_timer_t *t) {
  pgop *op = t->data;
  uint32_t i = op->index;
  if (op->state != OP_QUEUED && op->state != OP_SENT) return;
  /* The query the server runs now is the head of the FIFO: cancelled, it
   * holds up no query behind it. One further back is not running yet and
   * cannot be cancelled alone. */
  pgconn *c = op->conn;
  if (op->state == OP_SENT && c != NULL && c->state == C_READY &&
      c->fifo_len > 0 && c->fifo[c->fifo_head] == i)
    cancel_running(c);
  /* A query still in flight stays in its connection's FIFO: its result
   * is dropped when it comes (the op is marked ended, not freed). */
  end_op(i, MP_TIMEOUT, "timeout");
  wake_all();
}

/* ---- Connections ---- */

static void fail_all(pgconn *c, const char *why);
static void start_connect(pgconn *c);
static int send_op(pgconn *c, uint32_t i, const char *sql, int nparams,
                   const char *const *values, const int *lengths);

static void notice(void *arg, const char *message) {
  (void)arg;
  size_t n = strlen(message);
  while (n > 0 && message[n - 1] == '\n') n--;
  mp_log(MP_LOG_INFO, "postgresql: %.*s", (int)n, message);
}

static void poll_closed(uv_handle_t *h) { free(h->data); }

static void drop_poll(pgconn *c) {
  if (c->poll == NULL) return;
  c->poll->conn = NULL;
  uv_close((uv_handle_t *)&c->poll->poll, poll_closed);
  c->poll = NULL;
  c->events = 0;
}

static void on_poll(uv_poll_t *h, int status, int events);

static void watch(pgconn *c, int events) {
  if (c->poll == NULL) {
    pgpoll *p = malloc(sizeof *p);
    if (p == NULL) return;
    p->conn = c;
    p->poll.data = p;
    if (uv_poll_init_socket(pg.srv->loop, &p->poll, PQsocket(c->pg)) != 0) {
      free(p);
      return;
    }
    c->poll = p;
    c->events = 0;
  }
  if (c->events != events) {
    uv_poll_start(&c->poll->poll, events, on_poll);
    c->events = events;
  }
}

static void on_retry(uv_timer_t *t);

/* Holds what libpq sends on a TCP connection until the loop turn ends. */
static void cork(pgconn *c) {
  if (c->corked || !c->tcp) return;
  if (pg.ncorked == pg.corked_cap) {
    unsigned cap = pg.corked_cap ? pg.corked_cap * 2 : 8;
    pgconn **a = realloc(pg.corked, cap * sizeof *a);
    if (a == NULL) return;
    pg.corked = a;
    pg.corked_cap = cap;
  }
  int on = 1;
  if (setsockopt(PQsocket(c->pg), IPPROTO_TCP, TCP_CORK, &on, sizeof on) != 0)
    return;
  pg.corked[pg.ncorked++] = c;
  c->corked = true;
}

static void forget_cork(pgconn *c) {
  if (!c->corked) return;
  c->corked = false;
  for (unsigned k = 0; k < pg.ncorked; k++)
    if (pg.corked[k] == c) {
      pg.corked[k] = pg.corked[--pg.ncorked];
      return;
    }
}

static void flush(pgconn *c);

/* The loop turn ends: what the corked connections hold goes out. */
static void on_turn_end(uv_prepare_t *h) {
  (void)h;
  while (pg.ncorked > 0) {
    pgconn *c = pg.corked[pg.ncorked - 1];
    int off = 0;
    setsockopt(PQsocket(c->pg), IPPROTO_TCP, TCP_CORK, &off, sizeof off);
    forget_cork(c);
    flush(c);
  }
  wake_all();
}

static void down(pgconn *c, const char *message) {
  /* The message may be libpq's, inside the PGconn that goes now. */
  char why[256];
  size_t n = strlen(message);
  while (n > 0 && (message[n - 1] == '\n' || message[n - 1] == ' ')) n--;
  snprintf(why, sizeof why, "%.*s", (int)n, message);
  if (!pg.freeing) pg.failures++;
  forget_cork(c);
  drop_poll(c);
  if (c->pg != NULL) PQfinish(c->pg);
  c->pg = NULL;
  c->state = C_DOWN;
  c->next_attempt = uv_now(pg.srv->loop) + c->backoff;
  c->backoff = c->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff * 2;
  fail_all(c, why);
  /* A LISTEN connection comes back by itself: nobody queries on it. */
  if (c->listening && pg.srv != NULL)
    uv_timer_start(&c->retry, on_retry, c->next_attempt - uv_now(pg.srv->loop), 0);
}

static void fifo_push(pgconn *c, uint32_t i) {
  if (c->fifo_len == c->fifo_cap) {
    unsigned cap = c->fifo_cap ? c->fifo_cap * 2 : 64;
    uint32_t *f = malloc(cap * sizeof *f);
    if (f == NULL) return; /* checked by the caller's MAX_QUEUED */
    for (unsigned k = 0; k < c->fifo_len; k++)
      f[k] = c->fifo[(c->fifo_head + k) % c->fifo_cap];
    free(c->fifo);
    c->fifo = f;
    c->fifo_cap = cap;
    c->fifo_head = 0;
  }
  c->fifo[(c->fifo_head + c->fifo_len) % c->fifo_cap] = i;
  c->fifo_len++;
  pg.ops[i]->in_fifo = true;
}

static void release_op(uint32_t i);

/* The head's results have all come: an op let go of meanwhile goes now. */
static uint32_t fifo_pop(pgconn *c) {
  uint32_t i = c->fifo[c->fifo_head];
  c->fifo_head = (c->fifo_head + 1) % c->fifo_cap;
  c->fifo_len--;
  pg.ops[i]->in_fifo = false;
  return i;
}

static void drop_orphan(uint32_t i) {
  if (pg.ops[i]->orphan) release_op(i);
}

static void forget_stmt(pgconn *c, const char *name) {
  for (unsigned k = 0; k < c->nstmts; k++)
    if (strcmp(c->stmts[k].name, name) == 0) {
      free(c->stmts[k].sql);
      c->stmts[k] = c->stmts[--c->nstmts];
      return;
    }
}

static void fail_all(pgconn *c, const char *why) {
  while (c->fifo_len > 0) {
    uint32_t i = fifo_pop(c);
    if (pg.ops[i]->state == OP_SENT) end_op(i, MP_CLOSED, why);
    drop_orphan(i);
  }
  while (c->queue_head != NO_OP) {
    uint32_t i = c->queue_head;
    c->queue_head = pg.ops[i]->next;
    free_queued_copy(pg.ops[i]);
    pg.ops[i]->in_fifo = false;
    if (pg.ops[i]->state == OP_QUEUED) end_op(i, MP_CLOSED, why);
    drop_orphan(i);
  }
  c->queue_tail = NO_OP;
  c->queued = 0;
  for (unsigned k = 0; k < c->nstmts; k++) free(c->stmts[k].sql);
  c->nstmts = 0;
}

/* Takes every result on hand. */
static void take_results(pgconn *c) {
  while (c->fifo_len > 0 && !PQisBusy(c->pg)) {
    PGresult *res = PQgetResult(c->pg);
    if (res == NULL) continue; /* the end of one command's results */
    uint32_t i = c->fifo[c->fifo_head];
    pgop *op = pg.ops[i];
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_PIPELINE_SYNC) {
      PQclear(res);
      fifo_pop(c);
      if (op->orphan) {
        release_op(i);
        continue;
      }
      if (op->state == OP_SENT) {
        PGresult *r = op->res;
        int rc = 0;
        if (r == NULL) rc = MP_CLOSED;
        else if (PQresultStatus(r) == PGRES_FATAL_ERROR) rc = UV_EPROTO;
        end_op(i, rc, rc == MP_CLOSED ? "no result" : NULL);
      } else if (op->state == OP_DONE && op->res != NULL &&
                 op->rc == MP_TIMEOUT) {
        PQclear(op->res); /* timed out meanwhile: nobody reads it */
        op->res = NULL;
      }
      continue;
    }
    if (op->prepare) { /* the Prepare's own result */
      op->prepare = false;
      if (st != PGRES_COMMAND_OK) {
        forget_stmt(c, op->name);
        op->prepared_failed = true;
        op->res = res;
      } else {
        PQclear(res);
      }
      continue;
    }
    if (op->prepared_failed || op->state != OP_SENT) {
      PQclear(res); /* aborted after its Prepare failed, or timed out */
      continue;
    }
    if (op->res != NULL) PQclear(op->res);
    op->res = res;
  }
}

static void flush(pgconn *c) {
  int rc = PQflush(c->pg);
  if (rc < 0) {
    down(c, PQerrorMessage(c->pg));
    return;
  }
  watch(c, rc == 1 ? UV_READABLE | UV_WRITABLE : UV_READABLE);
}

static void connected(pgconn *c) {
  struct sockaddr_storage a;
  socklen_t alen = sizeof a;
  c->tcp = getsockname(PQsocket(c->pg), (struct sockaddr *)&a, &alen) == 0 &&
           (a.ss_family == AF_INET || a.ss_family == AF_INET6);
  PQsetnonblocking(c->pg, 1);
  PQenterPipelineMode(c->pg);
  PQsetNoticeProcessor(c->pg, notice, NULL);
  c->state = C_READY;
  c->backoff = BACKOFF_MIN_MS;
  if (c->listening) mp__pg_relisten(c->client);
  /* The queries that waited for it. */
  if (c->queue_head != NO_OP) cork(c);
  while (c->queue_head != NO_OP) {
    uint32_t i = c->queue_head;
    pgop *op = pg.ops[i];
    c->queue_head = op->next;
    c->queued--;
    op->in_fifo = false;
    if (op->state == OP_QUEUED) {
      op->state = OP_SENT;
      if (send_op(c, i, op->sql, op->nparams, (const char *const *)op->values,
                  op->lengths) != 0)
        end_op(i, MP_CLOSED, PQerrorMessage(c->pg));
    }
    free_queued_copy(op);
    if (!op->in_fifo) drop_orphan(i); /* timed out while it waited */
  }
  c->queue_tail = NO_OP;
  flush(c);
}

static void on_poll(uv_poll_t *h, int status, int events) {
  pgpoll *p = h->data;
  pgconn *c = p->conn;
  if (c == NULL) return;
  if (c->state == C_CONNECTING) {
    PostgresPollingStatusType st = PQconnectPoll(c->pg);
    if (st == PGRES_POLLING_FAILED) {
      down(c, PQerrorMessage(c->pg));
    } else if (st == PGRES_POLLING_OK) {
      drop_poll(c); /* the socket may have changed meanwhile */
      connected(c);
    } else {
      /* "Do not assume the socket remains the same." */
      if (PQsocket(c->pg) != -1 && c->poll != NULL) {
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->poll->poll, &fd) != 0 ||
            fd != PQsocket(c->pg))
          drop_poll(c);
      }
      watch(c, st == PGRES_POLLING_READING ? UV_READABLE : UV_WRITABLE);
    }
    wake_all();
    return;
  }
  if (status < 0) {
    down(c, uv_strerror(status));
    wake_all();
    return;
  }
  if (events & UV_READABLE) {
    if (!PQconsumeInput(c->pg)) {
      down(c, PQerrorMessage(c->pg));
      wake_all();
      return;
    }
    take_results(c);
    if (c->listening) mp__pg_take_notifications(c->client, c->pg);
    if (PQstatus(c->pg) == CONNECTION_BAD) {
      down(c, PQerrorMessage(c->pg));
      wake_all();
      return;
    }
  }
  flush(c);
  wake_all();
}

static void on_retry(uv_timer_t *t) {
  pgconn *c = t->data;
  if (c->state == C_DOWN && (c->queued > 0 || c->listening)) start_connect(c);
  wake_all();
}

static void start_connect(pgconn *c) {
  uint64_t now = uv_now(pg.srv->loop);
  if (now < c->next_attempt) {
    uv_timer_start(&c->retry, on_retry, c->next_attempt - now, 0);
    return;
  }
  c->state = C_CONNECTING;
  c->pg = PQconnectStart(pg.clients[c->client].conninfo);
  if (c->pg == NULL) {
    down(c, "out of memory");
    return;
  }
  if (PQstatus(c->pg) == CONNECTION_BAD) {
    down(c, PQerrorMessage(c->pg));
    return;
  }
  watch(c, UV_WRITABLE);
}

static pgconn *new_conn(int client, bool pinned) {
  pgconn *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->client = client;
  c->pinned = pinned;
  c->backoff = BACKOFF_MIN_MS;
  c->queue_head = c->queue_tail = NO_OP;
  uv_timer_init(pg.srv->loop, &c->retry);
  c->retry.data = c;
  return c;
}

static void retry_closed(uv_handle_t *h) {
  pgconn *c = h->data;
  free(c->fifo);
  free(c->stmts);
  free(c);
}

static void free_conn(pgconn *c) {
  if (c == NULL) return;
  c->next_attempt = 0;
  pg.freeing = true;
  down(c, "server closing");
  pg.freeing = false;
  fail_all(c, "server closing");
  uv_close((uv_handle_t *)&c->retry, retry_closed);
}

void mp_pg_counts(unsigned *ready, uint64_t *failures) {
  unsigned n = 0;
  for (unsigned i = 0; i < pg.nclients; i++) {
    const pgclient *cl = &pg.clients[i];
    for (unsigned k = 0; k < cl->size && k < MAX_POOL; k++)
      if (cl->conns[k] != NULL && cl->conns[k]->state == C_READY) n++;
    if (cl->listener != NULL && cl->listener->state == C_READY) n++;
  }
  *ready = n;
  *failures = pg.failures;
}

/* ---- Sending ---- */

static const char *statement(pgconn *c, const char *sql, bool *fresh) {
  for (unsigned k = 0; k < c->nstmts; k++)
    if (strcmp(c->stmts[k].sql, sql) == 0) {
      *fresh = false;
      return c->stmts[k].name;
    }
  if (c->nstmts == c->stmts_cap) {
    unsigned cap = c->stmts_cap ? c->stmts_cap * 2 : 16;
    stmt *s = realloc(c->stmts, cap * sizeof *s);
    if (s == NULL) return NULL;
    c->stmts = s;
    c->stmts_cap = cap;
  }
  stmt *s = &c->stmts[c->nstmts];
  s->sql = strdup(sql);
  if (s->sql == NULL) return NULL;
  snprintf(s->name, sizeof s->name, "mp%u", ++c->seq);
  c->nstmts++;
  *fresh = true;
  return s->name;
}

static int send_op(pgconn *c, uint32_t i, const char *sql, int nparams,
                   const char *const *values, const int *lengths) {
  pgop *op = pg.ops[i];
  bool fresh;
  const char *name = statement(c, sql, &fresh);
  if (name == NULL) return MP_NOMEM;
  snprintf(op->name, sizeof op->name, "%s", name);
  op->conn = c;
  if (fresh && !PQsendPrepare(c->pg, name, sql, 0, NULL)) {
    forget_stmt(c, name);
    return MP_CLOSED;
  }
  op->prepare = fresh;
  if (!PQsendQueryPrepared(c->pg, name, nparams, values, lengths, NULL, 0) ||
      !PQpipelineSync(c->pg))
    return MP_CLOSED;
  fifo_push(c, i);
  return 0;
}

/* A copy of a query, for the queue of a connection not ready yet. */
static int keep_copy(pgop *op, const char *sql, int nparams,
                     const char *const *values, const int *lengths) {
  op->sql = strdup(sql);
  op->nparams = nparams;
  op->values = calloc((size_t)nparams + 1, sizeof *op->values);
  op->lengths = calloc((size_t)nparams + 1, sizeof *op->lengths);
  if (op->sql == NULL || op->values == NULL || op->lengths == NULL)
    return MP_NOMEM;
  for (int k = 0; k < nparams; k++) {
    if (values[k] == NULL) continue;
    size_t n = lengths != NULL ? (size_t)lengths[k] : strlen(values[k]);
    op->values[k] = malloc(n + 1);
    if (op->values[k] == NULL) return MP_NOMEM;
    memcpy(op->values[k], values[k], n);
    op->values[k][n] = '\0';
    op->lengths[k] = (int)n;
  }
  return 0;
}

static pgconn *pick(int client, int pin) {
  if (pin >= 0) return (unsigned)pin < pg.npins ? pg.pins[pin] : NULL;
  pgclient *cl = &pg.clients[client];
  pgconn *best = NULL;
  for (unsigned k = 0; k < cl->size; k++) {
    unsigned j = (cl->rr + k) % cl->size;
    if (cl->conns[j] == NULL) {
      cl->conns[j] = new_conn(client, false);
      if (cl->conns[j] == NULL) continue;
    }
    pgconn *c = cl->conns[j];
    if (best == NULL || c->fifo_len + c->queued < best->fifo_len + best->queued)
      best = c;
  }
  cl->rr++;
  return best;
}

int mp_pg_send(mp_request *r, int client, int pin, const char *sql,
               int nparams, const char *const *values, const int *lengths,
               double timeout_ms, double *handle) {
  if (r == NULL) return MP_BAD_CONTEXT;
  if (client < 0 || (unsigned)client >= pg.nclients) return MP_INVALID;
  pgconn *c = pick(client, pin);
  if (c == NULL) return MP_NOMEM;
  if (c->fifo_len + c->queued >= MAX_QUEUED) return MP_STATE;
  uint32_t i;
  int rc = new_op(&i);
  if (rc != 0) return rc;
  pgop *op = pg.ops[i];
  op->owner = op->waiter = r;
  op->owner_gen = op->waiter_gen = r->gen;
  op->conn = c;
  if (timeout_ms <= 0) timeout_ms = (double)pg.srv->cfg->pg_timeout_ms;
  if (timeout_ms > 9007199254740992.0) timeout_ms = 9007199254740992.0;
  uv_update_time(pg.srv->loop);
  uv_timer_start(&op->timer, on_op_timeout, (uint64_t)timeout_ms + 1, 0);
  r->awaiting++;
  r->upstream_ops++;
  if (c->state == C_READY) {
    op->state = OP_SENT;
    cork(c);
    rc = send_op(c, i, sql, nparams, values, lengths);
    if (rc != 0) {
      const char *why = PQerrorMessage(c->pg);
      op->waiter = NULL; /* answered at once, not by a wake */
      r->awaiting--;
      end_op(i, MP_CLOSED, why);
      op->waiter = NULL;
    } else if (!c->corked) {
      flush(c);
    }
  } else {
    op->state = OP_QUEUED;
    if (keep_copy(op, sql, nparams, values, lengths) != 0) {
      op->waiter = NULL;
      r->awaiting--;
      end_op(i, MP_NOMEM, "out of memory");
    } else {
      if (c->queue_tail == NO_OP)
        c->queue_head = i;
      else
        pg.ops[c->queue_tail]->next = i;
      c->queue_tail = i;
      c->queued++;
      op->in_fifo = true; /* in the queue: the slot stays its own */
      if (c->state == C_DOWN) start_connect(c);
    }
  }
  *handle = handle_of(i);
  return 0;
}

int mp_pg_wait(mp_request *r) {
  if (r == NULL) return MP_BAD_CONTEXT;
  if (r->awaiting == 0) return 0;
  int rc = mp_wait_begin(r, &waiting);
  return rc != 0 ? rc : MP_AGAIN;
}

int mp_pg_outcome(double h, PGresult **res, const char **msg) {
  pgop *op = from_handle(h, NULL);
  *res = NULL;
  *msg = "";
  if (op == NULL) return MP_BAD_CONTEXT;
  if (op->state != OP_DONE) return MP_AGAIN;
  *res = op->res;
  *msg = op->msg;
  return op->rc;
}

void mp_pg_free(double h) {
  uint32_t i;
  pgop *op = from_handle(h, &i);
  if (op == NULL) return;
  mp_request *r = op->owner;
  if (r != NULL && r->live && r->gen == op->owner_gen && r->upstream_ops > 0)
    r->upstream_ops--;
  let_go(i);
}

/* ---- Clients and transactions ---- */

int mp_pg_client(const char *conninfo, unsigned size) {
  if (size == 0) size = 1;
  if (size > MAX_POOL) size = MAX_POOL;
  for (unsigned k = 0; k < pg.nclients; k++)
    if (pg.clients[k].size == size &&
        strcmp(pg.clients[k].conninfo, conninfo) == 0)
      return (int)k;
  if (pg.nclients == MAX_CLIENTS) return MP_NOMEM;
  pgclient *cl = &pg.clients[pg.nclients];
  memset(cl, 0, sizeof *cl);
  cl->conninfo = strdup(conninfo);
  if (cl->conninfo == NULL) return MP_NOMEM;
  cl->size = size;
  return (int)pg.nclients++;
}

int mp_pg_pin(int client) {
  if (client < 0 || (unsigned)client >= pg.nclients) return MP_INVALID;
  unsigned in_use = 0;
  for (unsigned k = 0; k < pg.npins; k++) in_use += pg.pins[k] != NULL;
  if (in_use >= MAX_PINS) return MP_STATE;
  pgclient *cl = &pg.clients[client];
  pgconn *c = cl->nspare > 0 ? cl->spare[--cl->nspare] : new_conn(client, true);
  if (c == NULL) return MP_NOMEM;
  for (unsigned k = 0; k < pg.npins; k++)
    if (pg.pins[k] == NULL) {
      pg.pins[k] = c;
      return (int)k;
    }
  if (pg.npins == pg.pins_cap) {
    unsigned cap = pg.pins_cap ? pg.pins_cap * 2 : 16;
    pgconn **p = realloc(pg.pins, cap * sizeof *p);
    if (p == NULL) {
      free_conn(c);
      return MP_NOMEM;
    }
    pg.pins = p;
    pg.pins_cap = cap;
  }
  pg.pins[pg.npins] = c;
  return (int)pg.npins++;
}

void mp_pg_unpin(int pin) {
  if (pin < 0 || (unsigned)pin >= pg.npins || pg.pins[pin] == NULL) return;
  pgconn *c = pg.pins[pin];
  pg.pins[pin] = NULL;
  pgclient *cl = &pg.clients[c->client];
  /* A connection with queries in flight (a transaction cut short) or
   * in a failed state is not worth keeping. */
  if (c->fifo_len > 0 || c->state != C_READY ||
      PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
    free_conn(c);
    return;
  }
  if (cl->nspare == cl->spare_cap) {
    unsigned cap = cl->spare_cap ? cl->spare_cap * 2 : 4;
    pgconn **s = realloc(cl->spare, cap * sizeof *s);
    if (s == NULL) {
      free_conn(c);
      return;
    }
    cl->spare = s;
    cl->spare_cap = cap;
  }
  cl->spare[cl->nspare++] = c;
}

/* ---- The worker ---- */

static void op_closed(uv_handle_t *h) { free(h->data); }

/* A request is released: its operations still in flight are dropped
 * when they end, the ended ones go now. */
static void release(mp_request *r) {
  if (r->upstream_ops > 0) {
    for (uint32_t i = 0; i < pg.nops; i++) {
      pgop *op = pg.ops[i];
      if (op->state == OP_FREE || op->owner != r || op->owner_gen != r->gen)
        continue;
      let_go(i);
    }
    r->upstream_ops = 0;
  }
  r->awaiting = 0;
  if (pg.release_next != NULL) pg.release_next(r);
}

static void turn_end_closed(uv_handle_t *h) { free(h); }

int mp_pg_init(mp_server *s) {
  memset(&pg, 0, sizeof pg);
  pg.turn_end = malloc(sizeof *pg.turn_end);
  if (pg.turn_end == NULL) return MP_NOMEM;
  uv_prepare_init(s->loop, pg.turn_end);
  uv_prepare_start(pg.turn_end, on_turn_end);
  uv_unref((uv_handle_t *)pg.turn_end);
  pg.srv = s;
  pg.release_next = s->release_outbound;
  s->release_outbound = release;
  return 0;
}

void mp_pg_close(void) {
  if (pg.srv == NULL) return;
  for (unsigned k = 0; k < pg.nclients; k++) {
    pgclient *cl = &pg.clients[k];
    for (unsigned j = 0; j < cl->size; j++) free_conn(cl->conns[j]);
    for (unsigned j = 0; j < cl->nspare; j++) free_conn(cl->spare[j]);
    free_conn(cl->listener);
    free(cl->spare);
    free(cl->conninfo);
  }
  for (unsigned k = 0; k < pg.npins; k++) free_conn(pg.pins[k]);
  free(pg.pins);
  mp_pg_listen_close();
  pg.nwake = 0; /* nobody is resumed any more */
  for (uint32_t i = 0; i < pg.nops; i++) {
    if (pg.ops[i]->state != OP_FREE) release_op(i);
  }
  for (uint32_t i = 0; i < pg.nops; i++)
    uv_close((uv_handle_t *)&pg.ops[i]->timer, op_closed);
  free(pg.ops);
  free(pg.free);
  free(pg.wake);
  free(pg.corked);
  uv_close((uv_handle_t *)pg.turn_end, turn_end_closed);
  void (*next)(mp_request *) = pg.release_next;
  mp_server *srv = pg.srv;
  memset(&pg, 0, sizeof pg);
  srv->release_outbound = next;
}

/* ---- For pg_listen.c ---- */

int mp__pg_listener_send(int client, const char *sql) {
  if (client < 0 || (unsigned)client >= pg.nclients) return MP_INVALID;
  pgclient *cl = &pg.clients[client];
  if (cl->listener == NULL) {
    cl->listener = new_conn(client, true);
    if (cl->listener == NULL) return MP_NOMEM;
    cl->listener->listening = true;
  }
  pgconn *c = cl->listener;
  if (c->state != C_READY) {
    if (c->state == C_DOWN) start_connect(c);
    return 0; /* connected() sends every LISTEN */
  }
  uint32_t i;
  int rc = new_op(&i);
  if (rc != 0) return rc;
  pgop *op = pg.ops[i];
  op->state = OP_SENT;
  if (send_op(c, i, sql, 0, NULL, NULL) != 0) {
    release_op(i);
    return MP_CLOSED;
  }
  op->orphan = true; /* nobody reads its answer */
  flush(c);
  return 0;
}

uv_loop_t *mp__pg_loop(void) { return pg.srv != NULL ? pg.srv->loop : NULL; }
