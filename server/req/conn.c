/*
 * A client connection (see conn.h). It reads and writes through a
 * transport (net/stream.h: TCP now), never a socket directly, so TLS will
 * plug in below without this file changing.
 *
 * Input: one read buffer from the worker's pool, held only while something
 * is pending in it; an idle keep-alive connection holds none. Requests are
 * parsed and served one at a time, in order: the parser stops after each
 * whole message and the next is parsed only when the previous one's handler
 * has returned. Responses to pipelined requests therefore queue up in
 * request order in `out` and leave in one write at the end of the event.
 *
 * Buffer layout while a message is in progress:
 *   [msg_off, msg_off+head)  its head; method, target and headers are spans
 *                            of it, so it stays until the request ends
 *   ... up to rpos           body bytes, already copied out, droppable
 *   [rpos, rlen)             bytes not parsed yet (pipelined requests)
 * compact() keeps the head and the unparsed bytes and drops the rest.
 *
 * Output: `out` collects responses; a flush tries uv_try_write and queues
 * the rest with uv_write, swapping `out` and `wbuf` so that responses can
 * keep collecting while a write is in flight. While more than HIGH_WATER
 * bytes wait, no further request is parsed and nothing more is read.
 *
 * Closing: a connection that must end after its responses shuts down its
 * sending side once they are written, then reads and drops input until the
 * client closes or LINGER_MS pass, so that unread input does not make the
 * kernel reset the connection before the client has read the responses.
 * The memory is freed in the close callback of its handle.
 *
 * Time: no connection has a timer of its own. The worker sweeps every
 * connection once a second (mp_conn_sweep): a head not complete within
 * --header-timeout or a body stalled past --body-timeout gets 408, a client
 * that takes no bytes for --write-timeout is dropped, an idle connection
 * closes after --idle-timeout, a lingering one after LINGER_MS. So an idle
 * connection is its record alone. Write and shutdown requests, needed only while a write is
 * queued or the connection is closing, come from a pool too.
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "cidr.h"
#include "errors.h"
#include "log.h"
#include "publish.h"
#include "request.h"
#include "response.h"
#include "stream.h"
#include "task.h"

#define HIGH_WATER (1024 * 1024)
#define LINGER_MS 2000
/* While the worker drains, how long a connection that has not sent its
 * first request yet may take to send it. */
#define DRAIN_FIRST_MS 1000
/* Requests one connection may have served in one turn of the loop before
 * the others get theirs: thousands pipelined in one read must not hold
 * the worker. The rest wait for the next turn (mp_conn_run_deferred). */
#define TURN_BUDGET 64
/* Body bytes held for a handler that has not read them yet; past this the
 * connection stops reading until it does. */
#define BODY_BUFFERED (64 * 1024)

struct mp_conn {
  mp_stream stream; /* the transport (net/stream.h) */
  mp_server *srv;
  mp_conn *prev;
  mp_conn *next;
  mp_conn *defer_prev; /* on the worker's deferred list while deferred */
  mp_conn *defer_next;

  bool closing;           /* uv_close has been called */
  bool close_after_flush; /* no more requests: end once `out` is written */
  bool reading;
  bool writing;    /* a uv_write is in flight */
  bool eof;        /* the client has shut down its sending side */
  bool lingering;  /* our side is shut down: dropping input until close */
  bool processing; /* conn_process is on the stack */
  bool deferred;   /* used up its turn with requests left to serve */
  bool reset;      /* end with a TCP reset, not a shutdown (a mock fault) */
  bool served;     /* a request has been answered on it */

  char *rbuf;
  size_t rlen;
  size_t rpos;
  mp_http1 h1;
  mp_request *req; /* the message being parsed or served */

  mp_buf out;
  mp_buf wbuf;
  uint64_t last_active; /* loop time of the last read or finished request */
  uint64_t msg_since;   /* when the first byte of the current message came */
  uint64_t write_since; /* when the queued write last made progress */
  size_t write_queued;  /* the write queue's size then */
  uint64_t linger_since;
  char peer[INET6_ADDRSTRLEN]; /* "" until mp_conn_peer_name asks */
};

