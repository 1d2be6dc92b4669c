/*
 * The response a handler builds (see response.h).
 *
 * The response is written straight into the connection's output buffer:
 * mp_response_send appends head and body in one go; mp_response_write
 * appends the head on first use, then each piece with its chunk framing.
 * A body the app compresses (compress.h) is compressed on the way: whole
 * in mp_response_send, piece by piece (each flushed) when streamed.
 * Nothing here writes to the socket or closes the connection; the
 * connection does that when control returns to it. Once a request is
 * detached (its client gone) the response functions still keep its state
 * straight, but write nothing.
 */
#define _GNU_SOURCE /* memmem */
#include "response.h"

#include <stdio.h>
#include <string.h>

#include "compress.h"
#include "conn.h"
#include "errors.h"
#include "http1_out.h"
#include "log.h"
#include "str.h"
#include "task.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"
#define APPLICATION_JSON "application/json"

static int connection_mode(mp_request *r) {
  if (r->srv->stopping) r->keep_alive = false; /* draining for shutdown */
  /* A client still waiting for 100 Continue may never send its body. */
  if (r->msg.expect_continue && !r->body_done) r->keep_alive = false;
  if (!r->keep_alive) return MP_H1_CONN_CLOSE;
  return r->msg.http_minor == 0 ? MP_H1_CONN_KEEPALIVE : MP_H1_CONN_NONE;
}

static bool body_allowed(int status) {
  return status != 204 && status != 304;
}

static int write_head(mp_request *r, const char *content_type,
                      int64_t length) {
  if (r->srv->cfg->debug) {
    /* What the request has cost so far; the rest of a streamed body is
     * not in it. */
    char line[80];
    int n = snprintf(line, sizeof line, "X-Moonport-Alloc: %llu %llu\r\n",
                     (unsigned long long)r->charge.lua_bytes,
                     (unsigned long long)r->charge.c_bytes);
    if (mp_buf_append(&r->headers, line, (size_t)n) != 0) return MP_NOMEM;
  }
  mp_http1_head h;
  h.status = r->status;
  h.reason = r->reason_len ? r->reason : NULL;
  h.reason_len = r->reason_len;
  h.date = mp_server_date(r->srv, &h.date_len);
  h.content_type = r->type_set ? NULL : content_type;
  h.content_length = body_allowed(r->status) ? length : MP_H1_LENGTH_NONE;
  h.extra = r->headers.data;
  h.extra_len = r->headers.len;
  h.own_server = r->server_set;
  h.connection = connection_mode(r);
  return mp_http1_write_head(mp_conn_out(r->conn), &h);
}

int mp_response_reason(mp_request *r, const char *text, size_t len) {
  if (r->res != MP_RES_NEW) return MP_STATE;
  if (len == 0 || len >= sizeof r->reason) return MP_INVALID;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f) return MP_INVALID;
  }
  memcpy(r->reason, text, len);
  r->reason_len = (uint8_t)len;
  return 0;
}

int mp_response_status(mp_request *r, int status) {
  if (r->res != MP_RES_NEW) return MP_STATE;
  if (status < 200 || status > 599) return MP_INVALID;
  r->status = status;
  return 0;
}

static bool name_is(const char *name, size_t nlen, const char *lit) {
  return strlen(lit) == nlen && mp_str_ieq(name, lit, nlen);
}

/* Removes the line of the field called lit from b (lines end in CRLF). */
static void drop_field(mp_buf *b, const char *lit) {
  size_t nlen = strlen(lit);
  for (size_t i = 0; i < b->len;) {
    char *line = b->data + i;
    size_t len = (size_t)((char *)memchr(line, '\n', b->len - i) - line) + 1;
    if (len > nlen && line[nlen] == ':' && mp_str_ieq(line, lit, nlen)) {
      memmove(line, line + len, b->len - i - len);
      b->len -= len;
      return;
    }
    i += len;
  }
}

int mp_response_headers(mp_request *r, const char **out, size_t *len) {
  if (r->res != MP_RES_NEW) return MP_STATE;
  *out = r->headers.data;
  *len = r->headers.len;
  return 0;
}

int mp_response_reset(mp_request *r) {
  if (r->res != MP_RES_NEW) return MP_STATE;
  r->headers.len = 0;
  r->reason_len = 0;
  r->type_set = false;
  r->server_set = false;
  r->length_set = false;
  r->declared = 0;
  return 0;
}

