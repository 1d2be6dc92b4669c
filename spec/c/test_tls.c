/*
 * The client TLS engine of server/net/tls.c against an OpenSSL server in
 * the same process: both sides on memory BIOs, the test carrying the bytes
 * between them, no sockets. A throwaway CA, server and client
 * certificates are made here with OpenSSL's API, the CA written to a
 * temporary file for the context to load. Checked: verified handshakes by
 * name and by address, SNI, data both ways past the 16 KiB record size and
 * one byte at a time, the failures' messages (self-signed, unknown issuer,
 * wrong host), verify off, session reuse (TLS 1.3 and 1.2) and its checks,
 * client certificates, and a clean close both ways. Everything is freed
 * (the test runs under AddressSanitizer).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <uv.h>

#include "check.h"
#include "errors.h"
#include "tls.h"

/* ---- certificates ------------------------------------------------------ */

typedef struct cred {
  X509 *cert;
  EVP_PKEY *key;
} cred;

static long next_serial = 1;

static void add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value) {
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, v3, nid, value);
  if (ext == NULL || X509_add_ext(x, ext, -1) != 1) {
    fprintf(stderr, "extension %d = %s refused\n", nid, value);
    abort();
  }
  X509_EXTENSION_free(ext);
}

/* A certificate for cn with a fresh P-256 key, signed by issuer (NULL:
 * by itself), a CA when ca, with subjectAltName san when not NULL. */
static cred make_cred(const char *cn, const cred *issuer, bool ca,
                      const char *san) {
  cred c;
  c.key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
  c.cert = X509_new();
  if (c.key == NULL || c.cert == NULL) abort();
  X509_set_version(c.cert, X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(c.cert), next_serial++);
  X509_gmtime_adj(X509_getm_notBefore(c.cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c.cert), 24 * 3600);
  X509_set_pubkey(c.cert, c.key);
  X509_NAME *name = X509_get_subject_name(c.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             (const unsigned char *)cn, -1, -1, 0);
  X509_set_issuer_name(c.cert, issuer != NULL
                                   ? X509_get_subject_name(issuer->cert)
                                   : name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer != NULL ? issuer->cert : c.cert, c.cert, NULL,
                 NULL, 0);
  add_ext(c.cert, &v3, NID_basic_constraints,
          ca ? "critical,CA:TRUE" : "CA:FALSE");
  add_ext(c.cert, &v3, NID_subject_key_identifier, "hash");
  if (ca) add_ext(c.cert, &v3, NID_key_usage, "critical,keyCertSign,cRLSign");
  if (issuer != NULL)
    add_ext(c.cert, &v3, NID_authority_key_identifier, "keyid:always");
  if (san != NULL) add_ext(c.cert, &v3, NID_subject_alt_name, san);
  if (X509_sign(c.cert, issuer != NULL ? issuer->key : c.key, EVP_sha256()) ==
      0)
    abort();
  return c;
}

static void free_cred(cred *c) {
  X509_free(c->cert);
  EVP_PKEY_free(c->key);
}

/* PEM text of a certificate (and a second one after it) or of a key,
 * malloc'ed, NUL-terminated. */
static char *pem_of(X509 *cert, X509 *more, EVP_PKEY *key, size_t *len) {
  BIO *b = BIO_new(BIO_s_mem());
  if (cert != NULL) PEM_write_bio_X509(b, cert);
  if (more != NULL) PEM_write_bio_X509(b, more);
  if (key != NULL) PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL);
  char *data;
  long n = BIO_get_mem_data(b, &data);
  char *copy = malloc((size_t)n + 1);
  memcpy(copy, data, (size_t)n);
  copy[n] = '\0';
  *len = (size_t)n;
  BIO_free(b);
  return copy;
}

/* ---- the in-memory server ---------------------------------------------- */

static char seen_sni[256];
static bool sni_present;

/* Records the name the client sent and acknowledges it, so the client's
 * session records it too. */
static int on_servername(SSL *s, int *alert, void *arg) {
  (void)alert, (void)arg;
  const char *name = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name);
  sni_present = name != NULL;
  snprintf(seen_sni, sizeof seen_sni, "%s", name != NULL ? name : "");
  return SSL_TLSEXT_ERR_OK;
}

