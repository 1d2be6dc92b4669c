/*
 * A request from its whole head to its last response byte: routing, the
 * handler's run, and the response the handler builds.
 *
 * Requests live in the worker's slot table and are reused; Lua names one by
 * (slot, generation). Releasing a request bumps its generation, so every
 * later call from a stale req/res object fails with MP_BAD_CONTEXT ("request
 * already finished") instead of reaching the next request.
 *
 * A request normally lives inside its connection. When the client goes
 * away while the handler is still running, the request is detached: the
 * connection closes and is freed at once, and the request lives on, on the
 * worker's detached list, until its handler returns. A detached request
 * whose response was not complete is aborted: the handler's wait in
 * progress ends at once with "closed" (after its on_abort functions run),
 * waits on the client fail from then on, and whatever it answers goes
 * nowhere. A detached handler that is still running --shutdown-timeout
 * later is stopped where it waits.
 *
 * A task (task.h) is a record without a connection: a light thread a
 * handler (or another task) spawned, or a timer's run. It has its own
 * coroutine, wait, timer and charge, so every wait works inside it as in
 * a handler; it never reaches the detached list, the access log or the
 * stats, and no req or res handle names it.
 */
#ifndef MP_REQUEST_H
#define MP_REQUEST_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "charge.h"
#include "http1.h"
#include "pool.h"
#include "router.h"
#include "server.h"
#include "wait.h"

typedef enum {
  MP_RES_NEW,       /* nothing written yet */
  MP_RES_STREAMING, /* head written, body going out in pieces */
  MP_RES_DONE       /* complete */
} mp_res_state;

/* Who answered a request (mp_request.answered_by), for its metrics. */
enum {
  MP_BY_ROUTER = 0, /* a route's handler, or the router's miss */
  MP_BY_CORE = 1,   /* the server's intercept: the /__moonport/ endpoints */
  MP_BY_FILES = 2   /* the app's static files (serve_file) */
};

/* The longest request id (mp_request_id). */
#define MP_REQUEST_ID_MAX 64

struct mp_request {
  uint32_t slot;
  uint32_t gen;
  mp_server *srv;
  mp_conn *conn;    /* NULL once detached */
  bool live;        /* acquired and not yet released */
  bool aborted;     /* the client left before the response was complete */
  bool abort_told;  /* and the handler has been told */
  mp_request *detached_prev; /* on the worker's detached list */
  mp_request *detached_next;
  uint64_t detached_at;      /* loop time it was detached */
  char peer[48];             /* the client's address, kept when detached */
  bool client_known;         /* peer holds mp_request_client's answer */
  uint8_t id_len;            /* its request id (mp_request_id), 0: none yet */
  uint8_t compress;          /* its compression rule (compress.h), 0: none */
  uint8_t answered_by;       /* MP_BY_*: who answered, for its metrics */
  void *gz;                  /* a compressed stream's deflate state, or NULL */
  char id[MP_REQUEST_ID_MAX];
  const char *head; /* first byte of the message in the connection's buffer */

  mp_http1_msg msg;
  mp_route_match match;
  void *code;         /* the code its handler runs on (held), or NULL */
  mp_buf body;        /* body bytes parsed and not yet read by the handler */
  bool started;       /* its handler has been started */
  bool body_done;     /* the whole body has been parsed */
  bool draining;      /* the handler is done: the rest of the body is dropped */
  bool continue_sent; /* 100 Continue went out */
  mp_buf trailers;    /* "name: value\n" for each trailer field kept */
  mp_buf saved_head;  /* a copy of the head, once detached */
  size_t trailer_start; /* where the field being parsed begins in it */
  bool in_trailer;      /* a trailer field is being parsed */
  bool trailer_value;   /* and its value has begun */

  /* The response. */
  int status;
  uint8_t reason_len; /* a reason phrase of its own, or 0 */
  char reason[64];
  mp_res_state res;
  bool head_only;     /* HEAD: everything but the body bytes */
  bool keep_alive;    /* false: the connection closes after this response */
  bool type_set;      /* the handler set Content-Type */
  bool server_set;    /* the handler set Server: no default one */
  bool length_set;    /* the handler declared Content-Length */
  bool chunked;       /* streaming with chunked framing */
  int64_t declared;   /* the declared Content-Length */
  int64_t sent;       /* body bytes written so far (streaming) */
  uint64_t body_bytes; /* body bytes of a whole response (res:send) */
  mp_buf headers;     /* handler header lines, each ending in CRLF */

