/*
 * What a worker serves with: its loop, the settings connections and
 * requests follow, the pools they draw from, the connections open, the
 * request slots, the figures, and the code the handlers run on. One per
 * worker process (mp_server_self); everything on the request path belongs
 * to it, so nothing on that path takes a lock.
 *
 * The server knows the code only through mp_code_ops: the layer above
 * (lua/vm.c) supplies them, so requests run handlers without this layer
 * knowing Lua. A request holds the code it started on; code nothing holds
 * any more is closed on the next loop turn, not inside the callback that
 * let go of it.
 */
#ifndef MP_SERVER_H
#define MP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "http1.h"
#include "pool.h"
#include "router.h"
#include "shared.h"
#include "stats.h"

typedef struct mp_conn mp_conn;
typedef struct mp_request mp_request;
typedef struct mp_server mp_server;
typedef struct mp_timer mp_timer;

/* How a handler ended, or that it waits (what mp_code_ops answer). */
enum {
  MP_CODE_DONE = 0,   /* the handler returned */
  MP_CODE_FAILED = 1, /* it raised (logged; see ops->error) */
  MP_CODE_WAITING = 2 /* it is suspended in a wait */
};

/* Running handlers: what the code (one loaded version of the app) can
 * do. Every function but hold, release and close runs Lua. */
typedef struct mp_code_ops {
  /* Runs handler (the router's handler reference) for r. */
  int (*start)(void *code, mp_request *r, int handler);
  /* Runs the function of the timer the code knows as id in task (a timer's
   * run, task.h), told whether it runs early (premature: the worker is
   * stopping, or the code has been replaced) and whether it is the
   * timer's last run. */
  int (*run_timer)(void *code, mp_request *task, double id, bool premature,
                   bool last);
  /* Resumes r's suspended handler or task (its wait is over). */
  int (*resume)(void *code, mp_request *r);
  /* Drops r's suspended handler or task without resuming it. */
  void (*abandon)(void *code, mp_request *r);
  /* A request running on code holds it; release returns the holds left. */
  void (*hold)(void *code);
  unsigned (*release)(void *code);
  void (*close)(void *code);
  /* The last handler failure's message, for --debug responses. */
  const char *(*error)(const void *code);
  /* Bytes live in the code's heap. */
  size_t (*heap_size)(const void *code);
} mp_code_ops;

struct mp_server {
  uv_loop_t *loop;
  const mp_config *cfg;
  unsigned id;          /* the worker's id, 1..--workers */
  mp_shared *shared;    /* the shared segment; not owned */
  mp_worker_slot *slot; /* the worker's heartbeat, or NULL */
  mp_http1_limits limits;
  bool stopping; /* draining: no new connections, none kept alive */

  const mp_code_ops *code_ops;
  void *code;        /* the current code; requests hold the code they run */
  mp_router *router; /* the current code's router */
  void **retired;    /* code let go of, closed on the next loop turn */
  unsigned nretired;
  uv_check_t retire;

  mp_stats stats; /* per-route figures are the current code's */
  /* The worker's block of figures in the shared segment (publish.h), and
   * what its counters held when this process took the worker's place. */
  struct mp_worker_metrics *metrics;
  uint64_t metrics_base[5];

  mp_pool conn_pool; /* connection records */
  mp_pool req_pool;  /* uv_write_t and uv_shutdown_t, while in flight */
  mp_pool rbuf_pool; /* connection read buffers */
  mp_pool out_pool;  /* first blocks of output and header buffers */
  size_t rbuf_size;

  mp_conn *conns;    /* every open connection, for shutdown */
  mp_conn *deferred; /* connections waiting for their next turn */
  uv_idle_t turn_idle; /* active while any is deferred */
  unsigned nconns;

  /* Request slots: a request is named to Lua by (slot, generation). */
  mp_request **reqs;
  uint32_t nreqs;
  uint32_t *free_slots;
  uint32_t nfree_slots;
  mp_request *detached; /* requests whose client has gone, handler running */
  unsigned ndetached;

  /* Tasks (task.h) and timers (timer.h). */
  unsigned nthreads;    /* live light threads */
  unsigned ntimer_runs; /* timers' runs in progress, with their threads */
  mp_timer *timers;     /* pending timers of code the server has */
  mp_timer *unbound;    /* made while code loads, not started yet */
  unsigned ntimers;     /* pending, on either list */

  /* Called, when set, for a request before it is routed: true when it
   * answered it (the stats endpoint). Runs no Lua. */
  bool (*intercept)(mp_server *s, mp_request *r);
  /* Called, when set and files is, for a request before it is routed
   * (after intercept): the app's static files (handlers/static.c).
   * Returns MP_DECLINED when r is not one of theirs (r is routed), 0 when
   * it answered r, MP_AGAIN when it took r to answer later (r is then
   * r->core_answers until mp_request_answered or mp_request_route). Runs
   * no Lua. */
  int (*serve_file)(mp_server *s, mp_request *r);
  const void *files; /* the current code's static mounts, or NULL */
  /* Called, when set, for a request released while it still holds
   * outbound sockets (r->outbound): the layer that made them (upstream/)
   * closes or pools them. Runs no Lua. */
  void (*release_outbound)(mp_request *r);
  /* Called once nothing is left to serve while stopping. */
  void (*on_drained)(mp_server *s);

  /* The cached "Date: ...\r\n" line, rebuilt when the second changes. */
  char date[40];
  size_t date_len;
  uint64_t date_sec;
};

/* The server of this process (the FFI functions reach requests here). */
extern mp_server *mp_server_self;

/* Sets up s on loop with cfg's limits, the pools and no code yet, and
 * makes it mp_server_self. Returns 0 or MP_NOMEM. */
int mp_server_init(mp_server *s, uv_loop_t *loop, const mp_config *cfg,
                   unsigned id, mp_shared *shared);

/* Makes code (with its router) the code new requests run on, and lets go
 * of the code current until now (requests still running keep theirs).
 * The per-route figures start over for the new routes. Timers made while
 * code loaded start now; the old code's pending timers fire at once,
 * premature (timer.h). Returns 0 or MP_NOMEM (then nothing changed, the
 * timers made while code loaded are dropped, and code is the caller's). */
int mp_server_set_code(mp_server *s, const mp_code_ops *ops, void *code,
                       mp_router *router);

/* A request let go of code: when nothing else holds it, it is closed on
 * the next loop turn. */
void mp_server_release_code(mp_server *s, void *code);

/* Whether anything is left to serve: a connection, a detached request, a
 * pending timer or a timer's run. */
bool mp_server_busy(const mp_server *s);

/* A connection closed, or a detached request, a task or a timer ended:
 * while stopping, once nothing is left (mp_server_busy), calls
 * on_drained. */
void mp_server_conn_closed(mp_server *s);

/* The current Date line. Cheap: formats at most once per second. */
const char *mp_server_date(mp_server *s, size_t *len);

/* Stops the handles s owns; the loop then ends once their close
 * callbacks have run. */
void mp_server_close(mp_server *s);

/* Frees everything mp_server_init made and the code; call once the loop
 * has stopped. */
void mp_server_destroy(mp_server *s);

#endif