/* A server context presenting c; with client_ca, it asks for a client
 * certificate and trusts client_ca for it (required when require_client).
 * max_version 0: TLS 1.3. */
static SSL_CTX *server_ctx(const cred *c, const cred *client_ca,
                           bool require_client, int max_version) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == NULL || SSL_CTX_use_certificate(ctx, c->cert) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, c->key) != 1)
    abort();
  if (max_version != 0) SSL_CTX_set_max_proto_version(ctx, max_version);
  SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
  if (client_ca != NULL) {
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), client_ca->cert);
    SSL_CTX_set_verify(ctx,
                       SSL_VERIFY_PEER | (require_client
                                              ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                              : 0),
                       NULL);
  }
  return ctx;
}

static SSL *server_new(SSL_CTX *ctx) {
  SSL *s = SSL_new(ctx);
  BIO *r = BIO_new(BIO_s_mem()), *w = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(r, -1);
  SSL_set_bio(s, r, w);
  SSL_set_accept_state(s);
  return s;
}

/* Moves the client's pending bytes into the server. Returns how many. */
static size_t to_server(mp_tls *c, SSL *s) {
  char buf[4096];
  size_t total = 0, n;
  while ((n = mp_tls_take(c, buf, sizeof buf)) > 0) {
    BIO_write(SSL_get_rbio(s), buf, (int)n);
    total += n;
  }
  CHECK_EQ_INT(mp_tls_pending(c), 0);
  return total;
}

/* Moves the server's output into the client, all at once or one byte per
 * feed; with handshake, the client's handshake is advanced after each
 * feed while it is not done. Returns how many bytes moved. */
static size_t to_client(SSL *s, mp_tls *c, bool bytewise, bool handshake) {
  BIO *w = SSL_get_wbio(s);
  size_t total = 0;
  char buf[4096];
  int n;
  while ((n = BIO_read(w, buf, bytewise ? 1 : (int)sizeof buf)) > 0) {
    CHECK_EQ_INT(mp_tls_feed(c, buf, (size_t)n), 0);
    total += (size_t)n;
    if (handshake) mp_tls_handshake(c);
  }
  return total;
}

/* Runs both handshakes until neither side moves. Returns the client's
 * result; *server_rc gets the server's (1 done, else <= 0). */
static int handshake(mp_tls *c, SSL *s, bool bytewise, int *server_rc) {
  int crc = MP_AGAIN, src = 0;
  for (int round = 0; round < 20; round++) {
    crc = mp_tls_handshake(c);
    size_t moved = to_server(c, s);
    if (SSL_is_init_finished(s) == 0) src = SSL_do_handshake(s);
    moved += to_client(s, c, bytewise, true);
    crc = mp_tls_handshake(c);
    moved += to_server(c, s);
    if (SSL_is_init_finished(s) == 0) src = SSL_do_handshake(s);
    if (moved == 0) break;
  }
  if (SSL_is_init_finished(s)) src = 1;
  if (server_rc != NULL) *server_rc = src;
  ERR_clear_error(); /* the server's failures, when a test wants one */
  return crc;
}

/* Everything the client has to read (after feeding what the server sent),
 * appended to out; returns the client's last answer (MP_AGAIN or 0 at
 * close_notify, or a failure). */
static ssize_t client_read_all(mp_tls *c, char *out, size_t cap, size_t *got,
                               size_t chunk) {
  ssize_t n;
  while (*got < cap &&
         (n = mp_tls_read(c, out + *got,
                          chunk < cap - *got ? chunk : cap - *got)) > 0)
    *got += (size_t)n;
  return *got < cap ? mp_tls_read(c, out + *got, 1) : MP_AGAIN;
}

/* ---- the fixture ------------------------------------------------------- */

static cred ca, server, self_signed, client;
static char ca_path[] = "/tmp/moonport-test-tls-XXXXXX";

