/*
 * The Unix-domain stream transport (see stream.h): libuv's pipe handle
 * behind the stream ops, for outbound sockets to "unix:/path" addresses,
 * reading and writing as every libuv stream does (uvstream.c). TCP's
 * options do not apply; resets are plain closes.
 */
#include "stream.h"

#include "stream_int.h"

static void pipe_close(mp_stream *s, bool reset, mp_stream_close_cb cb) {
  (void)reset;
  s->close_cb = cb;
  uv_close((uv_handle_t *)&s->handle.pipe, mp__uv_on_close);
}

static int pipe_peer(const mp_stream *s, struct sockaddr_storage *addr) {
  (void)s;
  (void)addr;
  return UV_ENOTSUP;
}

static int pipe_option(mp_stream *s, int option, int value) {
  switch (option) {
  case MP_STREAM_SNDBUF:
    return uv_send_buffer_size((uv_handle_t *)&s->handle.pipe, &value);
  case MP_STREAM_RCVBUF:
    return uv_recv_buffer_size((uv_handle_t *)&s->handle.pipe, &value);
  }
  return UV_ENOTSUP;
}

static const mp_stream_ops pipe_ops = {
    .read_start = mp__uv_read_start,
    .read_stop = mp__uv_read_stop,
    .try_write = mp__uv_try_write,
    .write = mp__uv_write,
    .queued = mp__uv_queued,
    .shutdown = mp__uv_shutdown,
    .close = pipe_close,
    .peer = pipe_peer,
    .option = pipe_option,
    .fileno = mp__uv_fileno,
};

int mp_stream_pipe_connect(mp_stream *s, uv_loop_t *loop, const char *path,
                           uv_connect_t *req, mp_stream_connect_cb cb) {
  s->ops = &pipe_ops;
  s->connect_cb = cb;
  uv_pipe_init(loop, &s->handle.pipe, 0);
  s->handle.pipe.data = s;
  req->data = s;
  /* libuv reports a failure to connect through the callback. */
  uv_pipe_connect(req, &s->handle.pipe, path, mp__stream_on_connect);
  return 0;
}