  /* What the request cost. */
  uint64_t start_ns;  /* uv_hrtime() when its head was complete */
  mp_charge charge;   /* its C and Lua bytes (base/charge.h) */

  /* The handler. */
  /* The running handler as the code keeps it (lua/vm.c: its coroutine,
   * NULL when none, the coroutine's registry reference, and for a task
   * whose start was put off, how many arguments its function takes when
   * it starts, or -1). Only the code (mp_code_ops) writes it. */
  struct {
    void *co;
    int ref;
    int unstarted;
  } handler;
  bool running;    /* the handler has not returned yet */
  /* No handler: the core answers r itself, from a file (the server's
   * serve_file, handlers/static.c), and r counts as running until
   * mp_request_answered or mp_request_route. */
  bool core_answers;
  /* The file the core is sending as r's body (handlers/static.c's), or
   * NULL, and how the last one sent for r's handler ended (0, or
   * MP_NOT_FOUND, MP_DECLINED, MP_CLOSED, ...). */
  void *file;
  int file_rc;
  const mp_wait_ops *wait; /* what its handler waits on (wait.h), or NULL */
  uv_timer_t timer;

  /* The outbound sockets its code holds (upstream/'s, opaque here): the
   * server's release_outbound closes or pools them when r is released. */
  void *outbound;
  /* Outbound operations it sent (upstream/pg.c's queries), and how many of
   * them its wait still waits for. */
  unsigned upstream_ops;
  unsigned awaiting;

  /* Tasks (task.h). A request or a task is the parent of the tasks it
   * spawned, which end before it does (its code waits for them, or they
   * are killed with it). */
  bool task;            /* a task: no connection, no response */
  bool timer_run;       /* a task that runs a timer's function */
  bool park_children;   /* parked (park.h): a child's end wakes it too */
  mp_request *parent;   /* the record that spawned it; NULL for a timer's */
  mp_request *kids;     /* its live tasks, newest first */
  mp_request *sib_prev; /* on its parent's kids list */
  mp_request *sib_next;
  unsigned nkids;

  mp_hfield fields[]; /* limits.max_headers entries, msg.fields points here */
};

/* A request record for a new message on c, or NULL when out of memory. */
mp_request *mp_request_acquire(mp_server *s, mp_conn *c);

/* Gives the record back; every (slot, gen) naming it goes stale. */
void mp_request_release(mp_request *r);

/* Lua names a request by a handle (a context): an integer that a double
 * holds exactly, whose bits hold the slot, the generation and which object
 * it is (req or res). Handles cost no allocation, pass through JIT-compiled
 * FFI calls as plain integers, and get their methods from the number
 * metatable (lua/moonport/core/handle.lua), which tells them from other
 * numbers by their range alone: bit MP_CTX_TAG_BIT (52) is set and the
 * bits between it and the generation are clear, so every handle lies in
 * [2^52, 2^52 + 2^49), above any millisecond or microsecond timestamp and
 * short of 2^53 - 1, the largest integer scripts use as a bound. Below
 * them, the generation (MP_CTX_GEN_BITS from MP_CTX_GEN_SHIFT: a handle
 * kept through 2^32 reuses of its slot would alias), the slot (bits 16..1;
 * slots are limited to MP_MAX_SLOTS), and the kind in bit 0.
 * lua/moonport/core/ reads this layout through ../lua/ffi.h's constants. */
#define MP_MAX_SLOTS 65535

/* A request's id: the client's X-Request-Id when it is 1 to
 * MP_REQUEST_ID_MAX bytes of letters, digits and "-_.:", else 32 hex
 * digits made here (a random prefix per process and a counter: unique
 * without a lookup). Made the first time it is asked for, and kept for
 * the request's life. Sets *len. */
const char *mp_request_id(mp_request *r, size_t *len);

/* The client's address as text, for req.remote_addr and the access log:
 * the connection's peer, or, when the peer is in --trusted-proxy, the
 * rightmost address of X-Forwarded-For (all its fields, in order) that is
 * not a trusted proxy itself (nginx's real_ip_recursive); the leftmost
 * when all are; the last trusted hop when the next one to its left is not
 * an address. "-" when the peer is unknown. Looked up once per request;
 * the text lives as long as r. */
const char *mp_request_client(mp_request *r);
enum {
  MP_CTX_REQ = 0, /* the kinds */
  MP_CTX_RES = 1,
  MP_CTX_SLOT_SHIFT = 1,
  MP_CTX_GEN_SHIFT = 17,
  MP_CTX_GEN_BITS = 32,
  MP_CTX_TAG_BIT = 52
};

