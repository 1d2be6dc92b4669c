/*
 * What socket.c and keepalive.c share: the socket record and the pool.
 * Nothing else includes this.
 */
#ifndef MP_SOCKET_INT_H
#define MP_SOCKET_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "dns.h"
#include "pool.h"
#include "socket.h"
#include "stream.h"
#include "tls.h"

#define MP__NO_SLOT UINT32_MAX
/* Idle connections a pool keeps when nothing said how many
 * (lua_socket_pool_size's default). */
#define MP__POOL_SIZE 30

typedef struct mp_kpool mp_kpool;
typedef struct mp_usock mp_usock;

typedef enum {
  US_NEW,        /* made, nothing started */
  US_QUEUED,     /* in its pool's backlog, waiting for a connection */
  US_RESOLVING,  /* its host name is being looked up */
  US_CONNECTING, /* the transport is connecting */
  US_OPEN,       /* connected, held by a request */
  US_IDLE,       /* connected, idle in its pool */
  US_CLOSED      /* closed or closing */
} us_state;

typedef enum { OP_NONE, OP_CONNECT, OP_READ, OP_WRITE, OP_HANDSHAKE } us_op;

struct mp_usock {
  uint32_t slot;        /* the slot its handle names, or MP__NO_SLOT */
  mp_request *owner;    /* the request holding its handle, or NULL */
  mp_usock *onext, *oprev; /* the owner's sockets (r->outbound) */
  mp_request *waiter;   /* the request waiting on its operation */
  mp_usock *bnext, *bprev; /* sockets with an operation in progress */
  us_state state;
  us_op op;
  int result;           /* the last finished operation's outcome */
  bool eof;             /* the peer has shut down its side */
  int rerr;             /* a read error, or 0 */
  bool reading;
  bool counted;         /* counted in its pool's open connections */
  bool stream_open;     /* the stream's handle needs closing */
  bool timer_closing;   /* the record is on its way out */
  bool opened;          /* it was connected once */
  unsigned handles;     /* handles not yet closed (the stream, the timer) */
  mp_stream stream;
  bool udp;             /* a datagram socket (udp.c): udp, not stream */
  bool udp_open;        /* its handle needs closing */
  bool dgram;           /* a datagram waits in the read buffer */
  uv_udp_t dgram_handle;
  uv_connect_t creq;
  uv_write_t wreq;
  uv_timer_t timer;     /* the operation's deadline; the idle limit */
  mp_buf rbuf;          /* received: unread bytes are [rpos, rbuf.len) */
  size_t rpos;
  size_t scan;          /* where the search for a line or boundary goes on */
  int pattern;          /* the receive in progress */
  size_t want;
  mp_buf until;         /* its boundary */
  mp_buf wbuf;          /* bytes a send could not hand over at once */
  mp_kpool *pool;       /* the pool it belongs to, or NULL */
  mp_usock *pnext, *pprev; /* in the pool's idle list or backlog */
  uint32_t reused;
  mp_dns_query *query;
  int port;
  bool unix_path;
  char *host;           /* the host name, or the socket's path */
  char scrap[64];       /* where an idle connection's stray bytes go */

  /* TLS (secure.c), once sslhandshake began; NULL for plain TCP. */
  mp_tls *tls;
  bool tls_done;        /* the handshake is over */
  bool tls_verify;      /* the settings it was made with */
  char *tls_name;
  char *cbuf;           /* ciphertext read from the network */
  unsigned writes;      /* ciphertext writes in flight */
  char tls_error[160];  /* why the handshake failed */
};

struct mp_kpool {
  mp_kpool *next;
  mp_tls_session *session; /* the newest TLS session of the pool's server */
  unsigned size;      /* idle connections kept */
  bool sized;         /* size was given (by connect or setkeepalive) */
  int backlog;        /* -1: open connections not capped */
  unsigned open;      /* connections of the pool open (counted) */
  unsigned nidle, nwait;
  mp_usock *idle;     /* most recently used first */
  mp_usock *idle_tail;
  mp_usock *waiting;  /* oldest first */
  mp_usock *waiting_tail;
  char key[];
};

/* keepalive.c */
/* The pool called key, made now when there is none: size idle kept (0:
 * not said; the first setkeepalive may say), backlog as connect's. */
