/*
 * What the transports built on libuv streams share (see stream_int.h):
 * TCP (tcp.c) and Unix-domain sockets (pipe.c) are both a uv_stream_t at
 * the start of the stream's handle union, and read, write, shut down and
 * close the same way; each keeps only its own connect, close, peer and
 * options. The handle's data points at the stream, so libuv's callbacks
 * find it and hand the stream to the owner's.
 */
#include "stream.h"

#include "stream_int.h"

static mp_stream *of(const uv_handle_t *h) { return h->data; }

static uv_stream_t *uv(mp_stream *s) { return (uv_stream_t *)&s->handle; }

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  mp_stream *s = of(h);
  s->alloc_cb(s, suggested, buf);
}

static void on_read(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf) {
  mp_stream *s = of((uv_handle_t *)h);
  s->read_cb(s, nread, buf);
}

int mp__uv_read_start(mp_stream *s, mp_stream_alloc_cb alloc,
                      mp_stream_read_cb read) {
  s->alloc_cb = alloc;
  s->read_cb = read;
  return uv_read_start(uv(s), on_alloc, on_read);
}

int mp__uv_read_stop(mp_stream *s) { return uv_read_stop(uv(s)); }

int mp__uv_try_write(mp_stream *s, const uv_buf_t *bufs, unsigned n) {
  return uv_try_write(uv(s), bufs, n);
}

int mp__uv_write(mp_stream *s, uv_write_t *req, const uv_buf_t *bufs,
                 unsigned n, uv_write_cb cb) {
  return uv_write(req, uv(s), bufs, n, cb);
}

size_t mp__uv_queued(const mp_stream *s) {
  return uv_stream_get_write_queue_size((const uv_stream_t *)&s->handle);
}

int mp__uv_fileno(const mp_stream *s, uv_os_fd_t *fd) {
  return uv_fileno((const uv_handle_t *)&s->handle, fd);
}

int mp__uv_shutdown(mp_stream *s, uv_shutdown_t *req, uv_shutdown_cb cb) {
  return uv_shutdown(req, uv(s), cb);
}

void mp__uv_on_close(uv_handle_t *h) {
  mp_stream *s = of(h);
  if (s->close_cb != NULL) s->close_cb(s);
}

void mp__stream_on_connect(uv_connect_t *req, int status) {
  mp_stream *s = req->data;
  s->connect_cb(s, status);
}
