/*
 * The pending operation: what a suspended handler waits for. A request
 * waits on one thing at a time; the thing is described by an mp_wait_ops
 * record (lua-nginx-module's coctx->cleanup and ctx->resume_handler), and
 * nothing outside the file that defines a kind of wait knows what the
 * kind is: the connection asks whether the wait is over when something
 * changed on its side, the detach path asks whether the client's leaving
 * ends it, and stopping a request calls its cleanup. A new kind of wait
 * (a socket, a timer, a query) is a new file with its ops, and touches no
 * switch anywhere.
 *
 * Sleep is in sleep.c, body reads in request.c, write backpressure in
 * response.c, parking (woken by other code) in park.c.
 */
#ifndef MP_WAIT_H
#define MP_WAIT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct mp_request mp_request;

typedef struct mp_wait_ops {
  const char *name; /* "sleep", "body", ... for logs */
  /* When set: is what r waits for there now? The connection asks when its
   * input or output changed, and resumes r on the next loop turn if so.
   * NULL: only the wait's own callback (a timer) ends it. */
  bool (*ready)(const mp_request *r);
  /* r's client has left (r is detached, r->aborted when its response was
   * not complete): true when that ends the wait now. */
  bool (*client_gone)(const mp_request *r);
  /* The wait ends without what it waited for (cut short, or the handler
   * stopped): undo what it set up, such as a timer. May be NULL. */
  void (*cleanup)(mp_request *r);
  /* A wait for the client's bytes: held to --body-timeout. */
  bool awaits_input;
  /* When set, what the connection (or anything else) resumes is this,
   * not the handler (mp_request_wake): a wait the core works through by
   * itself, step by step (a file being sent, handlers/static.c), which it
   * ends itself when done. May be NULL. */
  void (*resume)(mp_request *r);
} mp_wait_ops;

/* r's handler waits on ops (it must yield right after). Returns 0, or
 * MP_STATE when r's handler is not running or already waits. */
int mp_wait_begin(mp_request *r, const mp_wait_ops *ops);

/* Whether r waits, and on what kind of thing. */
static inline bool mp_wait_awaits_input(const mp_wait_ops *w) {
  return w != NULL && w->awaits_input;
}

/* True when r waits and what it waits for is there (ops->ready). */
bool mp_wait_ready(const mp_request *r);

/* A client_gone for waits on the client itself: its leaving always ends
 * them. */
bool mp_wait_ends_when_gone(const mp_request *r);

/* r's client has left: when that ends r's wait, the wait is cleaned up
 * and r is resumed on the next loop turn (never from inside the
 * connection's close). */
void mp_wait_client_gone(mp_request *r);

/* Ends r's wait now (its cleanup runs) and resumes r on the next loop
 * turn, never from inside the caller's stack. */
void mp_wait_end_soon(mp_request *r);

/* Ends r's wait without resuming r (the handler is being stopped). */
void mp_wait_cancel(mp_request *r);

#endif
