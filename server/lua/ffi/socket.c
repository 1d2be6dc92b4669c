/*
 * moonport.socket's door (see ../ffi.h): the running request's calls on
 * upstream/socket.c, which does the work. lua/moonport/core/socket.lua
 * yields after MP_AGAIN and turns codes into OpenResty's error strings.
 */
#include "ffi.h"

#include <uv.h>

#include "errors.h"
#include "request.h"
#include "socket.h"

int mp_sock_connect(const char *host, int port, const char *pool,
                    int pool_size, int backlog, double timeout_ms,
                    double *handle) {
  mp_request *r = mp_request_current();
  if (r == NULL) return MP_BAD_CONTEXT;
  mp_usock_target t = {.host = host,
                       .port = port,
                       .pool = pool,
                       .pool_size = pool_size,
                       .backlog = backlog,
                       .timeout_ms = timeout_ms};
  return mp_usock_connect(r, &t, handle);
}

int mp_sock_result(double handle) {
  int rc = mp_usock_result(handle);
  return rc == MP_BAD_CONTEXT ? MP_CLOSED : rc;
}

int mp_sock_receive(double handle, int pattern, size_t n, const char *until,
                    size_t ulen, int inclusive, double timeout_ms,
                    const char **out, size_t *len) {
  return mp_usock_receive(mp_request_current(), handle, pattern, n, until,
                          ulen, inclusive != 0, timeout_ms, out, len);
}

int mp_sock_send(double handle, const char *data, size_t len,
                 double timeout_ms) {
  return mp_usock_send(mp_request_current(), handle, data, len, timeout_ms);
}

int mp_sock_keepalive(double handle, double idle_ms, int pool_size) {
  return mp_usock_keepalive(handle, idle_ms, pool_size);
}

int mp_sock_close(double handle) { return mp_usock_close(handle); }

int mp_sock_reused(double handle) { return mp_usock_reused(handle); }

int mp_sock_option(double handle, int option, int value) {
  return mp_usock_option(handle, option, value);
}

int mp_sock_handshake(double handle, const char *server_name, int verify,
                      const char *cert, size_t cert_len, const char *key,
                      size_t key_len, double timeout_ms) {
  mp_usock_tls t = {.server_name = server_name,
                    .verify = verify != 0,
                    .cert_pem = cert,
                    .cert_len = cert_len,
                    .key_pem = key,
                    .key_len = key_len};
  return mp_usock_handshake(mp_request_current(), handle, &t, timeout_ms);
}

const char *mp_sock_tls_error(double handle) {
  return mp_usock_tls_error(handle);
}

int mp_sock_tls_resumed(double handle) {
  return mp_usock_tls_resumed(handle);
}

int mp_udp_open(const char *host, int port, double timeout_ms,
                double *handle) {
  return mp_usock_udp_open(mp_request_current(), host, port, timeout_ms,
                           handle);
}

int mp_udp_send(double handle, const char *data, size_t len) {
  return mp_usock_udp_send(handle, data, len);
}

int mp_udp_receive(double handle, size_t max, double timeout_ms,
                   const char **out, size_t *len) {
  return mp_usock_udp_receive(mp_request_current(), handle, max, timeout_ms,
                              out, len);
}

int mp_sock_counts(int *in_use, int *idle) {
  unsigned u, i;
  mp_upstream_counts(&u, &i);
  *in_use = (int)u;
  *idle = (int)i;
  return 0;
}

const char *mp_sock_strerror(int rc) {
  switch (rc) {
  case MP_TIMEOUT:
    return "timeout";
  case MP_CLOSED:
  case UV_EOF:
  case UV_ECANCELED:
  case UV_EPIPE:
    return "closed";
  case MP_NOMEM:
    return "no memory";
  }
  return uv_strerror(rc);
}