int mp_response_header(mp_request *r, const char *name, size_t nlen,
                       const char *value, size_t vlen) {
  if (r->res != MP_RES_NEW) return MP_STATE;
  if (!mp_http1_valid_name(name, nlen) || !mp_http1_valid_value(value, vlen))
    return MP_INVALID;
  if (name_is(name, nlen, "Content-Length")) {
    int64_t n = 0;
    if (vlen == 0 || vlen > 18) return MP_INVALID;
    for (size_t i = 0; i < vlen; i++) {
      if (value[i] < '0' || value[i] > '9') return MP_INVALID;
      n = n * 10 + (value[i] - '0');
    }
    r->declared = n;
    r->length_set = true;
    return 0;
  }
  if (name_is(name, nlen, "Transfer-Encoding") || name_is(name, nlen, "Date"))
    return MP_DECLINED; /* the core owns framing and the date */
  if (name_is(name, nlen, "Connection")) {
    if (vlen == 5 && mp_str_ieq(value, "close", 5)) r->keep_alive = false;
    return 0; /* the core writes Connection itself */
  }
  if (name_is(name, nlen, "Content-Type")) {
    /* One Content-Type on the wire (RFC 9110 section 8.3): the last set. */
    if (r->type_set) drop_field(&r->headers, "Content-Type");
    r->type_set = true;
  }
  if (name_is(name, nlen, "Server")) r->server_set = true;
  mp_buf *b = &r->headers;
  if (mp_buf_reserve(b, nlen + vlen + 4) != 0) return MP_NOMEM;
  memcpy(b->data + b->len, name, nlen);
  b->len += nlen;
  memcpy(b->data + b->len, ": ", 2);
  b->len += 2;
  memcpy(b->data + b->len, value, vlen);
  b->len += vlen;
  memcpy(b->data + b->len, "\r\n", 2);
  b->len += 2;
  return 0;
}

/* The Content-Type the response goes out with: the handler's, else
 * fallback. */
static const char *type_of(const mp_request *r, const char *fallback,
                           size_t *len) {
  if (r->type_set) {
    const char *p = r->headers.data;
    const char *end = p + r->headers.len;
    while (p != NULL && p < end) {
      if ((size_t)(end - p) > 13 && mp_str_ieq(p, "Content-Type:", 13)) {
        p += 13;
        while (p < end && *p == ' ') p++;
        const char *eol = memchr(p, '\r', (size_t)(end - p));
        *len = eol ? (size_t)(eol - p) : 0;
        return p;
      }
      p = memchr(p, '\n', (size_t)(end - p));
      if (p != NULL) p++;
    }
  }
  *len = strlen(fallback);
  return fallback;
}

/* Whether the response is to be compressed (and says so in its head),
 * with its Vary field added when compression depends on the client. */
static bool compressing(mp_request *r, const char *content_type) {
  if (r->compress == 0 && !r->srv->cfg->gzip) return false;
  size_t ctlen;
  const char *ct = type_of(r, content_type, &ctlen);
  bool vary;
  bool yes = mp_compress_wanted(r, ct, ctlen, &vary);
  if (vary) mp_response_header(r, "Vary", 4, "Accept-Encoding", 15);
  return yes;
}

int mp_response_send(mp_request *r, const char *body, size_t len,
                     const char *content_type) {
  if (r->res != MP_RES_NEW) return MP_STATE;
  if (r->conn == NULL) { /* the client has gone: nobody to send it to */
    r->res = MP_RES_DONE;
    return 0;
  }
  if (compressing(r, content_type)) {
    const char *z;
    size_t zlen;
    int rc = mp_compress_whole(r, body, len, &z, &zlen);
    if (rc < 0) return rc;
    if (rc == 0) {
      mp_response_header(r, "Content-Encoding", 16, "gzip", 4);
      body = z;
      len = zlen;
    }
  }
  if (write_head(r, content_type, (int64_t)len) != 0) return MP_NOMEM;
  r->res = MP_RES_DONE;
  if (r->head_only || !body_allowed(r->status) || len == 0) return 0;
  r->body_bytes = len;
  return mp_buf_append(mp_conn_out(r->conn), body, len);
}

/* A streamed body broke its declared length: the client cannot tell where
 * the response ends, so the connection must end with it. */
static void length_mismatch(mp_request *r, const char *what) {
  const mp_route *route = r->match.route;
  mp_log(MP_LOG_ERROR, "%s %s: %s (declared Content-Length %lld, wrote %lld)",
         mp_route_method_name(route, r->msg.method), route->pattern, what,
         (long long)r->declared, (long long)r->sent);
  r->keep_alive = false;
  if (r->conn != NULL) mp_conn_close_after_flush(r->conn);
}

/* A compressed stream's piece (or its end, final): deflated and flushed
 * through the worker's piece buffer, then framed. */
