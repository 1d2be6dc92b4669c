/*
 * TLS for outbound sockets (see socket.h's mp_usock_handshake): the glue
 * between a socket record and the TLS engine (net/tls.c), which knows no
 * sockets. Once a socket's handshake begins, the bytes its stream reads
 * are ciphertext, read into the record's cbuf and fed to the engine, and
 * the plaintext the engine gives back goes into the read buffer, where
 * receive's patterns find it as they would on plain TCP; a send hands the
 * plaintext to the engine and writes the records it makes. Everything the
 * engine has to send (handshake flights, records, alerts) is written at
 * once, each piece in a block of its own that its write callback frees,
 * so several may be in flight; a send waits until none is.
 *
 * The worker's context (the trust store: --tls-ca or the system's) is
 * made on the first handshake, so workers that never use TLS never read
 * the store. Each pool keeps the newest session of its server, offered
 * for resumption by the pool's next handshake.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "request.h"
#include "server.h"
#include "socket_int.h"

static mp_tls_ctx *ctx;

typedef struct chunk {
  uv_write_t req;
  mp_usock *sock;
  char data[];
} chunk;

static void on_chunk_written(uv_write_t *req, int status) {
  chunk *c = req->data;
  mp_usock *s = c->sock;
  free(c);
  s->writes--;
  if (s->state != US_OPEN) return;
  if (status != 0) {
    mp__usock_fail_op(s, status);
    return;
  }
  if (s->writes == 0 && s->op == OP_WRITE) mp__usock_end_op(s, 0, false);
}

/* Writes what the engine has to send. Returns 0 or an error. */
static int flush(mp_usock *s) {
  size_t n;
  while ((n = mp_tls_pending(s->tls)) > 0) {
    chunk *c = malloc(sizeof *c + n);
    if (c == NULL) return MP_NOMEM;
    n = mp_tls_take(s->tls, c->data, n);
    size_t off = 0;
    if (s->writes == 0) { /* nothing queued before it: try it now */
      uv_buf_t buf = uv_buf_init(c->data, (unsigned)n);
      int rc = mp_stream_try_write(&s->stream, &buf, 1);
      if (rc < 0 && rc != UV_EAGAIN && rc != UV_ENOSYS) {
        free(c);
        return rc;
      }
      off = rc > 0 ? (size_t)rc : 0;
    }
    if (off == n) {
      free(c);
      continue;
    }
    c->sock = s;
    c->req.data = c;
    uv_buf_t buf = uv_buf_init(c->data + off, (unsigned)(n - off));
    int rc = mp_stream_write(&s->stream, &c->req, &buf, 1, on_chunk_written);
    if (rc != 0) {
      free(c);
      return rc;
    }
    s->writes++;
  }
  return 0;
}

/* One step of the handshake: 0 done, MP_AGAIN, or an error (the reason in
 * tls_error). */
static int step(mp_usock *s) {
  int rc = mp_tls_handshake(s->tls);
  int f = flush(s);
  if (rc == 0) s->tls_done = true;
  if (rc < 0 && rc != MP_AGAIN) {
    const char *why = mp_tls_error(s->tls);
    snprintf(s->tls_error, sizeof s->tls_error, "%s",
             why != NULL ? why : "handshake failed");
    return UV_EPROTO;
  }
  if (f != 0) {
    snprintf(s->tls_error, sizeof s->tls_error, "%s", "closed");
    return f;
  }
  return rc;
}

void mp__tls_drain(mp_usock *s) {
  if (!s->tls_done || s->eof || s->rerr != 0) return;
  for (;;) {
    if (mp__usock_room(s, 16 * 1024) != 0) {
      s->rerr = MP_NOMEM;
      return;
    }
    mp_buf *b = &s->rbuf;
    ssize_t n = mp_tls_read(s->tls, b->data + b->len, b->cap - b->len);
    if (n > 0) {
      b->len += (size_t)n;
      continue;
    }
    if (n == 0)
      s->eof = true; /* the peer's close_notify */
    else if (n != MP_AGAIN)
      s->rerr = (int)n;
    break;
  }
  if (flush(s) != 0 && s->rerr == 0) s->rerr = UV_EPIPE;
}

void mp__tls_on_read(mp_usock *s, ssize_t nread) {
  if (nread > 0) {
    if (mp_tls_feed(s->tls, s->cbuf, (size_t)nread) != 0) s->rerr = MP_NOMEM;
  } else if (nread == UV_EOF) {
    s->eof = true;
  } else {
    s->rerr = (int)nread;
  }
  if (s->op == OP_HANDSHAKE) {
    if (s->rerr == 0 && !s->eof) {
      int rc = step(s);
      if (rc == MP_AGAIN) return;
      if (rc == 0) {
        mp__usock_end_op(s, 0, false);
        return;
      }
      mp__usock_fail_op(s, rc);
      return;
    }
    snprintf(s->tls_error, sizeof s->tls_error, "%s",
             s->eof ? "handshake failed: the server closed the connection"
                    : "handshake failed");
    mp__usock_fail_op(s, s->eof ? MP_CLOSED : s->rerr);
    return;
  }
  /* Plaintext decoded before the network's end is still to be read. */
  bool eof = s->eof;
  int rerr = s->rerr;
  s->eof = false;
  s->rerr = 0;
  mp__tls_drain(s);
  if (eof) s->eof = true;
  if (rerr != 0 && s->rerr == 0) s->rerr = rerr;
}

