/*
 * A client connection: reads bytes, feeds the protocol, hands whole
 * requests to the request code one at a time, and writes what they answer.
 */
#ifndef MP_CONN_H
#define MP_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "pool.h"
#include "server.h"

/* The size of a connection record (for the worker's pool). */
size_t mp_conn_size(void);

/* Closes the connections idle past --idle-timeout or lingering too long.
 * The worker calls it once a second. */
void mp_conn_sweep(mp_server *s);

/* Serves the connections that used up their turn with requests left;
 * its turn_idle calls it on the next turn of the loop. Runs Lua. */
void mp_conn_run_deferred(mp_server *s);

/* Accepts one pending connection on listener. */
void mp_conn_accept(mp_server *s, uv_stream_t *listener);

/* Shutdown, gently: idle connections close now, busy ones after the
 * response in flight. */
void mp_conn_drain_all(mp_server *s);

/* Closes every connection (shutdown). Suspended handlers are abandoned. */
void mp_conn_close_all(mp_server *s);

/* The buffer responses are appended to; written at the end of the event
 * (mp_conn_flush) in one write with whatever else is pending. */
mp_buf *mp_conn_out(mp_conn *c);

/* Bytes queued on c and not yet taken by the kernel. */
size_t mp_conn_unsent(const mp_conn *c);

/* The same, summed over every connection of w. */
size_t mp_conn_unsent_all(const mp_server *s);

/* Starts writing what is pending. Never runs Lua. */
void mp_conn_flush(mp_conn *c);

/* Parses and serves what c has pending, and writes its output. Runs Lua
 * for pipelined requests. */
void mp_conn_process(mp_conn *c);

/* The request on c has finished (its handler returned and its response is
 * complete) after being suspended: parse and serve what follows. Runs Lua
 * for pipelined requests. */
void mp_conn_request_done(mp_conn *c);

/* Queues "100 Continue". Returns 0 or MP_NOMEM. */
int mp_conn_continue(mp_conn *c);

/* The connection must close once what is queued has been written. */
void mp_conn_close_after_flush(mp_conn *c);

/* Like mp_conn_close_after_flush, but the connection ends with a TCP reset
 * (RST) instead of an orderly shutdown. */
void mp_conn_reset_after_flush(mp_conn *c);

/* A new descriptor of c's socket, the caller's to close, for sending a
 * file into it with sendfile off the loop (handlers/static.c): being its
 * own, it stays valid whatever c does meanwhile. Writing through it is
 * the caller's business only while c writes nothing (c's output empty).
 * Returns the descriptor, or UV_ENOTSUP on a transport without one, or
 * another negative code. */
int mp_conn_socket_dup(mp_conn *c);

/* The peer's address as text ("127.0.0.1", "::1"), looked up once per
 * connection and kept; "-" when unknown. */
const char *mp_conn_peer_name(mp_conn *c);

/* True when the peer is on this machine (127.0.0.0/8 or ::1). */
bool mp_conn_is_loopback(mp_conn *c);

/* True when the peer's address is inside a range of list (base/cidr.h). */
bool mp_conn_peer_in(mp_conn *c, const mp_cidr_list *list);

#endif