static void setup(void) {
  ca = make_cred("moonport test CA", NULL, true, NULL);
  server = make_cred("localhost", &ca, false,
                     "DNS:localhost,DNS:example.test,IP:127.0.0.1");
  self_signed = make_cred("localhost", NULL, false, "DNS:localhost");
  client = make_cred("moonport client", &ca, false, NULL);
  int fd = mkstemp(ca_path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f == NULL || PEM_write_X509(f, ca.cert) != 1) abort();
  fclose(f);
}

static void teardown(void) {
  unlink(ca_path);
  free_cred(&ca);
  free_cred(&server);
  free_cred(&self_signed);
  free_cred(&client);
}

/* A client for name on ctx, failing the test when it cannot be made. */
static mp_tls *client_new(mp_tls_ctx *ctx, const char *name, bool verify,
                          mp_tls_session *session) {
  char err[256];
  mp_tls_opts o = {.server_name = name, .verify = verify, .session = session};
  mp_tls *c = mp_tls_client_new(ctx, &o, err, sizeof err);
  if (c == NULL) fprintf(stderr, "mp_tls_client_new: %s\n", err);
  CHECK(c != NULL);
  return c;
}

static bool same_error(const mp_tls *c, const char *want) {
  const char *got = mp_tls_error(c);
  if (got != NULL && strcmp(got, want) == 0) return true;
  fprintf(stderr, "error '%s', expected '%s' (reason: %s)\n",
          got ? got : "(none)", want,
          mp_tls_reason(c) ? mp_tls_reason(c) : "(none)");
  return false;
}

/* ---- the tests --------------------------------------------------------- */

static void test_handshake_verified(mp_tls_ctx *ctx) {
  SSL_CTX *sctx = server_ctx(&server, NULL, false, 0);
  SSL *s = server_new(sctx);
  mp_tls *c = client_new(ctx, "localhost", true, NULL);
  /* Nothing to read or write before the handshake. */
  char buf[16];
  CHECK_EQ_INT(mp_tls_read(c, buf, sizeof buf), MP_STATE);
  CHECK_EQ_INT(mp_tls_write(c, "x", 1), MP_STATE);
  CHECK_EQ_INT(mp_tls_shutdown(c), MP_STATE);
  /* The first call queues the ClientHello and waits for the server. */
  CHECK_EQ_INT(mp_tls_handshake(c), MP_AGAIN);
  CHECK(mp_tls_pending(c) > 0);
  int src;
  CHECK_EQ_INT(handshake(c, s, false, &src), 0);
  CHECK_EQ_INT(src, 1);
  CHECK_EQ_INT(mp_tls_handshake(c), 0); /* and stays done */
  CHECK(mp_tls_error(c) == NULL);
  CHECK_EQ_INT(mp_tls_verify_result(c), X509_V_OK);
  CHECK(!mp_tls_session_reused(c));
  CHECK(sni_present);
  CHECK(strcmp(seen_sni, "localhost") == 0);
  mp_tls_free(c);
  SSL_free(s);

  /* An IP literal is checked against the certificate's addresses and is
   * not sent as SNI. */
  s = server_new(sctx);
  c = client_new(ctx, "127.0.0.1", true, NULL);
  CHECK_EQ_INT(handshake(c, s, false, &src), 0);
  CHECK_EQ_INT(src, 1);
  CHECK(!sni_present);
  mp_tls_free(c);
  SSL_free(s);

  /* Another name of the certificate. */
  s = server_new(sctx);
  c = client_new(ctx, "example.test", true, NULL);
  CHECK_EQ_INT(handshake(c, s, false, NULL), 0);
  CHECK(strcmp(seen_sni, "example.test") == 0);
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);
}

/* The ClientHello's answer fed one byte at a time: the handshake waits
 * for each byte and completes exactly when the last arrives. */
