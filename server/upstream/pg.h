/*
 * PostgreSQL for handlers: the C half of moonport.pg, on libpq 15's
 * asynchronous API in pipeline mode, driven by the worker's loop (a
 * uv_poll on the connection's socket). It knows no Lua.
 *
 * A client is a connection string and a number of connections, per
 * worker, shared by every request of the worker: one connection carries
 * the queries of many requests at once, each sent as soon as it comes and
 * ended by its own Sync, so one failing query aborts no other. Statements
 * are prepared once per connection, named by the SQL text. Results come
 * back in order and wait, as PGresults, for the request that asked.
 *
 * A query is an operation named by a handle (slot and generation, as
 * sockets are). A request sends one or several, then waits once for all
 * of them (mp_pg_wait); a request that ends or stops waiting leaves its
 * operations behind, and their results are dropped when they come.
 *
 * A transaction pins a connection of its own, never shared: BEGIN, its
 * queries and COMMIT/ROLLBACK go there, one at a time.
 */
#ifndef MP_PG_H
#define MP_PG_H

#include <stddef.h>
#include <stdint.h>

typedef struct mp_request mp_request;
typedef struct mp_server mp_server;
typedef struct pg_result PGresult;

/* Sets up PostgreSQL clients for s's worker. Returns 0 or MP_NOMEM. */
int mp_pg_init(mp_server *s);

/* Closes every connection; operations still waiting fail. */
void mp_pg_close(void);

/* PostgreSQL connections up now, and connections lost or refused since
 * the worker began (for the metrics). */
void mp_pg_counts(unsigned *ready, uint64_t *failures);

/* The client for conninfo with pool_size pipelined connections (made now,
 * connecting on first use; the same one when asked again, across
 * reloads). Returns its id (>= 0) or MP_NOMEM. Does no I/O. */
int mp_pg_client(const char *conninfo, unsigned pool_size);

/* A connection of client pinned to the calling request for a transaction,
 * or the transaction's pin (>= 0) when pin >= 0 is given. Returns the pin
 * id or a negative code. mp_pg_unpin gives it back. */
int mp_pg_pin(int client);
void mp_pg_unpin(int pin);

/* Sends sql with nparams text parameters (values[i] NULL for SQL NULL)
 * for r, on a connection of client (or on pin when pin >= 0). Returns 0
 * with *op set, or a negative code (MP_STATE when too many are queued).
 * timeout_ms <= 0: the client's default (--pg-timeout). */
int mp_pg_send(mp_request *r, int client, int pin, const char *sql,
               int nparams, const char *const *values, const int *lengths,
               double timeout_ms, double *op);

/* 0 when every operation r sent has ended; MP_AGAIN when r must wait
 * (yield), until they have. */
int mp_pg_wait(mp_request *r);

/* An ended operation's outcome: 0 with its result in *res (owned by the
 * operation until mp_pg_free), or an error: MP_TIMEOUT, MP_CLOSED (the
 * connection failed: the message in *msg), UV_EPROTO (the server's error:
 * the result in *res holds its fields). MP_AGAIN while it runs,
 * MP_BAD_CONTEXT for a stale handle. */
int mp_pg_outcome(double op, PGresult **res, const char **msg);

/* Lets go of an operation and its result. */
void mp_pg_free(double op);

/* LISTEN/NOTIFY (pg_listen.c). Listens to channel on client: *id names
 * the listener; no I/O until its first read. Listening again to the same
 * client and channel replaces the listener (its old id goes stale).
 * Returns 0 or MP_NOMEM. */
int mp_pg_listen(int client, const char *channel, double *id);
/* The next notification's payload for listener id (valid until the next
 * call): 0; MP_AGAIN when r must wait (yield) for one; MP_DECLINED when
 * the listener was replaced. The first call sends the LISTEN. */
int mp_pg_notification(mp_request *r, double id, const char **payload,
                       size_t *len);
/* Frees every listener; the worker is stopping. */
void mp_pg_listen_close(void);

#endif
