/*
 * Timers (see timer.h): one uv_timer_t each, on one of two lists of the
 * server (pending with their code, or unbound while their code loads).
 * A firing takes the timer off its list when it is its last, runs it in a
 * new task, and closes the handle afterwards; the memory goes in the
 * handle's close callback, and the hold on the code then too, so that a
 * timer's code outlives the timer's last run.
 */
#include "timer.h"

#include <stdlib.h>

#include "errors.h"
#include "log.h"
#include "task.h"

struct mp_timer {
  uv_timer_t handle;
  mp_server *srv;
  void *code; /* held; NULL while unbound */
  double id;  /* the code's name for the function */
  uint64_t delay;
  uint64_t interval; /* 0: once */
  bool premature;    /* runs early, once, and ends */
  mp_timer *prev;
  mp_timer *next;
};

static void link_to(mp_timer **list, mp_timer *t) {
  t->prev = NULL;
  t->next = *list;
  if (*list != NULL) (*list)->prev = t;
  *list = t;
}

static void unlink_from(mp_timer **list, mp_timer *t) {
  if (t->prev != NULL)
    t->prev->next = t->next;
  else
    *list = t->next;
  if (t->next != NULL) t->next->prev = t->prev;
  t->prev = t->next = NULL;
}

static void free_timer(uv_handle_t *h) { free(h->data); }

/* Off its list already: closes the handle and lets go of the code. */
static void drop(mp_timer *t) {
  mp_server *s = t->srv;
  void *code = t->code;
  s->ntimers--;
  uv_close((uv_handle_t *)&t->handle, free_timer);
  if (code != NULL) mp_server_release_code(s, code);
}

/* Runs the timer's function in a task of its own. */
static void run(mp_server *s, void *code, double id, bool premature,
                bool last) {
  mp_request *task = mp_task_new(s, NULL, code);
  if (task == NULL) {
    mp_log(MP_LOG_ERROR, "timer: no request record left for its run; "
           "skipped");
    return;
  }
  int outcome = s->code_ops->run_timer(code, task, id, premature, last);
  if (outcome != MP_CODE_WAITING) mp_task_end(task, outcome);
}

static void on_fire(uv_timer_t *h) {
  mp_timer *t = h->data;
  mp_server *s = t->srv;
  bool premature = t->premature || s->stopping || t->code != s->code;
  bool last = premature || t->interval == 0;
  if (last) {
    uv_timer_stop(h);
    unlink_from(&s->timers, t);
  }
  run(s, t->code, t->id, premature, last);
  if (last) {
    drop(t);
    mp_server_conn_closed(s); /* a draining worker may be done now */
  }
}

static void start(mp_timer *t) {
  uv_timer_start(&t->handle, on_fire, t->delay, t->interval);
}

int mp_timer_add(mp_server *s, void *code, double id, double delay_ms,
                 double interval_ms) {
  if (!(delay_ms >= 0) || !(interval_ms >= 0)) return MP_INVALID;
  if (s->stopping) return MP_STATE;
  if (code != NULL && code != s->code) return MP_DECLINED;
  mp_timer *t = malloc(sizeof *t);
  if (t == NULL) return MP_NOMEM;
  if (delay_ms > MP_TIMER_MAX_MS) delay_ms = MP_TIMER_MAX_MS;
  if (interval_ms > MP_TIMER_MAX_MS) interval_ms = MP_TIMER_MAX_MS;
  /* The loop counts whole milliseconds from the time it read last: the
   * delay counts from now, rounded up, and one more, so that a timer
   * never fires before the time it was given has passed. */
  uint64_t delay = (uint64_t)delay_ms;
  if ((double)delay < delay_ms) delay++;
  if (delay > 0) delay++;
  uint64_t interval = (uint64_t)interval_ms;
  if ((double)interval < interval_ms) interval++;
  *t = (mp_timer){.srv = s, .code = code, .id = id, .delay = delay,
                  .interval = interval};
  uv_timer_init(s->loop, &t->handle);
  t->handle.data = t;
  s->ntimers++;
  if (code == NULL) {
    link_to(&s->unbound, t);
    return 0;
  }
  s->code_ops->hold(code);
  link_to(&s->timers, t);
  uv_update_time(s->loop);
  start(t);
  return 0;
}

void mp_timer_code_changed(mp_server *s, void *old, void *code) {
  if (old != NULL) {
    for (mp_timer *t = s->timers; t != NULL; t = t->next) {
      if (t->code != old || t->premature) continue;
      t->premature = true;
      uv_timer_start(&t->handle, on_fire, 0, 0);
    }
  }
  if (s->unbound == NULL) return;
  /* Delays count from now, not from when the code began loading. */
  uv_update_time(s->loop);
  while (s->unbound != NULL) {
    mp_timer *t = s->unbound;
    unlink_from(&s->unbound, t);
    t->code = code;
    s->code_ops->hold(code);
    link_to(&s->timers, t);
    start(t);
  }
}

void mp_timer_discard_unbound(mp_server *s) {
  while (s->unbound != NULL) {
    mp_timer *t = s->unbound;
    unlink_from(&s->unbound, t);
    drop(t);
  }
}

void mp_timer_stopping(mp_server *s) {
  for (mp_timer *t = s->timers; t != NULL; t = t->next) {
    if (t->premature) continue;
    t->premature = true;
    uv_timer_start(&t->handle, on_fire, 0, 0);
  }
}

void mp_timer_close_all(mp_server *s) {
  mp_timer_discard_unbound(s);
  while (s->timers != NULL) {
    mp_timer *t = s->timers;
    unlink_from(&s->timers, t);
    drop(t);
  }
}