static void test_handshake_bytewise(mp_tls_ctx *ctx) {
  SSL_CTX *sctx = server_ctx(&server, NULL, false, 0);
  SSL *s = server_new(sctx);
  mp_tls *c = client_new(ctx, "localhost", true, NULL);
  CHECK_EQ_INT(mp_tls_handshake(c), MP_AGAIN);
  to_server(c, s);
  CHECK(SSL_do_handshake(s) <= 0); /* it waits for the client's Finished */
  ERR_clear_error();
  BIO *w = SSL_get_wbio(s);
  char byte;
  int again = 0, done = 0, rc = MP_AGAIN;
  while (BIO_read(w, &byte, 1) == 1) {
    CHECK(rc == MP_AGAIN); /* done only at the last byte */
    CHECK_EQ_INT(mp_tls_feed(c, &byte, 1), 0);
    rc = mp_tls_handshake(c);
    if (rc == MP_AGAIN) again++;
    if (rc == 0) done++;
  }
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_INT(done, 1);
  CHECK(again > 100);
  to_server(c, s);
  CHECK_EQ_INT(SSL_do_handshake(s), 1);
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);
}

#define BIG (100 * 1024 + 7)

static void fill(char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (char)((i * 31 + seed) & 0xff);
}

static void test_data_both_ways(mp_tls_ctx *ctx, bool bytewise) {
  SSL_CTX *sctx = server_ctx(&server, NULL, false, 0);
  SSL *s = server_new(sctx);
  mp_tls *c = client_new(ctx, "localhost", true, NULL);
  CHECK_EQ_INT(handshake(c, s, bytewise, NULL), 0);
  char *sent = malloc(BIG), *got = malloc(BIG);

  /* Client to server: one write of several records, all taken at once. */
  fill(sent, BIG, 1);
  CHECK_EQ_INT(mp_tls_write(c, sent, BIG), BIG);
  CHECK(mp_tls_pending(c) > BIG); /* records carry overhead */
  CHECK_EQ_INT(mp_tls_write(c, sent, 0), 0);
  to_server(c, s);
  size_t n = 0, r;
  while (n < BIG && SSL_read_ex(s, got + n, BIG - n, &r) == 1) n += r;
  CHECK_EQ_INT(n, BIG);
  CHECK(memcmp(sent, got, BIG) == 0);

  /* Server to client, read in pieces smaller than a record: what a
   * record holds past cap comes out on the next calls without new input,
   * then MP_AGAIN. */
  fill(sent, BIG, 2);
  size_t w;
  CHECK(SSL_write_ex(s, sent, BIG, &w) == 1 && w == BIG);
  n = 0;
  to_client(s, c, bytewise, false);
  CHECK_EQ_INT(client_read_all(c, got, BIG, &n, 1000), MP_AGAIN);
  CHECK_EQ_INT(n, BIG);
  CHECK(memcmp(sent, got, BIG) == 0);
  CHECK_EQ_INT(mp_tls_read(c, got, BIG), MP_AGAIN);
  CHECK_EQ_INT(mp_tls_read(c, got, 0), MP_INVALID);

  /* Bytes fed one by one, with a read after each. */
  if (bytewise) {
    CHECK(SSL_write_ex(s, "hello", 5, &w) == 1);
    BIO *sw = SSL_get_wbio(s);
    char byte, out[8];
    size_t have = 0;
    int again = 0;
    while (BIO_read(sw, &byte, 1) == 1) {
      mp_tls_feed(c, &byte, 1);
      ssize_t k = mp_tls_read(c, out + have, sizeof out - have);
      if (k == MP_AGAIN) again++;
      else if (k > 0) have += (size_t)k;
    }
    CHECK_SPAN(out, have, "hello");
    CHECK(again > 5);
  }
  free(sent);
  free(got);
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);
}

