/*
 * Client TLS over memory BIOs (see tls.h for the calls).
 *
 * Each session is an OpenSSL SSL with two memory BIOs and no descriptor.
 * The read BIO holds ciphertext the caller has received and fed in; the
 * SSL consumes it as mp_tls_handshake and mp_tls_read need it, and an
 * empty read BIO reports "retry", which surfaces as MP_AGAIN. The write
 * BIO collects everything the SSL wants to send (handshake flights,
 * records, alerts) and only grows, so OpenSSL never sees a write block;
 * the caller drains it with mp_tls_take and sends the bytes itself. The
 * socket engine (upstream/) owns the descriptor, the buffers, the timers
 * and the order of calls; this file owns none of them and never waits.
 *
 * Verification happens inside the handshake (SSL_VERIFY_PEER, with the
 * name set by SSL_set1_host or as an IP address), so a bad certificate
 * aborts it with an alert to the server. A resumed session skips that
 * step in OpenSSL, so a verified resumption checks the session's recorded
 * result and the name again before the handshake counts as done.
 *
 * Sessions for reuse come from the new-session callback (a TLS 1.3
 * server's tickets, a TLS 1.2 session at the end of its handshake) and are
 * kept, newest only, on the session. The context stores none itself: the
 * caller keeps one per pool key.
 *
 * Each OpenSSL call starts with an empty error queue, and a failure's
 * reason is read from the queue and the queue cleared, so no error is
 * left behind for the worker's other OpenSSL users. A failure is final:
 * the session answers every later call with the same code.
 *
 * Not here: sockets, timeouts, DNS, pools of connections, server-side
 * TLS, OCSP, ALPN, early data, renegotiation (refused).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <uv.h>

#include "errors.h"

/* A drained write BIO whose buffer grew past this is replaced, so that a
 * pooled connection does not keep the memory of its largest write. */
#define MP_TLS_WBIO_KEEP (64 * 1024)

/* DNS names have at most 253 bytes; SNI allows 255. */
#define MP_TLS_NAME_MAX 256

struct mp_tls_ctx {
  SSL_CTX *ssl_ctx;
};

enum mp_tls_state { MP_TLS_HANDSHAKE, MP_TLS_OPEN, MP_TLS_FAILED };

struct mp_tls {
  SSL *ssl;             /* owns both BIOs */
  BIO *rbio;            /* network bytes in */
  BIO *wbio;            /* network bytes out */
  SSL_SESSION *session; /* the newest resumable session, one reference */
  enum mp_tls_state state;
  bool verify;
  bool is_ip;            /* name is an IP literal */
  bool peer_closed;      /* close_notify received */
  bool shutdown_sent;    /* close_notify queued */
  int code;              /* the failure's code, in MP_TLS_FAILED */
  long verify_result;    /* X509_V_OK or the chain's failure */
  const char *error;     /* what failed, for the caller */
  const char *reason;    /* OpenSSL's reason, static, or NULL */
  char name[MP_TLS_NAME_MAX]; /* server_name, "" for none */
  char errbuf[160];      /* a composed error message */
};

/* mp_tls_session is an SSL_SESSION under another name. */
static SSL_SESSION *sess_of(mp_tls_session *s) { return (SSL_SESSION *)s; }

static void set_err(char *err, size_t errlen, const char *what) {
  unsigned long e = ERR_peek_last_error();
  const char *why = e != 0 ? ERR_reason_error_string(e) : NULL;
  if (err != NULL && errlen > 0) {
    if (why != NULL)
      snprintf(err, errlen, "%s: %s", what, why);
    else
      snprintf(err, errlen, "%s", what);
  }
  ERR_clear_error();
}

/* A TLS 1.2 session at the end of its handshake, or each ticket a TLS 1.3
 * server sends: keep the newest, whose reference OpenSSL hands over when
 * this returns 1. */
static int on_new_session(SSL *ssl, SSL_SESSION *sess) {
  mp_tls *t = SSL_get_app_data(ssl);
  if (t == NULL) return 0;
  SSL_SESSION_free(t->session);
  t->session = sess;
  return 1;
}

