/*
 * The serving context of a worker (see server.h): its pools, its handles,
 * the code handlers run on, and the code let go of and not yet closed.
 */
#include "server.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "errors.h"
#include "http1_out.h"
#include "publish.h"
#include "request.h"
#include "timer.h"

mp_server *mp_server_self;

int mp_server_init(mp_server *s, uv_loop_t *loop, const mp_config *cfg,
                   unsigned id, mp_shared *shared) {
  memset(s, 0, sizeof *s);
  s->loop = loop;
  s->cfg = cfg;
  s->id = id;
  s->shared = shared;
  s->slot = mp_shared_slot(shared, id);
  mp_publish_attach(s);
  s->limits.max_header_size = cfg->max_header_size;
  s->limits.max_body_size = cfg->max_body_size;
  s->limits.max_headers = cfg->max_headers;
  /* Room for a whole head plus the start of what follows it. */
  s->rbuf_size = cfg->max_header_size + 4096;
  mp_pool_init(&s->conn_pool, mp_conn_size(), 1024);
  mp_pool_init(&s->req_pool,
               sizeof(uv_write_t) > sizeof(uv_shutdown_t) ? sizeof(uv_write_t)
                                                          : sizeof(uv_shutdown_t),
               256);
  mp_pool_init(&s->rbuf_pool, s->rbuf_size, 64);
  mp_pool_init(&s->out_pool, 16 * 1024, 256);
  uv_idle_init(loop, &s->turn_idle);
  s->turn_idle.data = s;
  uv_check_init(loop, &s->retire);
  s->retire.data = s;
  mp_server_self = s;
  return 0;
}

int mp_server_set_code(mp_server *s, const mp_code_ops *ops, void *code,
                       mp_router *router) {
  unsigned n = mp_router_count(router);
  int rc = s->code == NULL ? mp_stats_init(&s->stats, n)
                           : mp_stats_reset_routes(&s->stats, n);
  if (rc != 0) {
    mp_timer_discard_unbound(s);
    return rc;
  }
  void *old = s->code;
  s->code_ops = ops;
  s->code = code;
  s->router = router;
  mp_timer_code_changed(s, old, code);
  if (old != NULL) mp_server_release_code(s, old);
  return 0;
}

static void close_retired(uv_check_t *h) {
  mp_server *s = h->data;
  for (unsigned i = 0; i < s->nretired; i++) s->code_ops->close(s->retired[i]);
  s->nretired = 0;
  uv_check_stop(h);
}

void mp_server_release_code(mp_server *s, void *code) {
  if (s->code_ops->release(code) > 0) return;
  void **list = mp_realloc(s->retired, s->nretired * sizeof *list,
                           (s->nretired + 1) * sizeof *list);
  if (list == NULL) { /* closing now beats keeping a whole state */
    s->code_ops->close(code);
    return;
  }
  s->retired = list;
  s->retired[s->nretired++] = code;
  if (!uv_is_closing((uv_handle_t *)&s->retire))
    uv_check_start(&s->retire, close_retired);
}

bool mp_server_busy(const mp_server *s) {
  return s->nconns > 0 || s->ndetached > 0 || s->ntimers > 0 ||
         s->ntimer_runs > 0;
}

void mp_server_conn_closed(mp_server *s) {
  if (s->stopping && !mp_server_busy(s) && s->on_drained != NULL)
    s->on_drained(s);
}

const char *mp_server_date(mp_server *s, size_t *len) {
  /* uv_now() is the loop's cached clock: no system call here. */
  uint64_t now_ms = uv_now(s->loop);
  if (s->date_len == 0 || now_ms / 1000 != s->date_sec) {
    s->date_sec = now_ms / 1000;
    s->date_len = mp_http1_date_line(s->date, time(NULL));
  }
  *len = s->date_len;
  return s->date;
}

void mp_server_close(mp_server *s) {
  mp_timer_close_all(s);
  if (!uv_is_closing((uv_handle_t *)&s->turn_idle))
    uv_close((uv_handle_t *)&s->turn_idle, NULL);
  if (!uv_is_closing((uv_handle_t *)&s->retire))
    uv_close((uv_handle_t *)&s->retire, NULL);
}

void mp_server_destroy(mp_server *s) {
  mp_timer_close_all(s); /* they hold code */
  if (s->code != NULL) {
    s->code_ops->close(s->code);
    s->code = NULL;
  }
  for (unsigned i = 0; i < s->nretired; i++) s->code_ops->close(s->retired[i]);
  free(s->retired);
  s->retired = NULL;
  s->nretired = 0;
  mp_request_free_all(s);
  mp_stats_free(&s->stats);
  mp_pool_destroy(&s->conn_pool);
  mp_pool_destroy(&s->req_pool);
  mp_pool_destroy(&s->rbuf_pool);
  mp_pool_destroy(&s->out_pool);
  if (mp_server_self == s) mp_server_self = NULL;
}