static void test_self_signed_fails(mp_tls_ctx *ctx) {
  SSL_CTX *sctx = server_ctx(&self_signed, NULL, false, 0);
  SSL *s = server_new(sctx);
  mp_tls *c = client_new(ctx, "localhost", true, NULL);
  int src;
  int rc = handshake(c, s, false, &src);
  CHECK(rc < 0 && rc != MP_AGAIN);
  CHECK_EQ_INT(rc, UV_EPROTO);
  CHECK(same_error(c, "certificate verify failed: self-signed certificate"));
  CHECK_EQ_INT(mp_tls_verify_result(c), X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT);
  CHECK(mp_tls_reason(c) != NULL); /* OpenSSL's, for the log */
  CHECK(src <= 0); /* the client's alert ended the server's handshake */
  /* The failure is final. */
  CHECK_EQ_INT(mp_tls_handshake(c), UV_EPROTO);
  char buf[4];
  CHECK_EQ_INT(mp_tls_read(c, buf, sizeof buf), UV_EPROTO);
  CHECK_EQ_INT(mp_tls_write(c, "x", 1), UV_EPROTO);
  CHECK_EQ_INT(mp_tls_shutdown(c), MP_STATE);
  CHECK(mp_tls_get_session(c) == NULL);
  mp_tls_free(c);
  SSL_free(s);

  /* With verify off, the same server is accepted. */
  s = server_new(sctx);
  c = client_new(ctx, "localhost", false, NULL);
  CHECK_EQ_INT(handshake(c, s, false, &src), 0);
  CHECK_EQ_INT(src, 1);
  CHECK(mp_tls_error(c) == NULL);
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);
}

static void test_wrong_host_fails(mp_tls_ctx *ctx) {
  SSL_CTX *sctx = server_ctx(&server, NULL, false, 0);
  const char *names[] = {"wrong.test", "127.0.0.2", "sub.localhost"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    SSL *s = server_new(sctx);
    mp_tls *c = client_new(ctx, names[i], true, NULL);
    CHECK_EQ_INT(handshake(c, s, false, NULL), UV_EPROTO);
    CHECK(same_error(c, "certificate host mismatch"));
    mp_tls_free(c);
    SSL_free(s);

    /* verify off: no name check. */
    s = server_new(sctx);
    c = client_new(ctx, names[i], false, NULL);
    CHECK_EQ_INT(handshake(c, s, false, NULL), 0);
    mp_tls_free(c);
    SSL_free(s);
  }
  /* No name: the chain is checked, the name is not. */
  SSL *s = server_new(sctx);
  mp_tls *c = client_new(ctx, NULL, true, NULL);
  CHECK_EQ_INT(handshake(c, s, false, NULL), 0);
  CHECK(!sni_present);
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);
}

/* A context without the test CA (the system's store) does not know the
 * issuer. */
static void test_system_store(void) {
  char err[256];
  mp_tls_ctx *sys = mp_tls_ctx_new(NULL, err, sizeof err);
  CHECK(sys != NULL);
  SSL_CTX *sctx = server_ctx(&server, NULL, false, 0);
  SSL *s = server_new(sctx);
  mp_tls *c = client_new(sys, "localhost", true, NULL);
  CHECK_EQ_INT(handshake(c, s, false, NULL), UV_EPROTO);
  CHECK(same_error(
      c, "certificate verify failed: unable to get local issuer certificate"));
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);
  mp_tls_ctx_free(sys);

  CHECK(mp_tls_ctx_new("/nonexistent/ca.pem", err, sizeof err) == NULL);
  CHECK(strncmp(err, "cannot load CA file /nonexistent/ca.pem",
                strlen("cannot load CA file /nonexistent/ca.pem")) == 0);
}

/* One connection to sctx on ctx for name, with session offered; reads a
 * greeting so that TLS 1.3 tickets are taken in. Returns the connection's
 * session (NULL when none) and whether it was resumed. */
static mp_tls_session *connect_as(mp_tls_ctx *ctx, SSL_CTX *sctx,
                                  const char *name, bool verify,
                                  mp_tls_session *offer, bool clean_close,
                                  int *rc, bool *reused) {
  SSL *s = server_new(sctx);
  mp_tls *c = client_new(ctx, name, verify, offer);
  *rc = handshake(c, s, false, NULL);
  *reused = mp_tls_session_reused(c);
  mp_tls_session *got = NULL;
  if (*rc == 0) {
    CHECK_EQ_INT(SSL_session_reused(s), *reused);
    size_t w;
    CHECK(SSL_write_ex(s, "hi", 2, &w) == 1);
    to_client(s, c, false, false);
    char buf[8];
    size_t n = 0;
    CHECK_EQ_INT(client_read_all(c, buf, sizeof buf, &n, sizeof buf),
                 MP_AGAIN);
    CHECK_SPAN(buf, n, "hi");
    got = mp_tls_get_session(c);
    if (clean_close) {
      CHECK_EQ_INT(mp_tls_shutdown(c), 0);
      to_server(c, s);
    }
  }
  mp_tls_free(c);
  SSL_free(s);
  return got;
}

