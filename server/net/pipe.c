/*
 * The Unix-domain stream transport (see stream.h): libuv's pipe handle
 * behind the stream ops, for outbound sockets to "unix:/path" addresses.
 * TCP's options do not apply; resets are plain closes.
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

static int pipe_read_start(mp_stream *s, mp_stream_alloc_cb alloc,
                           mp_stream_read_cb read) {
  s->alloc_cb = alloc;
  s->read_cb = read;
  return uv_read_start((uv_stream_t *)&s->handle.pipe, on_alloc, on_read);
}

static int pipe_read_stop(mp_stream *s) {
  return uv_read_stop((uv_stream_t *)&s->handle.pipe);
}

static int pipe_try_write(mp_stream *s, const uv_buf_t *bufs, unsigned n) {
  return uv_try_write((uv_stream_t *)&s->handle.pipe, bufs, n);
}

static int pipe_write(mp_stream *s, uv_write_t *req, const uv_buf_t *bufs,
                      unsigned n, uv_write_cb cb) {
  return uv_write(req, (uv_stream_t *)&s->handle.pipe, bufs, n, cb);
}

static size_t pipe_queued(const mp_stream *s) {
  return uv_stream_get_write_queue_size((const uv_stream_t *)&s->handle.pipe);
}

static int pipe_shutdown(mp_stream *s, uv_shutdown_t *req, uv_shutdown_cb cb) {
  return uv_shutdown(req, (uv_stream_t *)&s->handle.pipe, cb);
}

static void on_close(uv_handle_t *h) {
  mp_stream *s = of(h);
  if (s->close_cb != NULL) s->close_cb(s);
}

static void pipe_close(mp_stream *s, bool reset, mp_stream_close_cb cb) {
  (void)reset;
  s->close_cb = cb;
  uv_close((uv_handle_t *)&s->handle.pipe, on_close);
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
    .read_start = pipe_read_start,
    .read_stop = pipe_read_stop,
    .try_write = pipe_try_write,
    .write = pipe_write,
    .queued = pipe_queued,
    .shutdown = pipe_shutdown,
    .close = pipe_close,
    .peer = pipe_peer,
    .option = pipe_option,
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
