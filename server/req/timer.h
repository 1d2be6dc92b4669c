/*
 * Timers: a function of the app run later, once (moonport.timer.at) or
 * every interval (moonport.timer.every), in a task of its own (task.h),
 * outside any request. The C side keeps when and on which code; the
 * function and its arguments stay in that code's Lua state, under an id
 * the code chose (lua/moonport/core/task.lua), and the code runs them
 * (mp_code_ops.run_timer).
 *
 * A pending timer holds its code. Timers made while code loads wait,
 * unbound, until that code becomes the server's (mp_server_set_code), and
 * start then; a load that fails drops them. A timer runs early, with
 * premature true, when its worker starts stopping (every pending timer
 * fires at once, as OpenResty's do) or when a reload replaced its code
 * (its pending timers fire at once and end, recurring ones included); new
 * timers are refused then. A recurring timer fires on its interval
 * whether its last run is over or not, as OpenResty's ngx.timer.every.
 */
#ifndef MP_TIMER_H
#define MP_TIMER_H

#include <stdbool.h>

#include "server.h"

/* The longest delay or interval, in ms (2^53, as sleep.h's). */
#define MP_TIMER_MAX_MS 9007199254740992.0

/* A timer of `code` (NULL: the code loading now) that runs the function
 * the code knows as id after delay_ms, then, when interval_ms > 0, every
 * interval_ms. Returns 0, MP_INVALID for a negative or NaN delay or a
 * negative interval, MP_STATE while the server is stopping, MP_DECLINED
 * when code is no longer the server's (replaced by a reload), MP_NOMEM.
 * Runs no Lua. */
int mp_timer_add(mp_server *s, void *code, double id, double delay_ms,
                 double interval_ms);

/* mp_server_set_code made `code` current instead of `old` (NULL at
 * startup): the timers made while code loaded start, and old's pending
 * timers fire at once, premature. */
void mp_timer_code_changed(mp_server *s, void *old, void *code);

/* The code loading failed to load or to become current: drops the timers
 * it made. */
void mp_timer_discard_unbound(mp_server *s);

/* The server starts stopping: every pending timer fires at once,
 * premature. */
void mp_timer_stopping(mp_server *s);

/* Shutdown: drops every pending timer without running it. */
void mp_timer_close_all(mp_server *s);

/* Pending timers plus timers' runs in progress. */
static inline unsigned mp_timer_total(const mp_server *s) {
  return s->ntimers + s->ntimer_runs;
}

#endif
