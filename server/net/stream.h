/*
 * The transport seam: a byte stream a connection reads and writes through,
 * whatever carries the bytes (h2o's h2o_socket_t, libuv's uv_stream_t).
 * TCP (tcp.c) and Unix-domain sockets (pipe.c) are its transports, for
 * inbound connections and outbound sockets (upstream/) alike; the code
 * above them does not know which it holds. Callbacks get the stream; its owner finds itself through data.
 *
 * The stream is embedded in its owner, whose memory may go only in the
 * close callback (libuv's rule for handles).
 */
#ifndef MP_STREAM_H
#define MP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

typedef struct mp_stream mp_stream;

typedef void (*mp_stream_alloc_cb)(mp_stream *s, size_t suggested,
                                   uv_buf_t *buf);
/* nread > 0: bytes in buf; UV_EOF: the peer has shut down its sending
 * side; another negative code: the stream failed. */
typedef void (*mp_stream_read_cb)(mp_stream *s, ssize_t nread,
                                  const uv_buf_t *buf);
typedef void (*mp_stream_close_cb)(mp_stream *s);
/* status: 0 once connected, or a negative code (UV_ECANCELED when the
 * stream was closed first). */
typedef void (*mp_stream_connect_cb)(mp_stream *s, int status);

/* mp_stream_option's options (OpenResty's setoption names). */
enum {
  MP_STREAM_KEEPALIVE = 1, /* TCP keep-alive probes: value 0 or 1 */
  MP_STREAM_NODELAY = 2,   /* Nagle's algorithm off: value 0 or 1 */
  MP_STREAM_SNDBUF = 3,    /* the kernel's send buffer, in bytes */
  MP_STREAM_RCVBUF = 4     /* the kernel's receive buffer, in bytes */
};

typedef struct mp_stream_ops {
  int (*read_start)(mp_stream *s, mp_stream_alloc_cb alloc,
                    mp_stream_read_cb read);
  int (*read_stop)(mp_stream *s);
  /* Writes what can go now: the bytes taken, or UV_EAGAIN for none, or
   * another negative code when the stream failed. */
  int (*try_write)(mp_stream *s, const uv_buf_t *bufs, unsigned nbufs);
  /* Queues bytes; cb(req, status) once all are written or it failed. */
  int (*write)(mp_stream *s, uv_write_t *req, const uv_buf_t *bufs,
               unsigned nbufs, uv_write_cb cb);
  /* Bytes queued and not yet taken by the peer's side. */
  size_t (*queued)(const mp_stream *s);
  /* Shuts down the sending side once what is queued has been written. */
  int (*shutdown)(mp_stream *s, uv_shutdown_t *req, uv_shutdown_cb cb);
  /* Closes the stream (with reset, abruptly where the transport can: a
   * TCP reset); cb runs once it is closed. */
  void (*close)(mp_stream *s, bool reset, mp_stream_close_cb cb);
  /* The peer's address. Returns 0 or a negative code. */
  int (*peer)(const mp_stream *s, struct sockaddr_storage *addr);
  /* Sets a socket option (MP_STREAM_*). Returns 0, UV_ENOTSUP where the
   * transport has no such option, or a negative code. */
  int (*option)(mp_stream *s, int option, int value);
  /* The socket's descriptor, for the kernel to send a file into it
   * (sendfile); NULL where the transport has none the bytes may go
   * through unchanged. Returns 0 or a negative code. */
  int (*fileno)(const mp_stream *s, uv_os_fd_t *fd);
} mp_stream_ops;

struct mp_stream {
  const mp_stream_ops *ops;
  void *data; /* the owner's */
  mp_stream_alloc_cb alloc_cb;
  mp_stream_read_cb read_cb;
  mp_stream_close_cb close_cb;
  mp_stream_connect_cb connect_cb;
  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } handle; /* the transport's; only its ops touch it */
};

/* Accepts a pending connection of listener (a TCP listener) into s, with
 * Nagle's algorithm off. On failure s is closed, and close_cb runs. */
int mp_stream_tcp_accept(mp_stream *s, uv_loop_t *loop, uv_stream_t *listener,
                         mp_stream_close_cb close_cb);

/* Opens s on loop as a TCP stream and starts connecting it to addr, with
 * Nagle's algorithm off; cb runs once, when connected or failed (req must
 * live until then). On a failure to start, s is open and the caller
 * closes it. */
int mp_stream_tcp_connect(mp_stream *s, uv_loop_t *loop,
                          const struct sockaddr *addr, uv_connect_t *req,
                          mp_stream_connect_cb cb);

/* The same for a Unix-domain stream socket at path. */
int mp_stream_pipe_connect(mp_stream *s, uv_loop_t *loop, const char *path,
                           uv_connect_t *req, mp_stream_connect_cb cb);

static inline int mp_stream_read_start(mp_stream *s, mp_stream_alloc_cb alloc,
                                       mp_stream_read_cb read) {
  return s->ops->read_start(s, alloc, read);
}
static inline int mp_stream_read_stop(mp_stream *s) {
  return s->ops->read_stop(s);
}
static inline int mp_stream_try_write(mp_stream *s, const uv_buf_t *bufs,
                                      unsigned nbufs) {
  return s->ops->try_write(s, bufs, nbufs);
}
static inline int mp_stream_write(mp_stream *s, uv_write_t *req,
                                  const uv_buf_t *bufs, unsigned nbufs,
                                  uv_write_cb cb) {
  return s->ops->write(s, req, bufs, nbufs, cb);
}
static inline size_t mp_stream_queued(const mp_stream *s) {
  return s->ops->queued(s);
}
static inline int mp_stream_shutdown(mp_stream *s, uv_shutdown_t *req,
                                     uv_shutdown_cb cb) {
  return s->ops->shutdown(s, req, cb);
}
static inline void mp_stream_close(mp_stream *s, bool reset,
                                   mp_stream_close_cb cb) {
  s->ops->close(s, reset, cb);
}
static inline int mp_stream_peer(const mp_stream *s,
                                 struct sockaddr_storage *addr) {
  return s->ops->peer(s, addr);
}

static inline int mp_stream_option(mp_stream *s, int option, int value) {
  return s->ops->option(s, option, value);
}

/* The socket's descriptor (see fileno above): 0, or UV_ENOTSUP where the
 * transport has none to give. */
static inline int mp_stream_fileno(const mp_stream *s, uv_os_fd_t *fd) {
  return s->ops->fileno != NULL ? s->ops->fileno(s, fd) : UV_ENOTSUP;
}

#endif