mp_kpool *mp__kpool_get(const char *key, unsigned size, int backlog);
/* Takes the most recently used idle connection, or NULL. */
mp_usock *mp__kpool_take(mp_kpool *p);
/* Puts s at the front of the idle list; closes the least recently used
 * beyond the pool's size. */
void mp__kpool_put(mp_kpool *p, mp_usock *s);
void mp__kpool_unlink_idle(mp_kpool *p, mp_usock *s);
void mp__kpool_enqueue(mp_kpool *p, mp_usock *s);
void mp__kpool_unlink_waiting(mp_kpool *p, mp_usock *s);
/* A connection of p closed or went idle: hands it on to the first connect
 * waiting, or lets that one open a new one. */
void mp__kpool_dispatch(mp_kpool *p);
/* Closes every idle socket and frees every pool. */
void mp__kpool_free_all(void);

/* socket.c, for keepalive.c */
void mp__usock_close(mp_usock *s, int reason);
/* Closes s and lets go of it: its handle goes stale, its record is freed
 * once its libuv handles have closed. */
void mp__usock_retire(mp_usock *s);
/* A waiting connect goes on: with idle (taking its place and handle), or
 * opening a connection of its own when idle is NULL. */
void mp__usock_unqueue(mp_usock *waiter, mp_usock *idle);

/* A connection reads as soon as bytes arrive, whether or not a receive
 * waits for them (no epoll change per receive); with this much unread and
 * no receive waiting, it stops until one comes. */
#define MP__READ_AHEAD (64 * 1024)

/* The ciphertext read buffer of a TLS connection: a record and more. */
#define MP__CBUF_SIZE (17 * 1024)

/* socket.c, for secure.c */
/* The socket a handle names, or NULL when it is stale. */
mp_usock *mp__usock_from_handle(double handle);
/* r waits on s's operation op (timeout_ms <= 0: no limit); MP_AGAIN. */
int mp__usock_begin_op(mp_usock *s, mp_request *r, us_op op, double timeout_ms);
/* s's operation is over with result; soon: from inside a Lua call. */
void mp__usock_end_op(mp_usock *s, int result, bool soon);
/* An operation ends in failure: the connection closes, and the request
 * waiting learns result. */
void mp__usock_fail_op(mp_usock *s, int result);
void mp__usock_on_alloc(mp_stream *st, size_t suggested, uv_buf_t *buf);
void mp__usock_on_read(mp_stream *st, ssize_t nread, const uv_buf_t *buf);
/* Makes room for n plaintext bytes in the read buffer, charged to the
 * request waiting. Returns 0 or MP_NOMEM. */
int mp__usock_room(mp_usock *s, size_t n);

/* udp.c */
/* Opens s's datagram socket towards addr (or its unix: path). Returns 0
 * or a negative code. */
int mp__udp_connect(mp_usock *s, const struct sockaddr *addr);
void mp__udp_close(mp_usock *s);
/* One of s's libuv handles has closed. */
void mp__usock_handle_closed(mp_usock *s);

/* socket.c, for udp.c */
/* A new record with a handle, held by r. NULL when out of memory. */
mp_usock *mp__usock_new(mp_request *r, double *handle);
/* The record's socket is open now (a connected datagram socket). */
void mp__usock_opened(mp_usock *s);
/* Starts resolving s's host and then connecting (or, for a datagram
 * socket, setting its peer); s's operation is a connect. */
void mp__usock_open(mp_usock *s);

/* secure.c */
/* The network bytes of a TLS connection arrived (nread as libuv's). */
void mp__tls_on_read(mp_usock *s, ssize_t nread);
/* Moves plaintext the session holds into the read buffer. Returns 0,
 * or an end (the peer's close_notify: s->eof; UV_EPROTO: s->rerr). */
void mp__tls_drain(mp_usock *s);
/* Sends len plaintext bytes: 0 when all went to the kernel, MP_AGAIN when
 * writes are in flight (r waits), or an error. */
int mp__tls_send(mp_usock *s, mp_request *r, const char *data, size_t len,
                 double timeout_ms);
/* Keeps the session of s's TLS connection for the next connection of its
 * pool. */
void mp__tls_keep_session(mp_usock *s);
void mp__tls_free(mp_usock *s);
/* The worker's TLS context, made on first use; frees it at shutdown. */
void mp__tls_close(void);

#endif
