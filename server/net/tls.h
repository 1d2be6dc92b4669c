/*
 * A client TLS session that knows no sockets (OpenSSL 3 over memory BIOs).
 *
 * The caller owns the transport: it reads ciphertext from the network and
 * hands it in with mp_tls_feed, and sends what mp_tls_pending says is
 * waiting, taken out with mp_tls_take. In between, mp_tls_handshake,
 * mp_tls_read, mp_tls_write and mp_tls_shutdown turn those bytes into
 * plaintext and back. Nothing here blocks, waits, arms a timer or touches
 * a descriptor; a call that needs bytes from the peer returns MP_AGAIN.
 *
 * The one rule for the caller: after every call, send what mp_tls_pending
 * reports (a handshake flight, records of written data, an alert, a
 * close_notify, an answer to a key update found while reading) before
 * waiting for the network; and try mp_tls_read before waiting to read,
 * since plaintext may already be decoded or buffered.
 *
 * Memory: every byte here is OpenSSL's own (its malloc, and calloc for the
 * small session record). None of it is charged to a request or counted in
 * mp_malloc_count: a session lives as long as its connection, which may
 * outlast the request that opened it in a pool. What the caller feeds in
 * is held until read, so it should feed only after mp_tls_read said
 * MP_AGAIN.
 *
 * Failures return UV_EPROTO (a protocol failure, with mp_tls_error saying
 * which), MP_NOMEM, MP_INVALID or MP_STATE (server/base/errors.h).
 */
#ifndef MP_TLS_H
#define MP_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A worker's TLS settings and trust store: one per worker, shared by all
 * its sessions (an SSL_CTX). */
typedef struct mp_tls_ctx mp_tls_ctx;
/* One client connection's TLS state. */
typedef struct mp_tls mp_tls;
/* A resumable session from an earlier connection (an SSL_SESSION), held
 * by reference: each holder frees its own reference. */
typedef struct mp_tls_session mp_tls_session;

typedef struct mp_tls_opts {
  /* The server's name (NUL-terminated) or NULL. A DNS name is sent as SNI
   * and, with verify, must match the certificate; an IPv4 or IPv6 literal
   * (no brackets) sends no SNI and, with verify, must match an IP address
   * of the certificate. NULL: no SNI and no name check. At most 255
   * bytes. */
  const char *server_name;
  /* Verify the server's chain against the context's trust store, and its
   * name against server_name. false: any certificate is accepted. */
  bool verify;
  /* A session to resume, from mp_tls_get_session on a connection to the
   * same server name with the same settings (the pool key), or NULL.
   * Borrowed: the caller keeps its reference. A session whose recorded
   * server name differs from server_name is not offered. */
  mp_tls_session *session;
  /* A client certificate for servers that ask for one: PEM text, the
   * certificate first and any intermediates after it, and its private key
   * as PEM text (unencrypted). Both or neither; the caller reads files. */
  const char *cert_pem;
  size_t cert_pem_len;
  const char *key_pem;
  size_t key_pem_len;
} mp_tls_opts;

/* A context for client sessions: TLS 1.2 at least, certificates checked
 * against the PEM bundle ca_file, or against the system's store
 * (OpenSSL's default paths) when ca_file is NULL. Returns NULL on failure,
 * with the reason in err (errlen bytes, NUL-terminated). Runs no Lua. */
mp_tls_ctx *mp_tls_ctx_new(const char *ca_file, char *err, size_t errlen);
/* Frees ctx. Sessions made from it must have been freed first; resumable
 * sessions (mp_tls_session) may outlive it. NULL is ignored. */
void mp_tls_ctx_free(mp_tls_ctx *ctx);

/* A client session on ctx, ready for mp_tls_handshake; opts is read, not
 * kept. Returns NULL with the reason in err when opts are invalid (a bad
 * client certificate or key, a key that does not match its certificate,
 * a server name too long) or memory ran out. */
mp_tls *mp_tls_client_new(mp_tls_ctx *ctx, const mp_tls_opts *opts,
                          char *err, size_t errlen);