static char discard[64 * 1024];

static void conn_process(mp_conn *c);
static void conn_close(mp_conn *c);
static void handler_done_early(mp_conn *c);
static void protocol_error(mp_conn *c);
static void finish_request(mp_conn *c);

mp_buf *mp_conn_out(mp_conn *c) { return &c->out; }

void mp_conn_close_after_flush(mp_conn *c) { c->close_after_flush = true; }

void mp_conn_reset_after_flush(mp_conn *c) {
  c->close_after_flush = true;
  c->reset = true;
}

static int peer_addr(mp_conn *c, struct sockaddr_storage *addr) {
  return mp_stream_peer(&c->stream, addr);
}

const char *mp_conn_peer_name(mp_conn *c) {
  if (c->peer[0] != '\0') return c->peer;
  struct sockaddr_storage addr;
  int rc = peer_addr(c, &addr);
  if (rc == 0 && addr.ss_family == AF_INET6)
    rc = uv_ip6_name((struct sockaddr_in6 *)&addr, c->peer, sizeof c->peer);
  else if (rc == 0)
    rc = uv_ip4_name((struct sockaddr_in *)&addr, c->peer, sizeof c->peer);
  if (rc != 0) strcpy(c->peer, "-");
  return c->peer;
}

int mp_conn_socket_dup(mp_conn *c) {
  uv_os_fd_t fd;
  int rc = mp_stream_fileno(&c->stream, &fd);
  if (rc != 0) return rc;
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  return copy >= 0 ? copy : -errno;
}

bool mp_conn_peer_in(mp_conn *c, const mp_cidr_list *list) {
  struct sockaddr_storage addr;
  if (list->n == 0 || peer_addr(c, &addr) != 0) return false;
  return mp_cidr_list_contains(list, (const struct sockaddr *)&addr);
}

bool mp_conn_is_loopback(mp_conn *c) {
  struct sockaddr_storage addr;
  if (peer_addr(c, &addr) != 0) return false;
  if (addr.ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&addr;
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr.ss_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)&addr)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return true;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return false;
}

static size_t pending_out(const mp_conn *c) {
  return c->out.len + (c->writing ? c->wbuf.len : 0);
}

size_t mp_conn_unsent(const mp_conn *c) { return pending_out(c); }

size_t mp_conn_unsent_all(const mp_server *s) {
  size_t total = 0;
  for (const mp_conn *c = s->conns; c != NULL; c = c->next)
    total += pending_out(c);
  return total;
}

/* Something changed on the connection's side (its output drained, body
 * bytes came): a handler whose wait that ends gets its next turn, from
 * the loop, never from inside the path that noticed; so does a light
 * thread of it waiting on the same thing (on its own timer). */
static void defer(mp_conn *c);
static void wake_later(mp_conn *c) {
  if (c->req == NULL) return;
  if (mp_wait_ready(c->req)) defer(c);
  if (c->req->kids != NULL) mp_task_wake_ready(c->req);
}

static bool handler_running(const mp_conn *c) {
  return c->req != NULL && c->req->running;
}

/* Bytes of the current message's head that must stay in the buffer. */
static size_t head_to_keep(const mp_conn *c) {
  if (c->h1.state == MP_H1_IN_HEAD) return c->rpos - c->h1.msg_off;
  return c->req != NULL ? c->req->msg.head_len : 0;
}

static void compact(mp_conn *c) {
  size_t head = head_to_keep(c);
  size_t unparsed = c->rlen - c->rpos;
  if (c->h1.msg_off > 0) memmove(c->rbuf, c->rbuf + c->h1.msg_off, head);
  if (c->rpos != head) memmove(c->rbuf + head, c->rbuf + c->rpos, unparsed);
  c->rpos = head;
  c->rlen = head + unparsed;
  mp_http1_moved(&c->h1, 0);
  if (c->req != NULL) mp_request_head_moved(c->req, c->rbuf);
}

