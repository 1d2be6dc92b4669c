/*
 * The pending operation (see wait.h): beginning a wait, asking whether it
 * is over, and ending it when the client leaves or the handler is stopped.
 * The request's timer serves the wait that needs one (a sleep) and the
 * resume on the next loop turn; a request has one wait at a time, so the
 * two never overlap.
 */
#include "wait.h"

#include "errors.h"
#include "request.h"

int mp_wait_begin(mp_request *r, const mp_wait_ops *ops) {
  if (!r->running || r->wait != NULL) return MP_STATE;
  r->wait = ops;
  return 0;
}

bool mp_wait_ready(const mp_request *r) {
  return r->wait != NULL && r->wait->ready != NULL && r->wait->ready(r);
}

bool mp_wait_ends_when_gone(const mp_request *r) {
  (void)r;
  return true;
}

static void on_resume(uv_timer_t *t) { mp_request_wake(t->data); }

/* What a request waits on between its client leaving and its resume. */
static const mp_wait_ops resuming = {.name = "resume"};

void mp_wait_end_soon(mp_request *r) {
  const mp_wait_ops *w = r->wait;
  if (w == &resuming) return;
  if (w != NULL && w->cleanup != NULL) w->cleanup(r);
  r->wait = &resuming;
  uv_timer_start(&r->timer, on_resume, 0, 0);
}

void mp_wait_client_gone(mp_request *r) {
  const mp_wait_ops *w = r->wait;
  if (w == NULL || w->client_gone == NULL || !w->client_gone(r)) return;
  mp_wait_end_soon(r);
}

void mp_wait_cancel(mp_request *r) {
  if (r->wait != NULL && r->wait->cleanup != NULL) r->wait->cleanup(r);
  uv_timer_stop(&r->timer);
  r->wait = NULL;
}
