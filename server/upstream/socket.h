/*
 * Outbound stream sockets (TCP and Unix-domain), for handlers: the C half
 * of moonport.socket.tcp, which knows no Lua. A socket belongs to the
 * worker; Lua names it by a handle (a number holding a slot and a
 * generation, as requests are named), which goes stale when the socket is
 * closed, put into a keep-alive pool, or its request ends, so a stale
 * handle can never reach another connection.
 *
 * Every operation runs to completion at once when it can (the bytes asked
 * for are buffered, the write fits in the kernel's buffer, the connection
 * comes from a pool) and otherwise answers MP_AGAIN: the calling request
 * (mp_request_current) then waits on the socket, and the caller must
 * yield; the request is resumed when the operation is over or its
 * timeout fired, and asks again (receive) or fetches the outcome
 * (mp_usock_result). One operation at a time per socket.
 *
 * Received bytes are buffered in C, in the socket's read buffer, which is
 * charged to the request that waits for them and may not grow past
 * --request-memory-limit; patterns (a size, a line, all, any, up to a
 * boundary) are matched there, and only the result reaches Lua. An idle
 * pooled connection holds no buffer.
 *
 * Errors keep OpenResty's rules: a read timeout leaves the connection open;
 * every other failure closes it, and later calls answer MP_CLOSED.
 */
#ifndef MP_SOCKET_H
#define MP_SOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mp_request mp_request;
typedef struct mp_server mp_server;

/* What receive reads. */
enum {
  MP_RECV_SIZE = 0,  /* exactly n bytes */
  MP_RECV_LINE = 1,  /* up to LF; the LF and every CR dropped */
  MP_RECV_ALL = 2,   /* until the peer closes */
  MP_RECV_ANY = 3,   /* what is there, at most n bytes (at least one) */
  MP_RECV_UNTIL = 4  /* up to a boundary (see mp_usock_receive) */
};

/* Where connect goes, and through which pool. */
typedef struct mp_usock_target {
  const char *host; /* a name or IP literal, or "unix:/path"; NUL-ended */
  int port;         /* ignored for unix: */
  const char *pool; /* the pool's name; NULL: "host:port" or the path */
  int pool_size;    /* idle connections kept; 0: the default (30) */
  int backlog;      /* >= 0: cap open connections at pool_size and queue
                       at most this many connects; -1: no cap */
  double timeout_ms; /* for the whole connect, queue and lookup included */
} mp_usock_target;

/* Sets up outbound sockets for s's worker (and installs s's
 * release_outbound). Returns 0 or MP_NOMEM. */
int mp_upstream_init(mp_server *s);

/* Closes every socket, pooled or in use, and cancels lookups in flight:
 * the loop can then end. */
void mp_upstream_close(void);

/* Opens a connection for r (it holds the handle until r is released):
 * from the pool when an idle one is there (0 at once), else MP_AGAIN (wait,
 * then mp_usock_result), or a negative code: MP_DECLINED when the pool's
 * backlog is full ("too many waiting connect operations"), MP_NOT_FOUND
 * for a host name that is not one. *handle is set in the first two
 * cases. */
int mp_usock_connect(mp_request *r, const mp_usock_target *t, double *handle);

/* The outcome of the operation r waited for: 0, or MP_TIMEOUT, MP_CLOSED,
 * UV_EAI_* (the host did not resolve), another libuv code (the connection
 * failed: UV_ECONNREFUSED, UV_ECONNRESET...). MP_BAD_CONTEXT when the
 * handle is stale. A failed connect leaves the handle closed. */
int mp_usock_result(double handle);

/* Reads by pattern (MP_RECV_*): n is the size (SIZE, ANY; for UNTIL, 0 or
 * the most bytes one call returns), until/ulen the boundary (UNTIL),
 * inclusive whether it is returned with the data. Returns 0 with the bytes
 * in *out and *len (valid until the next call on the socket); MP_AGAIN
 * (wait, then ask again with the same arguments); MP_DECLINED for UNTIL
 * with a size when the boundary is next (it is consumed: that part is
 * over); or an error (MP_TIMEOUT, MP_CLOSED, a libuv code, MP_NOMEM when
 * the buffer would pass --request-memory-limit) with the partial data
 * received in *out and *len (consumed). */
