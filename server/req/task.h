/*
 * Tasks: records that run code without a connection (see request.h). A
 * task is a light thread, spawned by a handler or by another task, or a
 * timer's run (timer.h), which has no parent. A task holds the code it
 * runs on, and its parent keeps it on a list: a record's code waits for
 * its tasks before it ends (lua/moonport/core/runner.lua), a record whose
 * code fails or that is stopped kills its tasks, and a record released
 * with tasks left kills them first, so no task outlives its parent.
 *
 * Tasks are the request layer's: it creates, wakes, ends and kills them;
 * the code (mp_code_ops) starts their coroutines (lua/vm.c). None is ever
 * on the detached list, in the access log or in the stats, and no req or
 * res handle names one (mp_request_from_ctx refuses them).
 */
#ifndef MP_TASK_H
#define MP_TASK_H

#include <stdbool.h>

#include "request.h"

/* A new task of parent (NULL for a timer's run) running on code, which
 * it holds while it lives, or NULL when no record is left. Its code is
 * the caller's to start (with mp_charge_now switched to the task's
 * charge); the task counts as running from now on. Runs no Lua. */
mp_request *mp_task_new(mp_server *s, mp_request *parent, void *code);

/* t's code has ended (MP_CODE_DONE or MP_CODE_FAILED): its tasks still
 * live are killed, what it cost is added to its parent's charge, a parent
 * parked for its children (park.h) is unparked, and the record is
 * released. Runs no Lua. */
void mp_task_end(mp_request *t, int outcome);

/* Ends t and its own tasks now, without resuming them: their waits are
 * cancelled, their coroutines dropped, their records released. t must not
 * be running (on the stack). Runs no Lua. */
void mp_task_kill(mp_request *t);

/* Kills every task of r (its light threads, theirs and so on). */
void mp_task_kill_kids(mp_request *r);

/* Resumes task t after its wait is over, and ends it when its code is
 * done. Runs Lua. */
void mp_task_resume(mp_request *t);

/* The record at the root of r's parent chain: a request, or a timer's
 * run; r itself when it has no parent. */
static inline mp_request *mp_task_root(mp_request *r) {
  while (r->parent != NULL) r = r->parent;
  return r;
}

/* r's client has left: every task of r (at any depth) is told as r was
 * (mp_wait_client_gone), its abort state set to r's. */
void mp_task_client_gone(mp_request *r);

/* Something changed on r's connection (body bytes came, output drained):
 * every task of r whose wait is now over (mp_wait_ready) is resumed on
 * the next loop turn. */
void mp_task_wake_ready(mp_request *r);

/* Shutdown: kills every timer's run, with its tasks. */
void mp_task_kill_all(mp_server *s);

/* request.c's release of a task: off its parent's list and out of the
 * counts. */
void mp__task_unlink(mp_request *t);

#endif