static int write_compressed(mp_request *r, const char *data, size_t len,
                            bool final, mp_buf *out) {
  static mp_buf piece;
  piece.len = 0;
  if (mp_compress_stream(r, data, len, final, &piece) != 0) return MP_NOMEM;
  if (piece.len == 0) return 0;
  if (!r->chunked) return mp_buf_append(out, piece.data, piece.len);
  char size[24];
  int n = snprintf(size, sizeof size, "%zx\r\n", piece.len);
  if (mp_buf_reserve(out, (size_t)n + piece.len + 2) != 0) return MP_NOMEM;
  mp_buf_append(out, size, (size_t)n);
  mp_buf_append(out, piece.data, piece.len);
  return mp_buf_append(out, "\r\n", 2);
}

static int start_stream(mp_request *r) {
  int64_t length;
  if (r->length_set) {
    length = r->declared;
  } else if (r->msg.http_minor >= 1) {
    length = MP_H1_LENGTH_CHUNKED;
    r->chunked = true;
  } else {
    /* HTTP/1.0 has no chunked framing: the body ends at close. */
    length = MP_H1_LENGTH_NONE;
    r->keep_alive = false;
  }
  if (r->head_only || !body_allowed(r->status)) r->chunked = false;
  /* A declared length is the handler's bytes: kept as they are. */
  if (!r->length_set && compressing(r, TEXT_PLAIN)) {
    if (mp_compress_stream_start(r) != 0) return MP_NOMEM;
    mp_response_header(r, "Content-Encoding", 16, "gzip", 4);
  }
  if (write_head(r, TEXT_PLAIN, length) != 0) return MP_NOMEM;
  r->res = MP_RES_STREAMING;
  return 0;
}

int mp_response_write(mp_request *r, const char *data, size_t len) {
  if (r->res == MP_RES_DONE) return MP_STATE;
  if (r->conn == NULL) return MP_CLOSED;
  if (r->res == MP_RES_NEW && start_stream(r) != 0) return MP_NOMEM;
  if (len == 0) return 0; /* an empty chunk would end the body */
  if (r->length_set && r->sent + (int64_t)len > r->declared) {
    length_mismatch(r, "wrote past its declared length");
    len = (size_t)(r->declared - r->sent);
  }
  r->sent += (int64_t)len;
  if (r->head_only || !body_allowed(r->status)) return 0;
  mp_buf *out = mp_conn_out(r->conn);
  if (r->gz != NULL) return write_compressed(r, data, len, false, out);
  if (r->chunked) {
    char size[24];
    int n = snprintf(size, sizeof size, "%zx\r\n", len);
    if (mp_buf_reserve(out, (size_t)n + len + 2) != 0) return MP_NOMEM;
    mp_buf_append(out, size, (size_t)n);
    mp_buf_append(out, data, len);
    return mp_buf_append(out, "\r\n", 2);
  }
  return mp_buf_append(out, data, len);
}

int mp_response_finish(mp_request *r) {
  if (r->res == MP_RES_DONE) return 0;
  if (r->res == MP_RES_NEW) return mp_response_send(r, "", 0, TEXT_PLAIN);
  r->res = MP_RES_DONE;
  if (r->conn == NULL) return 0;
  if (r->gz != NULL && !r->head_only && body_allowed(r->status) &&
      write_compressed(r, "", 0, true, mp_conn_out(r->conn)) != 0)
    return MP_NOMEM;
  if (r->chunked) return mp_buf_append(mp_conn_out(r->conn), "0\r\n\r\n", 5);
  if (r->length_set && r->sent < r->declared)
    length_mismatch(r, "finished short of its declared length");
  return 0;
}

int mp_response_head(mp_request *r, const char *content_type,
                     int64_t length) {
  if (r->res != MP_RES_NEW) return MP_STATE;
  if (r->conn == NULL) {
    r->res = MP_RES_DONE;
    return MP_CLOSED;
  }
  r->length_set = true;
  r->declared = length;
  if (write_head(r, content_type, length) != 0) return MP_NOMEM;
  r->res = MP_RES_STREAMING;
  return 0;
}

int mp_response_fault(mp_request *r, int kind) {
  static const char malformed[] =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "lskdu018973t09sylgasjkfg1][]'./.sdlv";
  if (r->res != MP_RES_NEW) return MP_STATE;
  if (kind < MP_FAULT_RESET || kind > MP_FAULT_RANDOM_DATA) return MP_INVALID;
  if (r->conn == NULL) {
    r->res = MP_RES_DONE;
    return 0;
  }
  mp_buf *out = mp_conn_out(r->conn);
  int rc = 0;
  if (kind == MP_FAULT_MALFORMED_CHUNK) {
    rc = mp_buf_append(out, malformed, sizeof malformed - 1);
  } else if (kind == MP_FAULT_RANDOM_DATA) {
    /* Not HTTP: bytes from a generator seeded by the clock. */
    char junk[512];
    uint64_t x = uv_hrtime() | 1;
    for (size_t i = 0; i < sizeof junk; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      junk[i] = (char)(x >> 24);
    }
    rc = mp_buf_append(out, junk, sizeof junk);
  }
  r->res = MP_RES_DONE;
  r->keep_alive = false;
  r->status = 0;
  if (kind == MP_FAULT_RESET)
    mp_conn_reset_after_flush(r->conn);
  else
    mp_conn_close_after_flush(r->conn);
  return rc;
}