int mp__tls_send(mp_usock *s, mp_request *r, const char *data, size_t len,
                 double timeout_ms) {
  if (!s->tls_done) return MP_STATE;
  if (len > 0) {
    ssize_t n = mp_tls_write(s->tls, data, len);
    if (n < 0) {
      mp__usock_close(s, (int)n);
      return (int)n;
    }
  }
  int rc = flush(s);
  if (rc != 0) {
    mp__usock_close(s, rc);
    return rc;
  }
  if (s->writes == 0) return 0;
  return mp__usock_begin_op(s, r, OP_WRITE, timeout_ms);
}

void mp__tls_keep_session(mp_usock *s) {
  mp_kpool *p = s->pool;
  if (p == NULL || !s->tls_done) return;
  mp_tls_session *session = mp_tls_get_session(s->tls);
  if (session == NULL) return;
  if (p->session != NULL) mp_tls_session_free(p->session);
  p->session = session;
}

void mp__tls_free(mp_usock *s) {
  if (s->tls != NULL) mp_tls_free(s->tls);
  s->tls = NULL;
  free(s->cbuf);
  free(s->tls_name);
  s->cbuf = s->tls_name = NULL;
}

void mp__tls_close(void) {
  if (ctx != NULL) mp_tls_ctx_free(ctx);
  ctx = NULL;
}

static bool same_name(const char *a, const char *b) {
  return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

int mp_usock_handshake(mp_request *r, double handle, const mp_usock_tls *t,
                       double timeout_ms) {
  mp_usock *s = mp__usock_from_handle(handle);
  if (s == NULL || s->state != US_OPEN) return MP_CLOSED;
  if (r == NULL) return MP_BAD_CONTEXT;
  if (s->op != OP_NONE) return MP_STATE;
  if (s->tls != NULL) { /* a pooled TLS connection */
    if (s->tls_done && s->tls_verify == t->verify &&
        same_name(s->tls_name, t->server_name))
      return 0;
    return MP_STATE;
  }
  s->tls_error[0] = '\0';
  if (ctx == NULL) {
    ctx = mp_tls_ctx_new(mp_server_self->cfg->tls_ca, s->tls_error,
                         sizeof s->tls_error);
    if (ctx == NULL) return UV_EPROTO;
  }
  mp_tls_opts opts = {.server_name = t->server_name,
                      .verify = t->verify,
                      .session = s->pool != NULL ? s->pool->session : NULL,
                      .cert_pem = t->cert_pem,
                      .cert_pem_len = t->cert_len,
                      .key_pem = t->key_pem,
                      .key_pem_len = t->key_len};
  s->tls = mp_tls_client_new(ctx, &opts, s->tls_error, sizeof s->tls_error);
  if (s->tls == NULL) return UV_EPROTO;
  s->tls_verify = t->verify;
  s->tls_name = strdup(t->server_name != NULL ? t->server_name : "");
  s->cbuf = malloc(MP__CBUF_SIZE);
  if (s->tls_name == NULL || s->cbuf == NULL) {
    mp__usock_close(s, MP_NOMEM);
    return MP_NOMEM;
  }
  /* Bytes read before the handshake (none, in a sane protocol) would be
   * plaintext taken for ciphertext: the buffer starts empty. */
  s->rbuf.len = s->rpos = s->scan = 0;
  int rc = step(s);
  if (rc == 0) return 0;
  if (rc != MP_AGAIN) {
    mp__usock_close(s, rc);
    return rc;
  }
  if (!s->reading) {
    int st = mp_stream_read_start(&s->stream, mp__usock_on_alloc,
                                  mp__usock_on_read);
    if (st != 0) {
      mp__usock_close(s, st);
      return st;
    }
    s->reading = true;
  }
  return mp__usock_begin_op(s, r, OP_HANDSHAKE, timeout_ms);
}

const char *mp_usock_tls_error(double handle) {
  mp_usock *s = mp__usock_from_handle(handle);
  return s != NULL ? s->tls_error : "";
}

int mp_usock_tls_resumed(double handle) {
  mp_usock *s = mp__usock_from_handle(handle);
  if (s == NULL || s->tls == NULL) return MP_CLOSED;
  return mp_tls_session_reused(s->tls) ? 1 : 0;
}