mp_tls_ctx *mp_tls_ctx_new(const char *ca_file, char *err, size_t errlen) {
  mp_tls_ctx *ctx = NULL;
  SSL_CTX *ssl_ctx = NULL;
  ERR_clear_error();
  ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) {
    set_err(err, errlen, "out of memory");
    goto err;
  }
  ssl_ctx = SSL_CTX_new(TLS_client_method());
  if (ssl_ctx == NULL) {
    set_err(err, errlen, "cannot create a TLS context");
    goto err;
  }
  if (SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION) != 1) {
    set_err(err, errlen, "cannot require TLS 1.2");
    goto err;
  }
  if (ca_file != NULL) {
    if (SSL_CTX_load_verify_locations(ssl_ctx, ca_file, NULL) != 1) {
      char what[PATH_MAX + 32];
      snprintf(what, sizeof what, "cannot load CA file %s", ca_file);
      set_err(err, errlen, what);
      goto err;
    }
  } else if (SSL_CTX_set_default_verify_paths(ssl_ctx) != 1) {
    set_err(err, errlen, "cannot load the system's CA store");
    goto err;
  }
  /* Sessions go to the callback and to no cache inside the context. */
  SSL_CTX_set_session_cache_mode(
      ssl_ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ssl_ctx, on_new_session);
  /* An idle pooled connection holds no record buffers; a renegotiation
   * request is refused, so reading never has to answer with a handshake. */
  SSL_CTX_set_mode(ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_options(ssl_ctx, SSL_OP_NO_RENEGOTIATION);
  ctx->ssl_ctx = ssl_ctx;
  return ctx;
err:
  SSL_CTX_free(ssl_ctx);
  free(ctx);
  return NULL;
}

void mp_tls_ctx_free(mp_tls_ctx *ctx) {
  if (ctx == NULL) return;
  SSL_CTX_free(ctx->ssl_ctx);
  free(ctx);
}

/* Keeps a PEM reader from prompting on the terminal for a passphrase. */
static int no_passphrase(char *buf, int size, int rwflag, void *u) {
  (void)buf, (void)size, (void)rwflag, (void)u;
  return -1;
}

/* Installs the client certificate, its chain and its key on ssl. Returns
 * 0, or -1 with the reason in err. */
static int use_client_cert(SSL *ssl, const mp_tls_opts *o, char *err,
                           size_t errlen) {
  BIO *bio = NULL;
  X509 *x = NULL;
  EVP_PKEY *key = NULL;
  if (o->cert_pem == NULL || o->key_pem == NULL) {
    snprintf(err, errlen, "a client certificate needs its key, and a key "
                          "its certificate");
    goto err;
  }
  if (o->cert_pem_len > INT_MAX || o->key_pem_len > INT_MAX) {
    snprintf(err, errlen, "client certificate or key too large");
    goto err;
  }
  bio = BIO_new_mem_buf(o->cert_pem, (int)o->cert_pem_len);
  if (bio == NULL) {
    set_err(err, errlen, "out of memory");
    goto err;
  }
  x = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);
  if (x == NULL || SSL_use_certificate(ssl, x) != 1) {
    set_err(err, errlen, "bad client certificate");
    goto err;
  }
  X509_free(x);
  /* The rest of the text: intermediates, sent after the certificate. */
  while ((x = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL)) != NULL) {
    if (SSL_add0_chain_cert(ssl, x) != 1) {
      set_err(err, errlen, "bad client certificate chain");
      goto err;
    }
    x = NULL; /* the SSL's now */
  }
  ERR_clear_error(); /* the end of the text reads as an error */
  BIO_free(bio);
  bio = BIO_new_mem_buf(o->key_pem, (int)o->key_pem_len);
  if (bio == NULL) {
    set_err(err, errlen, "out of memory");
    goto err;
  }
  key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
  if (key == NULL) {
    set_err(err, errlen, "bad client key");
    goto err;
  }
  if (SSL_use_PrivateKey(ssl, key) != 1 || SSL_check_private_key(ssl) != 1) {
    set_err(err, errlen, "client certificate and key do not match");
    goto err;
  }
  EVP_PKEY_free(key);
  BIO_free(bio);
  return 0;
