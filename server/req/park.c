/*
 * The park's wait (see park.h): the request's timer for the timeout, and
 * a flag that says whether a child's end unparks it. Unparking ends the
 * wait through wait.c, which resumes on the next loop turn.
 */
#include "park.h"

#include "errors.h"
#include "sleep.h"
#include "wait.h"

static bool cut_short(const mp_request *r) { return r->aborted; }

static void stop_timer(mp_request *r) {
  uv_timer_stop(&r->timer);
  r->park_children = false;
}

static const mp_wait_ops parking = {
    .name = "park",
    .client_gone = cut_short,
    .cleanup = stop_timer,
};

static void on_timeout(uv_timer_t *t) {
  mp_request *r = t->data;
  r->park_children = false;
  mp_request_wake(r);
}

int mp_request_park(mp_request *r, double timeout_ms, bool children) {
  if (timeout_ms != timeout_ms) return MP_INVALID;
  int rc = mp_wait_begin(r, &parking);
  if (rc != 0) return rc;
  r->park_children = children;
  if (timeout_ms < 0 || timeout_ms > MP_SLEEP_MAX_MS) return 0;
  /* The loop counts whole milliseconds from the time it read last: the
   * timeout counts from now, rounded up, and one more, so that it never
   * ends before the time given has passed. */
  uint64_t ms = (uint64_t)timeout_ms;
  if ((double)ms < timeout_ms) ms++;
  if (ms > 0) ms++;
  uv_update_time(r->srv->loop);
  return uv_timer_start(&r->timer, on_timeout, ms, 0);
}

int mp_request_unpark(mp_request *r) {
  if (r->wait != &parking) return MP_STATE;
  mp_wait_end_soon(r);
  return 0;
}

bool mp_request_parked_for_children(const mp_request *r) {
  return r->wait == &parking && r->park_children;
}