static mp_tls_session *connect_once(mp_tls_ctx *ctx, SSL_CTX *sctx,
                                    const char *name, bool verify,
                                    mp_tls_session *offer, int *rc,
                                    bool *reused) {
  return connect_as(ctx, sctx, name, verify, offer, true, rc, reused);
}

static void test_session_reuse(mp_tls_ctx *ctx, int max_version) {
  SSL_CTX *sctx = server_ctx(&server, NULL, false, max_version);
  int rc;
  bool reused;
  mp_tls_session *s1 =
      connect_once(ctx, sctx, "localhost", true, NULL, &rc, &reused);
  CHECK_EQ_INT(rc, 0);
  CHECK(!reused);
  CHECK(s1 != NULL);
  /* The second connection resumes, and hands out a session again. */
  mp_tls_session *s2 =
      connect_once(ctx, sctx, "localhost", true, s1, &rc, &reused);
  CHECK_EQ_INT(rc, 0);
  CHECK(reused);
  CHECK(s2 != NULL);
  /* The caller's reference outlives the connections it came from. */
  mp_tls_session *s3 =
      connect_once(ctx, sctx, "localhost", true, s2, &rc, &reused);
  CHECK(reused);
  mp_tls_session_free(s3);
  /* A connection dropped without close_notify (a pool closing an idle
   * one) leaves its session resumable. */
  s3 = connect_as(ctx, sctx, "localhost", true, NULL, false, &rc, &reused);
  CHECK(s3 != NULL);
  mp_tls_session_free(
      connect_once(ctx, sctx, "localhost", true, s3, &rc, &reused));
  CHECK(reused);
  mp_tls_session_free(s3);
  /* A session is not offered to another name. */
  s3 = connect_once(ctx, sctx, "example.test", true, s1, &rc, &reused);
  CHECK_EQ_INT(rc, 0);
  CHECK(!reused);
  mp_tls_session_free(s3);
  mp_tls_session_free(s1);
  mp_tls_session_free(s2);
  mp_tls_session_free(NULL);
  SSL_CTX_free(sctx);
}

/* OpenSSL's client uses a TLS 1.3 ticket once: the pool keeps the newest
 * connection's session, not the first. A TLS 1.2 session resumes again. */
static void test_session_single_use(mp_tls_ctx *ctx) {
  SSL_CTX *sctx = server_ctx(&server, NULL, false, 0);
  int rc;
  bool reused;
  mp_tls_session *s =
      connect_once(ctx, sctx, "localhost", true, NULL, &rc, &reused);
  mp_tls_session *next =
      connect_once(ctx, sctx, "localhost", true, s, &rc, &reused);
  CHECK(reused);
  mp_tls_session_free(
      connect_once(ctx, sctx, "localhost", true, s, &rc, &reused));
  CHECK(!reused);
  mp_tls_session_free(
      connect_once(ctx, sctx, "localhost", true, next, &rc, &reused));
  CHECK(reused);
  mp_tls_session_free(next);
  mp_tls_session_free(s);
  SSL_CTX_free(sctx);

  sctx = server_ctx(&server, NULL, false, TLS1_2_VERSION);
  s = connect_once(ctx, sctx, "localhost", true, NULL, &rc, &reused);
  for (int i = 0; i < 2; i++) {
    mp_tls_session_free(
        connect_once(ctx, sctx, "localhost", true, s, &rc, &reused));
    CHECK(reused);
  }
  mp_tls_session_free(s);
  SSL_CTX_free(sctx);
}

/* Offers session (made with verify off) to a verifying client for name:
 * the server resumes it, and the client must still refuse with want. */
