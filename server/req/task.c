/*
 * Tasks (see task.h): their records' creation, end and killing, and the
 * client's leaving and the connection's changes passed on to them.
 *
 * A record's tasks are a doubly linked list through sib_prev/sib_next,
 * newest first, headed by the parent's kids. Killing walks that tree
 * depth first, so that a task's tasks go before it. A task is released
 * only off the stack: mp_task_end runs after its code returned to C, and
 * only a parent that is running (so never one of its tasks) kills.
 */
#include "task.h"

#include <assert.h>

#include "conn.h"
#include "park.h"
#include "wait.h"

mp_request *mp_task_new(mp_server *s, mp_request *parent, void *code) {
  mp_request *t = mp_request_acquire(s, NULL);
  if (t == NULL) return NULL;
  t->task = true;
  t->timer_run = parent == NULL;
  t->parent = parent;
  t->match.route = NULL;
  t->started = true;
  t->body_done = true;
  t->res = MP_RES_DONE; /* it has no response of its own */
  t->code = code;
  s->code_ops->hold(code);
  t->running = true;
  if (parent != NULL) {
    t->sib_prev = NULL;
    t->sib_next = parent->kids;
    if (parent->kids != NULL) parent->kids->sib_prev = t;
    parent->kids = t;
    parent->nkids++;
    s->nthreads++;
  } else {
    s->ntimer_runs++;
  }
  return t;
}

void mp__task_unlink(mp_request *t) {
  mp_server *s = t->srv;
  mp_request *p = t->parent;
  if (p != NULL) {
    if (t->sib_prev != NULL)
      t->sib_prev->sib_next = t->sib_next;
    else
      p->kids = t->sib_next;
    if (t->sib_next != NULL) t->sib_next->sib_prev = t->sib_prev;
    p->nkids--;
    s->nthreads--;
  } else {
    s->ntimer_runs--;
  }
  t->sib_prev = t->sib_next = NULL;
  t->parent = NULL;
  t->task = t->timer_run = false;
}

void mp_task_end(mp_request *t, int outcome) {
  mp_server *s = t->srv;
  mp_request *p = t->parent;
  (void)outcome;
  t->running = false;
  /* A task that failed leaves its own tasks behind: they die with it. */
  if (t->kids != NULL) mp_task_kill_kids(t);
  if (p != NULL) {
    /* The parent's figures (the access log's, the route's) include what
     * its tasks cost. */
    p->charge.lua_bytes += t->charge.lua_bytes;
    p->charge.c_bytes += t->charge.c_bytes;
  }
  mp_request_release(t);
  if (p != NULL && mp_request_parked_for_children(p)) mp_request_unpark(p);
  mp_server_conn_closed(s); /* a draining worker may be done now */
}

void mp_task_kill(mp_request *t) {
  assert(mp_request_current() != t && "a task killed while its code runs");
  if (t->kids != NULL) mp_task_kill_kids(t);
  mp_wait_cancel(t);
  t->srv->code_ops->abandon(t->code, t);
  t->running = false;
  mp_request_release(t);
}

void mp_task_kill_kids(mp_request *r) {
  while (r->kids != NULL) mp_task_kill(r->kids);
}

void mp_task_resume(mp_request *t) {
  mp_request *root = mp_task_root(t);
  int outcome = t->srv->code_ops->resume(t->code, t);
  if (outcome != MP_CODE_WAITING) mp_task_end(t, outcome);
  /* What a light thread wrote to its request's response goes out now, as
   * after a turn of the handler (the request's handler is running while
   * any thread of it lives, so no other request starts here). */
  if (root->live && !root->task && root->conn != NULL)
    mp_conn_process(root->conn);
}

void mp_task_client_gone(mp_request *r) {
  for (mp_request *k = r->kids; k != NULL; k = k->sib_next) {
    k->aborted = r->aborted;
    mp_wait_client_gone(k);
    mp_task_client_gone(k);
  }
}

void mp_task_wake_ready(mp_request *r) {
  for (mp_request *k = r->kids; k != NULL; k = k->sib_next) {
    if (mp_wait_ready(k)) mp_wait_end_soon(k);
    if (k->kids != NULL) mp_task_wake_ready(k);
  }
}

void mp_task_kill_all(mp_server *s) {
  for (uint32_t i = 0; i < s->nreqs; i++) {
    mp_request *r = s->reqs[i];
    if (r->live && r->task && r->parent == NULL) mp_task_kill(r);
  }
}