/* Frees tls at once, sending nothing: queue a close_notify with
 * mp_tls_shutdown and send it first for a clean close. Either way a
 * session taken from an open tls stays resumable. NULL is ignored. */
void mp_tls_free(mp_tls *tls);

/* Hands in len bytes received from the network; they are copied. Returns
 * 0 or MP_NOMEM. */
int mp_tls_feed(mp_tls *tls, const char *data, size_t len);

/* Advances the handshake with what has been fed. Returns 0 once it is
 * done (and again on later calls), MP_AGAIN when it needs more bytes from
 * the peer (send what is pending first: the first call queues the
 * ClientHello), or a negative code on failure, then and on every later
 * call, with mp_tls_error saying why. A verified, resumed session is
 * checked again here (chain result and name), as a full handshake is. */
int mp_tls_handshake(mp_tls *tls);

/* Decrypts up to cap (> 0) bytes of plaintext into buf. Returns the
 * number of bytes, MP_AGAIN when no whole record is buffered (feed more),
 * 0 once the peer has sent close_notify (and on every later call),
 * MP_STATE before the handshake is done, or a negative code on failure
 * (mp_tls_error). A record larger than cap is returned over several
 * calls with no new input in between. Reading may queue bytes to send
 * (a key update's answer). */
ssize_t mp_tls_read(mp_tls *tls, char *buf, size_t cap);

/* Encrypts len bytes of plaintext; the records become pending. Returns
 * len (all of it is taken, in records of at most 16 KiB), MP_STATE before
 * the handshake is done or after mp_tls_shutdown, or a negative code on
 * failure. */
ssize_t mp_tls_write(mp_tls *tls, const char *data, size_t len);

/* Bytes waiting to be sent to the peer. */
size_t mp_tls_pending(const mp_tls *tls);
/* Moves up to cap pending bytes into buf, oldest first, and returns how
 * many. A copy, so that buf stays valid for an asynchronous write while
 * the session queues more behind it. */
size_t mp_tls_take(mp_tls *tls, char *buf, size_t cap);

/* Queues a close_notify (send it, then close the transport); the peer's
 * answer is not awaited. Returns 0, MP_STATE when the handshake is not
 * done or has failed (nothing is queued; close the transport as is), or
 * UV_EPROTO should OpenSSL refuse. Calling it twice queues one alert. */
int mp_tls_shutdown(mp_tls *tls);

/* Why the session failed: "certificate verify failed: <OpenSSL's verify
 * message>" (e.g. "certificate verify failed: self-signed certificate"),
 * OpenResty's "certificate host mismatch" and "handshake failed", or
 * "read failed", "write failed", "shutdown failed". NULL while nothing
 * has failed. A static string or one inside tls, valid while tls is. */
const char *mp_tls_error(const mp_tls *tls);
/* OpenSSL's own reason for the last failure, for the log (e.g. "tlsv1
 * alert unknown ca", "wrong version number"), or NULL when it gave none. */
const char *mp_tls_reason(const mp_tls *tls);
/* The certificate verification result (X509_V_OK, 0, when it passed or
 * was not checked; e.g. 18 for a self-signed certificate). OpenResty's
 * sslhandshake reports "<code>: <message>"; this gives the code. */
long mp_tls_verify_result(const mp_tls *tls);

/* A new reference to the newest resumable session of tls, or NULL when it
 * has none yet or the session failed. With TLS 1.3 the server sends its
 * tickets after the handshake and mp_tls_read takes them in, so ask after
 * the first read (before pooling or closing) rather than right after the
 * handshake. A TLS 1.3 session resumes once (OpenSSL's client uses each
 * ticket once; a TLS 1.2 session resumes again and again): keep the
 * newest connection's session per pool key, replacing the one offered. */
mp_tls_session *mp_tls_get_session(mp_tls *tls);
/* Drops one reference. NULL is ignored. */
void mp_tls_session_free(mp_tls_session *session);
/* Whether the handshake resumed the session offered in the options. */
bool mp_tls_session_reused(const mp_tls *tls);

#endif