static void check_resumed_refused(mp_tls_ctx *ctx, SSL_CTX *sctx,
                                  const char *name, const char *want) {
  int rc;
  bool reused;
  mp_tls_session *s = connect_once(ctx, sctx, name, false, NULL, &rc, &reused);
  CHECK(s != NULL);
  SSL *srv = server_new(sctx);
  mp_tls *c = client_new(ctx, name, true, s);
  CHECK_EQ_INT(handshake(c, srv, false, NULL), UV_EPROTO);
  CHECK(SSL_session_reused(srv)); /* no certificate was sent this time */
  CHECK(same_error(c, want));
  mp_tls_free(c);
  SSL_free(srv);
  mp_tls_session_free(s);
}

/* A session made with verify off does not get past verify on: a resumed
 * handshake checks the recorded chain result and the name again. */
static void test_resumed_session_is_checked(mp_tls_ctx *ctx, int max_version) {
  SSL_CTX *sctx = server_ctx(&self_signed, NULL, false, max_version);
  check_resumed_refused(ctx, sctx, "localhost",
                        "certificate verify failed: self-signed certificate");
  SSL_CTX_free(sctx);
  sctx = server_ctx(&server, NULL, false, max_version);
  check_resumed_refused(ctx, sctx, "wrong.test", "certificate host mismatch");
  check_resumed_refused(ctx, sctx, "127.0.0.2", "certificate host mismatch");
  SSL_CTX_free(sctx);
}

static void test_client_certificate(mp_tls_ctx *ctx, int max_version) {
  size_t cert_len, key_len;
  char *cert_pem = pem_of(client.cert, ca.cert, NULL, &cert_len);
  char *key_pem = pem_of(NULL, NULL, client.key, &key_len);
  char err[256];

  SSL_CTX *sctx = server_ctx(&server, &ca, true, max_version);
  SSL *s = server_new(sctx);
  mp_tls_opts o = {.server_name = "localhost",
                   .verify = true,
                   .cert_pem = cert_pem,
                   .cert_pem_len = cert_len,
                   .key_pem = key_pem,
                   .key_pem_len = key_len};
  mp_tls *c = mp_tls_client_new(ctx, &o, err, sizeof err);
  CHECK(c != NULL);
  int src;
  CHECK_EQ_INT(handshake(c, s, false, &src), 0);
  CHECK_EQ_INT(src, 1);
  X509 *peer = SSL_get0_peer_certificate(s);
  CHECK(peer != NULL);
  char cn[64] = "";
  if (peer != NULL)
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn,
                              sizeof cn);
  CHECK(strcmp(cn, "moonport client") == 0);
  CHECK_EQ_INT(SSL_get_verify_result(s), X509_V_OK);
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);

  /* Asked for but not given: the server sees none. */
  sctx = server_ctx(&server, &ca, false, max_version);
  s = server_new(sctx);
  c = client_new(ctx, "localhost", true, NULL);
  CHECK_EQ_INT(handshake(c, s, false, &src), 0);
  CHECK_EQ_INT(src, 1);
  CHECK(SSL_get0_peer_certificate(s) == NULL);
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);

  /* Bad material is refused when the session is made. */
  mp_tls_opts bad = o;
  bad.cert_pem = "not a certificate";
  bad.cert_pem_len = strlen(bad.cert_pem);
  CHECK(mp_tls_client_new(ctx, &bad, err, sizeof err) == NULL);
  CHECK(strncmp(err, "bad client certificate", 22) == 0);
  bad = o;
  bad.key_pem = "not a key";
  bad.key_pem_len = strlen(bad.key_pem);
  CHECK(mp_tls_client_new(ctx, &bad, err, sizeof err) == NULL);
  CHECK(strncmp(err, "bad client key", 14) == 0);
  size_t other_len;
  char *other_key = pem_of(NULL, NULL, server.key, &other_len);
  bad = o;
  bad.key_pem = other_key;
  bad.key_pem_len = other_len;
  CHECK(mp_tls_client_new(ctx, &bad, err, sizeof err) == NULL);
  CHECK(strncmp(err, "client certificate and key do not match", 39) == 0);
  bad = o;
  bad.key_pem = NULL;
  CHECK(mp_tls_client_new(ctx, &bad, err, sizeof err) == NULL);
  CHECK(ERR_peek_error() == 0); /* no error left behind */
  free(other_key);
  free(cert_pem);
  free(key_pem);
}