static size_t room(const mp_conn *c) {
  if (c->rbuf == NULL) return c->srv->rbuf_size;
  return c->srv->rbuf_size - head_to_keep(c) - (c->rlen - c->rpos);
}

static void on_alloc(mp_stream *st, size_t suggested, uv_buf_t *buf) {
  mp_conn *c = st->data;
  (void)suggested;
  if (c->lingering) {
    *buf = uv_buf_init(discard, sizeof discard);
    return;
  }
  if (c->rbuf == NULL) {
    c->rbuf = mp_pool_get(&c->srv->rbuf_pool);
    if (c->rbuf == NULL) {
      *buf = uv_buf_init(NULL, 0); /* the read fails with UV_ENOBUFS */
      return;
    }
  }
  size_t cap = c->srv->rbuf_size;
  if (cap - c->rlen < cap / 4) compact(c);
  *buf = uv_buf_init(c->rbuf + c->rlen, (unsigned)(cap - c->rlen));
}

static void on_read(mp_stream *st, ssize_t nread, const uv_buf_t *buf);

static void update_reading(mp_conn *c) {
  bool want;
  if (c->closing || c->eof)
    want = false;
  else if (c->lingering)
    want = true;
  else
    /* A deferred connection reads no more this turn: libuv would otherwise
     * call on_read again and again for as long as bytes keep coming. */
    want = !c->close_after_flush && !c->deferred && room(c) > 0 &&
           pending_out(c) <= HIGH_WATER &&
           !(c->req != NULL && c->req->body.len >= BODY_BUFFERED);
  if (want && !c->reading) {
    if (mp_stream_read_start(&c->stream, on_alloc, on_read) == 0)
      c->reading = true;
  } else if (!want && c->reading) {
    mp_stream_read_stop(&c->stream);
    c->reading = false;
  }
}

static void on_close(mp_stream *st) {
  mp_conn *c = st->data;
  if (c->rbuf != NULL) mp_pool_put(&c->srv->rbuf_pool, c->rbuf);
  mp_buf_release(&c->out);
  mp_buf_release(&c->wbuf);
  mp_pool_put(&c->srv->conn_pool, c);
}

/* Lets go of the request in progress, whatever its state: a handler still
 * running goes on without the connection (mp_request_detach), anything
 * else is released. */
static void drop_request(mp_conn *c) {
  mp_request *r = c->req;
  if (r == NULL) return;
  c->req = NULL;
  if (r->running)
    mp_request_detach(r);
  else
    mp_request_release(r);
}

static void on_turn(uv_idle_t *h) { mp_conn_run_deferred(h->data); }

static void defer(mp_conn *c) {
  if (c->deferred) return;
  mp_server *s = c->srv;
  c->deferred = true;
  c->defer_prev = NULL;
  c->defer_next = s->deferred;
  if (s->deferred != NULL) s->deferred->defer_prev = c;
  s->deferred = c;
  uv_idle_start(&s->turn_idle, on_turn);
}

static void undefer(mp_conn *c) {
  if (!c->deferred) return;
  if (c->defer_prev != NULL)
    c->defer_prev->defer_next = c->defer_next;
  else
    c->srv->deferred = c->defer_next;
  if (c->defer_next != NULL) c->defer_next->defer_prev = c->defer_prev;
  c->deferred = false;
}

void mp_conn_run_deferred(mp_server *s) {
  /* Those deferred again while this runs wait for the next turn. */
  mp_conn *list = s->deferred;
  s->deferred = NULL;
  for (mp_conn *c = list; c != NULL; c = c->defer_next) c->deferred = false;
  while (list != NULL) {
    mp_conn *c = list;
    list = c->defer_next;
    if (list != NULL) list->defer_prev = NULL;
    if (c->closing) continue;
    if (c->req != NULL && mp_wait_ready(c->req))
      mp_request_wake(c->req);
    else
      conn_process(c);
  }
  if (s->deferred == NULL) uv_idle_stop(&s->turn_idle);
}