err:
  EVP_PKEY_free(key);
  X509_free(x);
  BIO_free(bio);
  return -1;
}

/* Whether sess may be offered when connecting to sni (NULL for none): it
 * recorded the same name. A session that recorded none (the server did
 * not acknowledge SNI) is offered: the pool key is the caller's guard. */
static bool session_fits(SSL_SESSION *sess, const char *sni) {
  const char *sess_name = SSL_SESSION_get0_hostname(sess);
  if (sess_name == NULL) return true;
  return sni != NULL && strcasecmp(sess_name, sni) == 0;
}

mp_tls *mp_tls_client_new(mp_tls_ctx *ctx, const mp_tls_opts *opts,
                          char *err, size_t errlen) {
  mp_tls *t = NULL;
  char dummy[1];
  if (err == NULL || errlen == 0) {
    err = dummy;
    errlen = sizeof dummy;
  }
  err[0] = '\0';
  ERR_clear_error();
  if (ctx == NULL || opts == NULL) {
    snprintf(err, errlen, "no context or options");
    goto err;
  }
  t = calloc(1, sizeof *t);
  if (t == NULL) {
    snprintf(err, errlen, "out of memory");
    goto err;
  }
  t->state = MP_TLS_HANDSHAKE;
  t->verify = opts->verify;
  t->ssl = SSL_new(ctx->ssl_ctx);
  if (t->ssl == NULL) {
    set_err(err, errlen, "cannot create a TLS session");
    goto err;
  }
  t->rbio = BIO_new(BIO_s_mem());
  t->wbio = BIO_new(BIO_s_mem());
  if (t->rbio == NULL || t->wbio == NULL) {
    BIO_free(t->rbio);
    BIO_free(t->wbio);
    set_err(err, errlen, "out of memory");
    goto err;
  }
  /* An empty read BIO means "not yet", never end of file. */
  BIO_set_mem_eof_return(t->rbio, -1);
  SSL_set_bio(t->ssl, t->rbio, t->wbio);
  SSL_set_connect_state(t->ssl);
  SSL_set_app_data(t->ssl, t);

  const char *sni = NULL;
  if (opts->server_name != NULL && opts->server_name[0] != '\0') {
    size_t len = strlen(opts->server_name);
    if (len >= sizeof t->name) {
      snprintf(err, errlen, "server name too long");
      goto err;
    }
    memcpy(t->name, opts->server_name, len + 1);
    unsigned char addr[sizeof(struct in6_addr)];
    t->is_ip = inet_pton(AF_INET, t->name, addr) == 1 ||
               inet_pton(AF_INET6, t->name, addr) == 1;
    /* RFC 6066: SNI carries host names, never addresses. */
    if (!t->is_ip) {
      sni = t->name;
      if (SSL_set_tlsext_host_name(t->ssl, sni) != 1) {
        set_err(err, errlen, "bad server name");
        goto err;
      }
    }
    if (t->verify) {
      int ok = t->is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl),
                                                        t->name)
                        : SSL_set1_host(t->ssl, t->name);
      if (ok != 1) {
        set_err(err, errlen, "bad server name");
        goto err;
      }
      SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
  }
  SSL_set_verify(t->ssl, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);

  if (opts->cert_pem != NULL || opts->key_pem != NULL) {
    if (use_client_cert(t->ssl, opts, err, errlen) != 0) goto err;
  }
  if (opts->session != NULL && session_fits(sess_of(opts->session), sni)) {
    if (SSL_set_session(t->ssl, sess_of(opts->session)) != 1) {
      set_err(err, errlen, "cannot offer the session");
      goto err;
    }
  }
  return t;
err:
  if (t != NULL) {
    SSL_free(t->ssl);
    free(t);
  }
  ERR_clear_error();
  return NULL;
}

