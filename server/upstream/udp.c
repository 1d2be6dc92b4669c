/*
 * Outbound datagram sockets (see socket.h's mp_usock_udp_*): UDP to a
 * host and port, or a Unix-domain datagram socket ("unix:/dev/log"), for
 * DNS, statsd and syslog clients. A datagram socket is a socket record of
 * socket.c (its handle, owner, timer and lookup are the same) whose
 * transport is a connected uv_udp_t instead of a stream: setpeername
 * resolves the host like connect, sends go out at once (a datagram is
 * sent whole or not at all), and a receive waits for one datagram, which
 * is kept in the read buffer until it is read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "errors.h"
#include "request.h"
#include "server.h"
#include "socket_int.h"

/* The largest datagram a receive takes (UDP's payload limit). */
#define MAX_DATAGRAM 65536

static void on_closed(uv_handle_t *h) { mp__usock_handle_closed(h->data); }

void mp__udp_close(mp_usock *s) {
  s->udp_open = false;
  s->reading = false;
  uv_close((uv_handle_t *)&s->dgram_handle, on_closed);
}

/* A connected Unix-domain datagram socket for path, as a descriptor. */
static int unix_socket(const char *path) {
  struct sockaddr_un sun;
  if (strlen(path) >= sizeof sun.sun_path) return UV_ENAMETOOLONG;
  memset(&sun, 0, sizeof sun);
  sun.sun_family = AF_UNIX;
  strcpy(sun.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
    int rc = -errno;
    close(fd);
    return rc;
  }
  return fd;
}

int mp__udp_connect(mp_usock *s, const struct sockaddr *addr) {
  uv_loop_t *loop = mp_server_self->loop;
  int fd = -1;
  if (s->unix_path) {
    fd = unix_socket(s->host);
    if (fd < 0) return fd;
  }
  int rc = uv_udp_init(loop, &s->dgram_handle);
  if (rc != 0) {
    if (fd >= 0) close(fd);
    return rc;
  }
  s->dgram_handle.data = s;
  s->udp_open = true;
  s->handles++;
  rc = fd >= 0 ? uv_udp_open(&s->dgram_handle, fd)
               : uv_udp_connect(&s->dgram_handle, addr);
  if (rc != 0 && fd >= 0) close(fd);
  return rc;
}

int mp_usock_udp_open(mp_request *r, const char *host, int port,
                      double timeout_ms, double *handle) {
  if (r == NULL) return MP_BAD_CONTEXT;
  mp_usock *s = mp__usock_new(r, handle);
  if (s == NULL) return MP_NOMEM;
  s->udp = true;
  s->unix_path = strncmp(host, "unix:", 5) == 0;
  s->host = strdup(s->unix_path ? host + 5 : host);
  s->port = port;
  if (s->host == NULL) {
    mp__usock_retire(s);
    return MP_NOMEM;
  }
  int rc = mp__usock_begin_op(s, r, OP_CONNECT, timeout_ms);
  if (rc != MP_AGAIN) {
    mp__usock_retire(s);
    return rc;
  }
  /* A literal address or a known name opens at once: the operation then
   * ends from inside this call, which resumes r on the next loop turn. */
  mp__usock_open(s);
  return MP_AGAIN;
}

int mp_usock_udp_send(double handle, const char *data, size_t len) {
  mp_usock *s = mp__usock_from_handle(handle);
  if (s == NULL || !s->udp || s->state != US_OPEN) return MP_CLOSED;
  uv_buf_t buf = uv_buf_init((char *)data, (unsigned)len);
  int rc;
  if (s->unix_path) {
    uv_os_fd_t fd;
    rc = uv_fileno((uv_handle_t *)&s->dgram_handle, &fd);
    if (rc == 0) {
      ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
      rc = n < 0 ? -errno : (int)n;
    }
  } else {
    rc = uv_udp_try_send(&s->dgram_handle, &buf, 1, NULL);
  }
  return rc < 0 ? rc : 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  mp_usock *s = h->data;
  s->rbuf.len = s->rpos = 0;
  if (mp__usock_room(s, MAX_DATAGRAM) != 0) {
    *buf = uv_buf_init(NULL, 0);
    return;
  }
  *buf = uv_buf_init(s->rbuf.data, MAX_DATAGRAM);
}

static void on_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf,
                    const struct sockaddr *addr, unsigned flags) {
  (void)buf;
  (void)flags;
  mp_usock *s = h->data;
  if (nread == 0 && addr == NULL) return; /* nothing more to read now */
  if (nread < 0)
    s->rerr = (int)nread;
  else {
    s->rbuf.len = (size_t)nread;
    s->dgram = true;
  }
  uv_udp_recv_stop(h);
  s->reading = false;
  mp__usock_end_op(s, 0, false);
}

int mp_usock_udp_receive(mp_request *r, double handle, size_t max,
                         double timeout_ms, const char **out, size_t *len) {
  *out = "";
  *len = 0;
  mp_usock *s = mp__usock_from_handle(handle);
  if (s == NULL || !s->udp || s->state != US_OPEN) return MP_CLOSED;
  if (r == NULL) return MP_BAD_CONTEXT;
  if (s->op != OP_NONE) return MP_STATE;
  int result = s->result;
  s->result = 0;
  if (s->dgram) {
    s->dgram = false;
    *out = s->rbuf.data;
    *len = s->rbuf.len < max ? s->rbuf.len : max;
    return 0;
  }
  if (s->rerr != 0) {
    int rc = s->rerr;
    s->rerr = 0; /* a datagram socket's error (a refused port) passes */
    return rc;
  }
  if (result == MP_TIMEOUT) return MP_TIMEOUT;
  int rc = uv_udp_recv_start(&s->dgram_handle, on_alloc, on_recv);
  if (rc != 0) return rc;
  s->reading = true;
  rc = mp__usock_begin_op(s, r, OP_READ, timeout_ms);
  if (rc != MP_AGAIN) {
    uv_udp_recv_stop(&s->dgram_handle);
    s->reading = false;
  }
  return rc;
}