static void conn_close(mp_conn *c) {
  if (c->closing) return;
  c->closing = true;
  undefer(c);
  drop_request(c);
  mp_server *s = c->srv;
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next != NULL) c->next->prev = c->prev;
  s->nconns--;
  if (s->slot != NULL) s->slot->conns = (int32_t)s->nconns;
  if (s->cfg->stats || s->cfg->metrics) mp_publish_worker(s);
  mp_stream_close(&c->stream, c->reset, on_close);
  mp_server_conn_closed(s);
}

void mp_conn_drain_all(mp_server *s) {
  mp_conn *c = s->conns;
  while (c != NULL) {
    mp_conn *next = c->next;
    /* A running handler finishes first (finish_request then ends the
     * connection); a partial request is dropped. A connection that has
     * not had its first request served yet is not idle: it was accepted
     * for a client that is sending one (perhaps into a socket another
     * process, a new binary, goes on listening on), and closing it would
     * fail that request; it is served, with Connection: close, or closed
     * by the sweep once it has been quiet for DRAIN_FIRST_MS. */
    if (!handler_running(c) && !c->lingering && c->served) {
      if (pending_out(c) == 0)
        conn_close(c);
      else
        c->close_after_flush = true;
    }
    c = next;
  }
}

void mp_conn_close_all(mp_server *s) {
  while (s->conns != NULL) conn_close(s->conns);
}

static void timed_out(mp_conn *c, const char *text) {
  bool answered = c->req != NULL && c->req->res != MP_RES_NEW;
  drop_request(c);
  if (!answered) mp_response_error_to(c->srv, &c->out, 408, text, true, NULL, 0);
  c->close_after_flush = true;
  mp_conn_flush(c);
}

/* Progress of the queued write: libuv reports none until it completes, but
 * its queue shrinks as the client reads. */
static bool write_stalled(mp_conn *c, uint64_t now) {
  size_t queued = mp_stream_queued(&c->stream);
  if (queued < c->write_queued) {
    c->write_queued = queued;
    c->write_since = now;
  }
  return now - c->write_since >= c->srv->cfg->write_timeout_ms;
}

void mp_conn_sweep(mp_server *s) {
  uint64_t now = uv_now(s->loop);
  const mp_config *cfg = s->cfg;
  mp_conn *c = s->conns;
  while (c != NULL) {
    mp_conn *next = c->next; /* conn_close unlinks c */
    if (c->lingering) {
      if (now - c->linger_since >= LINGER_MS) conn_close(c);
    } else if (c->writing) {
      /* A client that stops reading holds its connection only so long. */
      if (write_stalled(c, now)) conn_close(c);
      else c->last_active = now;
    } else if (c->req != NULL && mp_wait_awaits_input(c->req->wait)) {
      if (now - c->last_active >= cfg->body_timeout_ms)
        timed_out(c, "request body stalled");
    } else if (handler_running(c)) {
      c->last_active = now; /* time in a handler is not idle time */
    } else if (c->req != NULL && c->h1.state == MP_H1_IN_HEAD) {
      if (now - c->msg_since >= cfg->header_timeout_ms)
        timed_out(c, "request head not complete in time");
    } else if (c->req != NULL && c->h1.state == MP_H1_IN_BODY) {
      if (now - c->last_active >= cfg->body_timeout_ms)
        timed_out(c, "request body stalled");
    } else if (now - c->last_active >= cfg->idle_timeout_ms ||
               (s->stopping && now - c->last_active >= DRAIN_FIRST_MS)) {
      conn_close(c);
    }
    c = next;
  }
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  mp_conn *c = req->data;
  mp_pool_put(&c->srv->req_pool, req);
  if (c->closing) return;
  if (status < 0 || c->eof) conn_close(c);
}