/* The request whose work the core is doing now (whose handler runs, or
 * whose body is being parsed), or NULL. */
static inline mp_request *mp_request_current(void) {
  return mp_charge_now != NULL ? (mp_request *)mp_charge_now->owner : NULL;
}

/* The handle of r as req or res. */
uint64_t mp_request_ctx(const mp_request *r, int kind);

/* The live request a handle names, or NULL when it has finished (or ctx
 * is not a handle at all, or names a task). The handle must name the
 * object `kind` (MP_CTX_REQ or MP_CTX_RES) too. */
mp_request *mp_request_from_ctx(uint64_t ctx, int kind);

/* The live record, request or task, that the handle mp_request_ctx(r,
 * MP_CTX_REQ) of a record names, or NULL. */
mp_request *mp_request_record(uint64_t ctx);

/* The record that waits for r's client on behalf of the code running now:
 * the current record when r is at the root of its parent chain (r's
 * handler, or one of its light threads), otherwise NULL (code that holds
 * another request's handle cannot wait on that request's client). */
mp_request *mp_request_waiter(mp_request *r);

/* The path r asked for: the target up to '?', as sent ("/" for an
 * absolute-form target without one). Valid while r lives. */
const char *mp_request_path(const mp_request *r, size_t *len);

/* Answers r, a request no route serves (r->match.miss), as the core does
 * for an app without a fallback: 404, or 405 with its Allow list. Runs no
 * Lua; a response already begun is cut short instead. */
void mp_request_answer_miss(mp_request *r);

/* r's head is whole at head (in the connection's buffer; body_done when
 * its body is all in too): routes r and runs its handler. Returns true
 * when r finished (handler returned, response complete) before returning;
 * otherwise the handler is suspended and mp_conn_request_done() follows
 * later. Runs Lua. */
bool mp_request_start(mp_request *r, const char *head, bool body_done);

/* The connection moved r's head to head (compacting its buffer). */
static inline void mp_request_head_moved(mp_request *r, const char *head) {
  r->head = head;
}

/* The whole body of r has been parsed. */
static inline void mp_request_body_done(mp_request *r) { r->body_done = true; }

/* r's handler is done before its body has all come: the rest is read and
 * dropped. */
void mp_request_drain_body(mp_request *r);

/* Once, after r's client left before its response was complete: true,
 * and from then on false (the handler is told once). */
bool mp_request_tell_abort(mp_request *r);

/* The request is over (its response complete): counts it in the stats and
 * the access log. */
void mp_request_account(mp_request *r);

/* The next body bytes for the handler: their length (valid until the
 * next parse), 0 at the end of the body, MP_CLOSED when the client has
 * gone before sending the rest, or MP_AGAIN: none yet, and the caller must
 * yield until the core resumes it (the wait is the current record's: r's
 * handler or one of its light threads; MP_STATE when the code running now
 * is neither). The first wait sends 100 Continue when the client asked
 * for it. */
int mp_request_read(mp_request *r, const char **out);

/* A piece of a trailer field from the parser (MP_H1_TRAILER_*). Fields
 * that must not be trailers are dropped. Returns 0 or MP_NOMEM. */
int mp_request_trailer(mp_request *r, int what, const char *p, size_t n);

/* Resumes r's handler (or task) after its wait is over; a wait with a
 * resume of its own gets that instead. Runs Lua. */
void mp_request_wake(mp_request *r);

/* r, which the core answers itself (r->core_answers), has its response
 * complete (or failed: then r->keep_alive is false): the request is over,
 * and the connection goes on with what follows. Call from a loop
 * callback, never from inside the connection's processing. Runs Lua for
 * pipelined requests. */
void mp_request_answered(mp_request *r);

/* r, which the core took to answer itself (r->core_answers), is not its
 * after all (no such file): r goes to the app's routes as any request,
 * from a loop callback. Runs Lua. */
void mp_request_route(mp_request *r);

/* r's connection is closing while its handler still runs: r goes on
 * without it (see above). Never runs Lua: an aborted handler is resumed on
 * a later loop turn. */
void mp_request_detach(mp_request *r);

/* Stops the detached handlers that have had --shutdown-timeout since their
 * client left; the worker calls it once a second. */
void mp_request_sweep(mp_server *s);

/* Shutdown: stops every detached handler, every task, and every
 * sleeping handler's timer. */
void mp_request_close_all(mp_server *s);
/* Frees every request record; call once the loop has stopped. */
void mp_request_free_all(mp_server *s);

#endif
