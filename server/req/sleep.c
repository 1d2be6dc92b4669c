/*
 * moonport.sleep's wait (see sleep.h): the request's timer, and nothing
 * else.
 */
#include "sleep.h"

#include <math.h>

#include "errors.h"
#include "wait.h"

static bool cut_short(const mp_request *r) { return r->aborted; }

static void stop_timer(mp_request *r) { uv_timer_stop(&r->timer); }

static const mp_wait_ops sleeping = {
    .name = "sleep",
    .client_gone = cut_short,
    .cleanup = stop_timer,
};

static void on_timer(uv_timer_t *t) { mp_request_wake(t->data); }

int mp_request_sleep(mp_request *r, double ms) {
  if (!(ms >= 0)) return MP_INVALID; /* NaN too */
  int rc = mp_wait_begin(r, &sleeping);
  if (rc != 0) return rc;
  if (ms > MP_SLEEP_MAX_MS) ms = MP_SLEEP_MAX_MS;
  if (ms == 0) /* a turn of the loop, no more */
    return uv_timer_start(&r->timer, on_timer, 0, 0);
  /* The loop's clock is the time its turn began, in whole ms: brought up
   * to date, with the fraction rounded up and one ms more, the sleep never
   * ends before ms have passed. */
  uv_update_time(r->srv->loop);
  return uv_timer_start(&r->timer, on_timer, (uint64_t)ceil(ms) + 1, 0);
}