static void begin_shutdown(mp_conn *c) {
  if (c->lingering || c->closing) return;
  if (c->reset) {
    conn_close(c);
    return;
  }
  c->lingering = true;
  drop_request(c);
  c->linger_since = uv_now(c->srv->loop);
  uv_shutdown_t *sreq = mp_pool_get(&c->srv->req_pool);
  if (sreq == NULL) {
    conn_close(c);
    return;
  }
  sreq->data = c;
  if (mp_stream_shutdown(&c->stream, sreq, on_shutdown) != 0) {
    mp_pool_put(&c->srv->req_pool, sreq);
    conn_close(c);
    return;
  }
  update_reading(c);
}

static void on_write(uv_write_t *req, int status) {
  mp_conn *c = req->data;
  mp_pool_put(&c->srv->req_pool, req);
  c->writing = false;
  c->wbuf.len = 0;
  if (c->closing) return;
  if (status < 0) {
    conn_close(c);
    return;
  }
  mp_buf_release(&c->wbuf);
  wake_later(c);
  conn_process(c);
}

void mp_conn_flush(mp_conn *c) {
  if (c->closing || c->writing) return;
  if (c->out.len == 0) {
    if (c->close_after_flush) begin_shutdown(c);
    return;
  }
  uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
  int n = mp_stream_try_write(&c->stream, &b, 1);
  if (n == (int)c->out.len) {
    /* Nothing pending: the block goes back to the pool, so an idle
     * connection holds no buffer. */
    mp_buf_release(&c->out);
    if (c->close_after_flush)
      begin_shutdown(c);
    else
      update_reading(c); /* a backlog that stopped reading may be gone */
    wake_later(c);
    return;
  }
  if (n < 0 && n != UV_EAGAIN) {
    conn_close(c);
    return;
  }
  if (n < 0) n = 0;
  mp_buf tmp = c->wbuf;
  c->wbuf = c->out;
  c->out = tmp;
  c->out.len = 0;
  b = uv_buf_init(c->wbuf.data + n, (unsigned)(c->wbuf.len - (size_t)n));
  uv_write_t *wreq = mp_pool_get(&c->srv->req_pool);
  if (wreq == NULL) {
    conn_close(c);
    return;
  }
  wreq->data = c;
  int rc = mp_stream_write(&c->stream, wreq, &b, 1, on_write);
  if (rc != 0) {
    mp_pool_put(&c->srv->req_pool, wreq);
    conn_close(c);
    return;
  }
  c->writing = true;
  c->write_since = uv_now(c->srv->loop);
  c->write_queued = mp_stream_queued(&c->stream);
  update_reading(c);
}

static int on_trailer(void *ud, int what, const char *p, size_t n) {
  mp_conn *c = ud;
  if (c->req->draining) return 0;
  return mp_request_trailer(c->req, what, p, n);
}

static int on_body(void *ud, const char *p, size_t n) {
  mp_conn *c = ud;
  if (c->req->draining) return 0;
  return mp_buf_append(&c->req->body, p, n);
}

static void protocol_error(mp_conn *c) {
  char text[256];
  const char *why = c->h1.error ? c->h1.error : "malformed request";
  if (c->h1.status == 400)
    snprintf(text, sizeof text, "bad request: %s", why);
  else
    snprintf(text, sizeof text, "%s", why);
  /* A handler that has begun its answer cannot get an error after it. */
  bool answered = c->req != NULL && c->req->res != MP_RES_NEW;
  drop_request(c);
  c->close_after_flush = true;
  if (answered) return;
  int n = mp_response_error_to(c->srv, &c->out, c->h1.status, text, true, NULL, 0);
  c->close_after_flush = true;
  c->srv->stats.requests++;
  if (c->srv->cfg->metrics)
    mp_publish_invalid(c->srv, c->h1.status, 0, n > 0 ? (uint64_t)n : 0);
  else if (c->srv->cfg->stats)
    mp_publish_worker(c->srv);
  mp_access_entry e = {.host = mp_conn_peer_name(c), .request = "-",
                       .request_len = 1, .status = c->h1.status,
                       .bytes = n > 0 ? (uint64_t)n : 0};
  mp_access_log(&e);
}

