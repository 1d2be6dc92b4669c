/*
 * The door of timers, light threads and semaphores (see ../ffi.h): the
 * record whose code runs now, parked and unparked (req/park.h), its light
 * threads counted (req/task.h), and timers (req/timer.h).
 * lua/moonport/core/task.lua and runner.lua build the Lua API on these;
 * spawning and killing threads run Lua, so they are lua/vm.c's classic
 * functions, not these.
 */
#include "ffi.h"

#include "errors.h"
#include "park.h"
#include "request.h"
#include "task.h"
#include "timer.h"

/* A handle passed as a double: 0 when it cannot be one (converting a
 * negative, NaN or huge double to an integer is undefined). */
static uint64_t handle_of(double h) {
  return h >= 0 && h < 9007199254740992.0 ? (uint64_t)h : 0;
}

double mp_task_self(void) {
  mp_request *r = mp_request_current();
  return r != NULL ? (double)mp_request_ctx(r, MP_CTX_REQ) : 0;
}

int mp_task_park(double ms, int children) {
  mp_request *r = mp_request_current();
  if (r == NULL) return MP_BAD_CONTEXT;
  return mp_request_park(r, ms, children != 0);
}

int mp_task_unpark(double handle) {
  mp_request *r = mp_request_record(handle_of(handle));
  if (r == NULL) return MP_BAD_CONTEXT;
  return mp_request_unpark(r);
}

int mp_task_alive(double handle) {
  return mp_request_record(handle_of(handle)) != NULL;
}

int mp_task_children(void) {
  mp_request *r = mp_request_current();
  return r != NULL ? (int)r->nkids : 0;
}

int mp_timer_start(double id, double delay_ms, double interval_ms) {
  mp_server *s = mp_server_self;
  if (s == NULL) return 0; /* a check of the app: nothing will serve */
  mp_request *r = mp_request_current();
  /* No record current: the app is loading, and its code is not the
   * server's yet. */
  return mp_timer_add(s, r != NULL ? r->code : NULL, id, delay_ms,
                      interval_ms);
}

int mp_timer_count(void) {
  mp_server *s = mp_server_self;
  return s != NULL ? (int)mp_timer_total(s) : 0;
}
