/*
 * The TCP transport (see stream.h): libuv's TCP handle behind the stream
 * ops. The handle's data points at the stream, so libuv's callbacks find
 * it and hand the stream to the owner's.
 */
#include "stream.h"

#include "stream_int.h"

static mp_stream *of(const uv_handle_t *h) { return h->data; }

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  mp_stream *s = of(h);
  s->alloc_cb(s, suggested, buf);
}

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf) {
  mp_stream *s = of((uv_handle_t *)h);
  s->read_cb(s, nread, buf);
}

static int tcp_read_start(mp_stream *s, mp_stream_alloc_cb alloc,
                          mp_stream_read_cb read) {
  s->alloc_cb = alloc;
  s->read_cb = read;
  return uv_read_start((uv_stream_t *)&s->handle.tcp, on_alloc, on_read);
}

static int tcp_read_stop(mp_stream *s) {
  return uv_read_stop((uv_stream_t *)&s->handle.tcp);
}

static int tcp_try_write(mp_stream *s, const uv_buf_t *bufs, unsigned n) {
  return uv_try_write((uv_stream_t *)&s->handle.tcp, bufs, n);
}

static int tcp_write(mp_stream *s, uv_write_t *req, const uv_buf_t *bufs,
                     unsigned n, uv_write_cb cb) {
  return uv_write(req, (uv_stream_t *)&s->handle.tcp, bufs, n, cb);
}

static size_t tcp_queued(const mp_stream *s) {
  return uv_stream_get_write_queue_size((const uv_stream_t *)&s->handle.tcp);
}

static int tcp_shutdown(mp_stream *s, uv_shutdown_t *req, uv_shutdown_cb cb) {
  return uv_shutdown(req, (uv_stream_t *)&s->handle.tcp, cb);
}

static void on_close(uv_handle_t *h) {
  mp_stream *s = of(h);
  if (s->close_cb != NULL) s->close_cb(s);
}

static void tcp_close(mp_stream *s, bool reset, mp_stream_close_cb cb) {
  s->close_cb = cb;
  /* A reset is sent by closing with SO_LINGER at zero; the handle closes
   * the same way otherwise. */
  if (!reset || uv_tcp_close_reset(&s->handle.tcp, on_close) != 0)
    uv_close((uv_handle_t *)&s->handle.tcp, on_close);
}

static int tcp_peer(const mp_stream *s, struct sockaddr_storage *addr) {
  int len = sizeof *addr;
  return uv_tcp_getpeername(&s->handle.tcp, (struct sockaddr *)addr, &len);
}

static int tcp_option(mp_stream *s, int option, int value) {
  switch (option) {
  case MP_STREAM_KEEPALIVE:
    return uv_tcp_keepalive(&s->handle.tcp, value != 0, 60);
  case MP_STREAM_NODELAY:
    return uv_tcp_nodelay(&s->handle.tcp, value != 0);
  case MP_STREAM_SNDBUF:
    return uv_send_buffer_size((uv_handle_t *)&s->handle.tcp, &value);
  case MP_STREAM_RCVBUF:
    return uv_recv_buffer_size((uv_handle_t *)&s->handle.tcp, &value);
  }
  return UV_ENOTSUP;
}

static const mp_stream_ops tcp_ops = {
    .read_start = tcp_read_start,
    .read_stop = tcp_read_stop,
    .try_write = tcp_try_write,
    .write = tcp_write,
    .queued = tcp_queued,
    .shutdown = tcp_shutdown,
    .close = tcp_close,
    .peer = tcp_peer,
    .option = tcp_option,
};

int mp_stream_tcp_accept(mp_stream *s, uv_loop_t *loop, uv_stream_t *listener,
                         mp_stream_close_cb close_cb) {
  s->ops = &tcp_ops;
  uv_tcp_init(loop, &s->handle.tcp);
  s->handle.tcp.data = s;
  int rc = uv_accept(listener, (uv_stream_t *)&s->handle.tcp);
  if (rc != 0) {
    tcp_close(s, false, close_cb);
    return rc;
  }
  uv_tcp_nodelay(&s->handle.tcp, 1);
  return 0;
}

void mp__stream_on_connect(uv_connect_t *req, int status) {
  mp_stream *s = req->data;
  s->connect_cb(s, status);
}

int mp_stream_tcp_connect(mp_stream *s, uv_loop_t *loop,
                          const struct sockaddr *addr, uv_connect_t *req,
                          mp_stream_connect_cb cb) {
  s->ops = &tcp_ops;
  s->connect_cb = cb;
  uv_tcp_init(loop, &s->handle.tcp);
  s->handle.tcp.data = s;
  uv_tcp_nodelay(&s->handle.tcp, 1);
  req->data = s;
  return uv_tcp_connect(req, &s->handle.tcp, addr, mp__stream_on_connect);
}