static void finish_request(mp_conn *c) {
  mp_request *r = c->req;
  bool keep = r->keep_alive;
  mp_request_account(r);
  mp_request_release(r);
  c->req = NULL;
  c->served = true;
  mp_http1_next(&c->h1, c->rpos);
  c->last_active = uv_now(c->srv->loop);
  if (!keep || c->srv->stopping) c->close_after_flush = true;
}

static void after_process(mp_conn *c) {
  if (c->closing) return;
  /* A client that has stopped sending gets what it asked for, then the
   * connection ends; a partial request at EOF is dropped. */
  if (c->eof && !handler_running(c) && pending_out(c) <= HIGH_WATER)
    c->close_after_flush = true;
  if (c->rbuf != NULL && c->req == NULL && c->rpos == c->rlen &&
      mp_http1_idle(&c->h1)) {
    mp_pool_put(&c->srv->rbuf_pool, c->rbuf);
    c->rbuf = NULL;
    c->rlen = c->rpos = 0;
    mp_http1_moved(&c->h1, 0);
  }
  update_reading(c);
  mp_conn_flush(c);
}

/* Parses body bytes of the message whose handler has started: into the
 * request's body buffer while the handler may still read them, discarded
 * once it is done. Returns false when processing must stop here. */
static bool feed_body(mp_conn *c, unsigned *served) {
  mp_request *r = c->req;
  if (c->rpos == c->rlen) return false;
  if (!r->draining && r->body.len >= BODY_BUFFERED) return false; /* reader behind */
  int rc = mp_http1_execute(&c->h1, c->rbuf, c->rlen, &c->rpos);
  if (rc == MP_H1_ERROR) {
    protocol_error(c);
    return false;
  }
  if (rc == MP_H1_MESSAGE) mp_request_body_done(r);
  wake_later(c); /* a reader waiting for these bytes, or the end */
  if (rc != MP_H1_MESSAGE) return true;
  if (!r->running) {
    finish_request(c);
    (*served)++;
  }
  return true;
}

static void conn_process(mp_conn *c) {
  if (c->processing) return;
  c->processing = true;
  unsigned served = 0;
  while (!c->closing && !c->close_after_flush && !c->lingering) {
    mp_request *r = c->req;
    if (r != NULL && r->started && !r->body_done) {
      /* Whatever the core mallocs from here on is this request's. */
      mp_charge_switch(&r->charge);
      bool more = feed_body(c, &served);
      mp_charge_switch(NULL);
      if (!more) break;
      continue;
    }
    if (handler_running(c)) break;
    if (pending_out(c) > HIGH_WATER) {
      /* Write what we can now; if the client is not taking it, parse no
       * further until on_write says it has. */
      mp_conn_flush(c);
      if (c->closing || pending_out(c) > HIGH_WATER) break;
    }
    if (c->rpos == c->rlen) break;
    if (served == TURN_BUDGET) {
      defer(c);
      break;
    }
    if (c->req == NULL) {
      c->req = mp_request_acquire(c->srv, c);
      if (c->req == NULL) {
        mp_log(MP_LOG_ERROR, "out of memory for a request record");
        c->close_after_flush = true;
        break;
      }
      mp_http1_attach(&c->h1, &c->req->msg);
      c->msg_since = uv_now(c->srv->loop);
    }
    r = c->req;
    mp_charge_switch(&r->charge);
    int rc = mp_http1_execute(&c->h1, c->rbuf, c->rlen, &c->rpos);
    if (rc == MP_H1_NEED_MORE) break;
    if (rc == MP_H1_ERROR) {
      protocol_error(c);
      break;
    }
    /* A whole head. The body bytes already here are parsed first, so a
     * handler whose body came with its head finds it whole; one whose body
     * is still on its way starts now and reads it as it comes. */
    while (rc == MP_H1_HEAD || rc == MP_H1_NEED_MORE) {
      if (c->h1.state == MP_H1_DONE || c->rpos == c->rlen ||
          r->body.len >= BODY_BUFFERED)
        break;
      rc = mp_http1_execute(&c->h1, c->rbuf, c->rlen, &c->rpos);
    }
    if (rc == MP_H1_ERROR) {
      protocol_error(c);
      break;
    }
    bool over = mp_request_start(r, c->rbuf + c->h1.msg_off,
                                 c->h1.state == MP_H1_DONE);
    mp_charge_switch(NULL);
    if (!over) continue; /* suspended; its body may still need parsing */
    if (r->body_done) {
      finish_request(c);
      served++;
    } else {
      handler_done_early(c);
    }
  }
  mp_charge_switch(NULL);
  c->processing = false;
  after_process(c);
}