void mp_tls_free(mp_tls *t) {
  if (t == NULL) return;
  /* OpenSSL marks the session of a connection freed without close_notify
   * as not resumable, as TLS 1.0 required; TLS 1.1 and later do not, and a
   * pool drops connections without ceremony, so mark it closed first. A
   * failed session was already dropped by OpenSSL's fatal alert. */
  if (t->state == MP_TLS_OPEN)
    SSL_set_shutdown(t->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_free(t->ssl);
  SSL_SESSION_free(t->session);
  free(t);
}

int mp_tls_feed(mp_tls *t, const char *data, size_t len) {
  size_t written;
  if (len == 0) return 0;
  if (BIO_write_ex(t->rbio, data, len, &written) != 1 || written != len) {
    ERR_clear_error();
    return MP_NOMEM;
  }
  return 0;
}

/* Records a final failure: code, the caller's message and OpenSSL's
 * reason, and empties the error queue. */
static int fail(mp_tls *t, int code, const char *error) {
  unsigned long e = ERR_peek_last_error();
  t->state = MP_TLS_FAILED;
  t->code = code;
  t->error = error;
  t->reason = e != 0 ? ERR_reason_error_string(e) : NULL;
  ERR_clear_error();
  return code;
}

/* A verification failure, in OpenResty's words: a name that does not
 * match is "certificate host mismatch", anything else names the chain's
 * problem. */
static int fail_verify(mp_tls *t, long v) {
  t->verify_result = v;
  if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
    return fail(t, UV_EPROTO, "certificate host mismatch");
  snprintf(t->errbuf, sizeof t->errbuf, "certificate verify failed: %s",
           X509_verify_cert_error_string(v));
  return fail(t, UV_EPROTO, t->errbuf);
}

/* A resumed session was not verified by this handshake: check what was
 * recorded when it was made, and the name against its certificate. */
static int check_resumed(mp_tls *t) {
  long v = SSL_get_verify_result(t->ssl);
  if (v != X509_V_OK) return fail_verify(t, v);
  if (t->name[0] == '\0') return 0;
  X509 *cert = SSL_get0_peer_certificate(t->ssl);
  if (cert == NULL) return fail_verify(t, X509_V_ERR_UNSPECIFIED);
  int ok = t->is_ip ? X509_check_ip_asc(cert, t->name, 0)
                    : X509_check_host(cert, t->name, 0,
                                      X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS,
                                      NULL);
  if (ok != 1)
    return fail_verify(t, t->is_ip ? X509_V_ERR_IP_ADDRESS_MISMATCH
                                   : X509_V_ERR_HOSTNAME_MISMATCH);
  return 0;
}

int mp_tls_handshake(mp_tls *t) {
  if (t->state == MP_TLS_FAILED) return t->code;
  if (t->state == MP_TLS_OPEN) return 0;
  ERR_clear_error();
  int r = SSL_do_handshake(t->ssl);
  if (r == 1) {
    if (t->verify && SSL_session_reused(t->ssl)) {
      int rc = check_resumed(t);
      if (rc != 0) return rc;
    }
    t->state = MP_TLS_OPEN;
    return 0;
  }
  int e = SSL_get_error(t->ssl, r);
  if (e == SSL_ERROR_WANT_READ) return MP_AGAIN;
  long v = SSL_get_verify_result(t->ssl);
  if (t->verify && v != X509_V_OK) return fail_verify(t, v);
  return fail(t, UV_EPROTO, "handshake failed");
}

ssize_t mp_tls_read(mp_tls *t, char *buf, size_t cap) {
  size_t n;
  if (t->state == MP_TLS_FAILED) return t->code;
  if (t->state != MP_TLS_OPEN) return MP_STATE;
  if (t->peer_closed) return 0;
  if (cap == 0) return MP_INVALID;
  if (cap > SSIZE_MAX) cap = SSIZE_MAX;
  ERR_clear_error();
  int r = SSL_read_ex(t->ssl, buf, cap, &n);
  if (r == 1) return (ssize_t)n;
  int e = SSL_get_error(t->ssl, r);
  if (e == SSL_ERROR_WANT_READ) return MP_AGAIN;
  if (e == SSL_ERROR_ZERO_RETURN) {
    t->peer_closed = true;
    return 0;
  }
  return fail(t, UV_EPROTO, "read failed");
}

ssize_t mp_tls_write(mp_tls *t, const char *data, size_t len) {
  size_t n;
  if (t->state == MP_TLS_FAILED) return t->code;
  if (t->state != MP_TLS_OPEN || t->shutdown_sent) return MP_STATE;
  if (len == 0) return 0;
  if (len > SSIZE_MAX) return MP_INVALID;
  ERR_clear_error();
  /* The write BIO takes every record, so OpenSSL writes all of data or
   * fails; it cannot ask to wait. */
  if (SSL_write_ex(t->ssl, data, len, &n) == 1 && n == len) return (ssize_t)n;
  return fail(t, UV_EPROTO, "write failed");
}

size_t mp_tls_pending(const mp_tls *t) { return BIO_ctrl_pending(t->wbio); }

size_t mp_tls_take(mp_tls *t, char *buf, size_t cap) {
  size_t n = 0;
  if (cap == 0 || BIO_read_ex(t->wbio, buf, cap, &n) != 1) n = 0;
  ERR_clear_error(); /* an empty BIO's read is no error worth keeping */
  if (BIO_ctrl_pending(t->wbio) == 0) {
    BUF_MEM *mem = NULL;
    BIO_get_mem_ptr(t->wbio, &mem);
    if (mem != NULL && mem->max > MP_TLS_WBIO_KEEP) {
      BIO *fresh = BIO_new(BIO_s_mem());
      if (fresh != NULL) { /* else keep the big one */
        SSL_set0_wbio(t->ssl, fresh); /* frees the old one */
        t->wbio = fresh;
      }
    }
  }
  return n;
}

int mp_tls_shutdown(mp_tls *t) {
  if (t->state != MP_TLS_OPEN) return MP_STATE;
  if (t->shutdown_sent) return 0;
  ERR_clear_error();
  /* 0: ours is queued and the peer's not seen; 1: both. Not waiting for
   * the peer's is the caller's choice (OpenResty does not wait either). */
  int r = SSL_shutdown(t->ssl);
  if (r < 0) return fail(t, UV_EPROTO, "shutdown failed");
  t->shutdown_sent = true;
  return 0;
}

const char *mp_tls_error(const mp_tls *t) {
  return t->state == MP_TLS_FAILED ? t->error : NULL;
}

const char *mp_tls_reason(const mp_tls *t) {
  return t->state == MP_TLS_FAILED ? t->reason : NULL;
}

long mp_tls_verify_result(const mp_tls *t) { return t->verify_result; }

mp_tls_session *mp_tls_get_session(mp_tls *t) {
  /* A failed connection offers nothing, whatever it was sent before. */
  if (t->state != MP_TLS_OPEN) return NULL;
  if (t->session != NULL) {
    SSL_SESSION_up_ref(t->session);
    return (mp_tls_session *)t->session;
  }
  /* A TLS 1.2 session resumed: the callback saw no new one, and the one in
   * use stays good. In TLS 1.3 only a ticket makes one resumable, and
   * those come through the callback. */
  if (SSL_version(t->ssl) >= TLS1_3_VERSION) return NULL;
  SSL_SESSION *s = SSL_get1_session(t->ssl);
  if (s != NULL && !SSL_SESSION_is_resumable(s)) {
    SSL_SESSION_free(s);
    s = NULL;
  }
  return (mp_tls_session *)s;
}

void mp_tls_session_free(mp_tls_session *s) { SSL_SESSION_free(sess_of(s)); }

bool mp_tls_session_reused(const mp_tls *t) {
  return t->state == MP_TLS_OPEN && SSL_session_reused(t->ssl) == 1;
}