static void test_clean_close(mp_tls_ctx *ctx) {
  SSL_CTX *sctx = server_ctx(&server, NULL, false, 0);
  SSL *s = server_new(sctx);
  mp_tls *c = client_new(ctx, "localhost", true, NULL);
  CHECK_EQ_INT(handshake(c, s, false, NULL), 0);
  char buf[16];
  size_t n;
  /* The client closes: the server reads close_notify. */
  CHECK_EQ_INT(mp_tls_shutdown(c), 0);
  size_t alert = mp_tls_pending(c);
  CHECK(alert > 0);
  CHECK_EQ_INT(mp_tls_shutdown(c), 0); /* once */
  CHECK_EQ_INT(mp_tls_pending(c), alert);
  CHECK_EQ_INT(mp_tls_write(c, "x", 1), MP_STATE);
  to_server(c, s);
  CHECK(SSL_read_ex(s, buf, sizeof buf, &n) == 0);
  CHECK_EQ_INT(SSL_get_error(s, 0), SSL_ERROR_ZERO_RETURN);
  /* The server answers with data, then its own close_notify: the client
   * reads both. */
  CHECK(SSL_write_ex(s, "bye", 3, &n) == 1);
  CHECK(SSL_shutdown(s) == 1);
  to_client(s, c, false, false);
  CHECK_EQ_INT(mp_tls_read(c, buf, sizeof buf), 3);
  CHECK_SPAN(buf, 3, "bye");
  CHECK_EQ_INT(mp_tls_read(c, buf, sizeof buf), 0);
  CHECK_EQ_INT(mp_tls_read(c, buf, sizeof buf), 0);
  CHECK(mp_tls_error(c) == NULL);
  mp_tls_free(c);
  SSL_free(s);

  /* The server closes first; the client may still write, then close. */
  s = server_new(sctx);
  c = client_new(ctx, "localhost", true, NULL);
  CHECK_EQ_INT(handshake(c, s, false, NULL), 0);
  SSL_shutdown(s);
  to_client(s, c, false, false);
  CHECK_EQ_INT(mp_tls_read(c, buf, sizeof buf), 0);
  CHECK_EQ_INT(mp_tls_write(c, "late", 4), 4);
  CHECK_EQ_INT(mp_tls_shutdown(c), 0);
  to_server(c, s);
  CHECK(SSL_read_ex(s, buf, sizeof buf, &n) == 1);
  CHECK_SPAN(buf, n, "late");
  mp_tls_free(c);
  SSL_free(s);
  SSL_CTX_free(sctx);
  ERR_clear_error();
}

int main(void) {
  char err[256];
  setup();
  mp_tls_ctx *ctx = mp_tls_ctx_new(ca_path, err, sizeof err);
  if (ctx == NULL) {
    fprintf(stderr, "mp_tls_ctx_new: %s\n", err);
    return 1;
  }
  test_handshake_verified(ctx);
  test_handshake_bytewise(ctx);
  test_data_both_ways(ctx, false);
  test_data_both_ways(ctx, true);
  test_self_signed_fails(ctx);
  test_wrong_host_fails(ctx);
  test_system_store();
  test_session_reuse(ctx, 0);
  test_session_reuse(ctx, TLS1_2_VERSION);
  test_session_single_use(ctx);
  test_resumed_session_is_checked(ctx, 0);
  test_resumed_session_is_checked(ctx, TLS1_2_VERSION);
  test_client_certificate(ctx, 0);
  test_client_certificate(ctx, TLS1_2_VERSION);
  test_clean_close(ctx);
  /* Every call on the engine leaves OpenSSL's error queue empty. */
  CHECK(ERR_peek_error() == 0);
  mp_tls_ctx_free(ctx);
  mp_tls_ctx_free(NULL);
  mp_tls_free(NULL);
  teardown();
  return check_report("tls");
}