/* The handler is done before its body has all come: the rest is read and
 * dropped (up to the body limit), unless the client is still waiting for
 * a 100 Continue it never got: then it may never send the body, and the
 * connection ends after the response. */
static void handler_done_early(mp_conn *c) {
  mp_request *r = c->req;
  if (r->msg.expect_continue) {
    c->close_after_flush = true;
    return;
  }
  mp_request_drain_body(r);
}

void mp_conn_request_done(mp_conn *c) {
  if (c->closing) return;
  if (c->req->body_done)
    finish_request(c);
  else
    handler_done_early(c);
  conn_process(c);
}

void mp_conn_process(mp_conn *c) {
  if (!c->closing) conn_process(c);
}

int mp_conn_continue(mp_conn *c) {
  return mp_buf_append(&c->out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

static void on_read(mp_stream *st, ssize_t nread, const uv_buf_t *buf) {
  mp_conn *c = st->data;
  (void)buf;
  if (nread > 0) {
    if (c->lingering) return;
    c->rlen += (size_t)nread;
    c->last_active = uv_now(c->srv->loop);
    conn_process(c);
    return;
  }
  if (nread == 0) return;
  if (nread == UV_EOF) {
    c->eof = true;
    update_reading(c);
    if (c->lingering) {
      conn_close(c);
      return;
    }
    if (handler_running(c) &&
        (!c->req->body_done || c->req->res != MP_RES_DONE)) {
      /* A client that closes while its request's body is incomplete, or
       * before its answer is, has left (nginx's 499): no response is
       * owed and nothing follows. The handler goes on without the
       * connection, which ends once what is queued is written. */
      drop_request(c);
      c->close_after_flush = true;
      mp_conn_flush(c);
      return;
    }
    conn_process(c);
    return;
  }
  conn_close(c);
}

void mp_conn_accept(mp_server *s, uv_stream_t *listener) {
  mp_conn *c = mp_pool_get(&s->conn_pool);
  if (c == NULL) {
    mp_log(MP_LOG_ERROR, "out of memory for a connection");
    return;
  }
  memset(c, 0, sizeof *c);
  s->stats.accepted++;
  c->srv = s;
  c->stream.data = c;
  if (mp_stream_tcp_accept(&c->stream, s->loop, listener, on_close) != 0)
    return;
  mp_http1_init(&c->h1, &s->limits, on_body, on_trailer, c);
  c->out.pool = &s->out_pool;
  c->wbuf.pool = &s->out_pool;
  c->next = s->conns;
  if (s->conns != NULL) s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  if (s->slot != NULL) s->slot->conns = (int32_t)s->nconns;
  c->last_active = uv_now(s->loop);
  if (s->nconns > s->cfg->max_connections) {
    /* Past the ceiling: accepted, so the client is not left waiting in the
     * backlog, and closed at once; those already served go on. */
    s->stats.refused++;
    conn_close(c);
    return;
  }
  if (s->cfg->stats || s->cfg->metrics) mp_publish_worker(s);
  update_reading(c);
}

size_t mp_conn_size(void) { return sizeof(mp_conn); }