int mp_usock_receive(mp_request *r, double handle, int pattern, size_t n,
                     const char *until, size_t ulen, bool inclusive,
                     double timeout_ms, const char **out, size_t *len);

/* Sends len bytes: 0 once all are with the kernel, MP_AGAIN (wait, then
 * mp_usock_result), or an error (the connection is then closed). */
int mp_usock_send(mp_request *r, double handle, const char *data,
                  size_t len, double timeout_ms);

/* Puts the connection into its pool, idle at most idle_ms (0: no limit),
 * the pool keeping at most pool_size idle (when it is made now; 0: the
 * default). The handle goes stale. Returns 0, MP_DECLINED when received
 * bytes are still unread ("unread data in buffer"), MP_STATE when an
 * operation is in progress, MP_CLOSED when the connection is closed (the
 * handle goes stale too). */
int mp_usock_keepalive(double handle, double idle_ms, int pool_size);

/* Closes the connection; the handle goes stale. An operation in progress
 * (from another of the request's coroutines) ends with MP_CLOSED. Returns
 * 0, or MP_CLOSED when it was closed already. */
int mp_usock_close(double handle);

/* How many times the connection was taken from its pool (0 for a fresh
 * one), or MP_CLOSED. */
int mp_usock_reused(double handle);

/* Client TLS settings for mp_usock_handshake. */
typedef struct mp_usock_tls {
  const char *server_name; /* SNI and the name checked, or NULL */
  bool verify;             /* check the chain and the name */
  const char *cert_pem, *key_pem; /* a client certificate, or NULL */
  size_t cert_len, key_len;
} mp_usock_tls;

/* TLS over the connection (--tls-ca or the system store verifies), with
 * the pool's newest session offered for resumption. 0 when it is already
 * TLS with these settings (a pooled connection) or the handshake ended
 * at once; MP_AGAIN (wait, then mp_usock_result); UV_EPROTO with the
 * reason in mp_usock_tls_error; MP_STATE when the connection is TLS with
 * other settings. */
int mp_usock_handshake(mp_request *r, double handle, const mp_usock_tls *t,
                       double timeout_ms);
/* Why the last handshake on handle failed ("certificate verify failed:
 * self-signed certificate", "certificate host mismatch"...), or "". */
const char *mp_usock_tls_error(double handle);
/* Whether the handshake resumed an earlier session: 1, 0, or MP_CLOSED. */
int mp_usock_tls_resumed(double handle);

/* Datagram sockets (udp.c), named by handles as stream sockets are. */

/* A UDP socket whose peer is host:port (resolved as connect does), or a
 * Unix-domain datagram socket for "unix:/path". MP_AGAIN: wait, then
 * mp_usock_result; *handle is set. */
int mp_usock_udp_open(mp_request *r, const char *host, int port,
                      double timeout_ms, double *handle);
/* Sends one datagram: 0, or an error (UV_EMSGSIZE when too large). */
int mp_usock_udp_send(double handle, const char *data, size_t len);
/* The next datagram, at most max bytes of it (the rest is dropped): 0
 * with it in *out, *len; MP_AGAIN (wait, then ask again); MP_TIMEOUT; an
 * error (UV_ECONNREFUSED when a port answered that nothing listens). */
int mp_usock_udp_receive(mp_request *r, double handle, size_t max,
                         double timeout_ms, const char **out, size_t *len);

/* Sets a socket option (net/stream.h's MP_STREAM_*). */
int mp_usock_option(double handle, int option, int value);

/* Sockets open, in use and idle in pools (for the stats and the specs). */
void mp_upstream_counts(unsigned *in_use, unsigned *idle);

/* TCP connects that failed (refused, unreachable, timed out) since the
 * worker began (for the metrics). */
uint64_t mp_upstream_connect_errors(void);

#endif
