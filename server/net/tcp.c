/*
 * The TCP transport (see stream.h): libuv's TCP handle behind the stream
 * ops, reading and writing as every libuv stream does (uvstream.c); its
 * own are accepting, connecting, closing with a reset, the peer's address
 * and TCP's options.
 */
#include "stream.h"

#include "stream_int.h"

static void tcp_close(mp_stream *s, bool reset, mp_stream_close_cb cb) {
  s->close_cb = cb;
  /* A reset is sent by closing with SO_LINGER at zero; the handle closes
   * the same way otherwise. */
  if (!reset || uv_tcp_close_reset(&s->handle.tcp, mp__uv_on_close) != 0)
    uv_close((uv_handle_t *)&s->handle.tcp, mp__uv_on_close);
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
    .read_start = mp__uv_read_start,
    .read_stop = mp__uv_read_stop,
    .try_write = mp__uv_try_write,
    .write = mp__uv_write,
    .queued = mp__uv_queued,
    .shutdown = mp__uv_shutdown,
    .close = tcp_close,
    .peer = tcp_peer,
    .option = tcp_option,
    .fileno = mp__uv_fileno,
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