int mp_response_error_to(mp_server *s, mp_buf *out, int status,
                         const char *text, bool close, const char *extra,
                         size_t extra_len) {
  char body[1100];
  size_t n = 0;
  memcpy(body, "{\"error\":", 9);
  n = 9;
  n += mp_str_json(body + n, sizeof body - n - 1, text, strlen(text));
  body[n++] = '}';
  mp_http1_head h = {
      .status = status,
      .content_type = APPLICATION_JSON,
      .content_length = (int64_t)n,
      .extra = extra,
      .extra_len = extra_len,
      .connection = close ? MP_H1_CONN_CLOSE : MP_H1_CONN_NONE,
  };
  h.date = mp_server_date(s, &h.date_len);
  if (mp_http1_write_head(out, &h) != 0) return MP_NOMEM;
  if (mp_buf_append(out, body, n) != 0) return MP_NOMEM;
  return (int)n;
}

/* Whether a field the handler (or its middleware) set goes out with an
 * error answer the core makes in its place: its request id, and CORS's
 * fields, without which a browser hides the error from the page. */
static bool kept_on_error(const char *line, size_t len) {
  static const char *const names[] = {"x-request-id:", "vary:",
                                      "access-control-"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    size_t n = strlen(names[i]);
    if (len > n && mp_str_ieq(line, names[i], n)) return true;
  }
  return false;
}

/* extra, after the kept fields of r's own, in buf (cap bytes); fields
 * that do not fit are left out. Returns the length. */
static size_t error_fields(const mp_request *r, const char *extra,
                           size_t extra_len, char *buf, size_t cap) {
  size_t n = 0;
  const char *p = r->headers.data;
  const char *end = p + r->headers.len;
  while (p != NULL && p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    size_t len = eol ? (size_t)(eol - p) + 1 : (size_t)(end - p);
    if (kept_on_error(p, len) && n + len + extra_len <= cap) {
      memcpy(buf + n, p, len);
      n += len;
    }
    p += len;
  }
  if (extra_len > 0 && n + extra_len <= cap) {
    memcpy(buf + n, extra, extra_len);
    n += extra_len;
  }
  return n;
}

static void send_error(mp_request *r, int status, const char *text,
                       const char *extra, size_t extra_len) {
  if (r->conn == NULL) {
    r->res = MP_RES_DONE;
    r->status = status;
    return;
  }
  if (r->res != MP_RES_NEW) {
    /* Part of another response is out already: all we can do is end the
     * connection so the client sees it was cut short. */
    r->res = MP_RES_DONE;
    r->keep_alive = false;
    mp_conn_close_after_flush(r->conn);
    return;
  }
  r->res = MP_RES_DONE;
  r->status = status;
  bool close = !r->keep_alive;
  mp_buf *out = mp_conn_out(r->conn);
  char fields[2048];
  if (r->headers.len > 0) {
    extra_len = error_fields(r, extra, extra_len, fields, sizeof fields);
    extra = fields;
  }
  if (r->head_only) {
    /* Same head as the GET would get, without the body. */
    size_t before = out->len;
    mp_response_error_to(r->srv, out, status, text, close, extra, extra_len);
    char *blank = memmem(out->data + before, out->len - before, "\r\n\r\n", 4);
    if (blank != NULL) out->len = (size_t)(blank - out->data) + 4;
    return;
  }
  int n = mp_response_error_to(r->srv, out, status, text, close, extra, extra_len);
  if (n > 0) r->body_bytes = (uint64_t)n;
}

void mp_response_error(mp_request *r, int status, const char *text) {
  send_error(r, status, text, NULL, 0);
}

void mp_response_error_with(mp_request *r, int status, const char *text,
                            const char *extra, size_t extra_len) {
  send_error(r, status, text, extra, extra_len);
}

/* Write backpressure: the handler (or a light thread of it) waits until
 * its client has taken enough of what is queued. */
static bool caught_up(const mp_request *w) {
  const mp_request *r = mp_task_root((mp_request *)w);
  return r->conn == NULL ||
         mp_conn_unsent(r->conn) <= r->srv->cfg->write_high_water;
}

static const mp_wait_ops writing = {
    .name = "write",
    .ready = caught_up,
    .client_gone = mp_wait_ends_when_gone,
};

int mp_response_wait_write(mp_request *r) {
  mp_request *w = mp_request_waiter(r);
  if (w == NULL) return 0;
  int rc = mp_wait_begin(w, &writing);
  return rc != 0 ? rc : MP_AGAIN;
}

