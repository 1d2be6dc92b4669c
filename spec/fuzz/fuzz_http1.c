/*
 * libFuzzer target: the HTTP/1.1 request parser (server/http/http1.c) as a
 * connection drives it (server/req/conn.c): one read buffer of
 * --max-header-size + 4096 bytes, reads appended as they come, the buffer
 * compacted when less than a quarter is free (the head of the message in
 * progress and the unparsed bytes kept, spans moved with
 * mp_http1_moved), each whole message followed by mp_http1_next, and
 * parsing stopped at the first error or at a message that does not keep
 * the connection.
 *
 * The input is the bytes a client sends. They are read twice: in reads as
 * large as the buffer allows, and in reads of sizes drawn from the input's
 * hash. Between reads the buffer is a heap block of exactly the bytes it
 * holds, so AddressSanitizer catches a read past the input. Invariants:
 * - the parser never moves backwards, never says NEED_MORE with bytes
 *   left (but a head's last CR, held for the byte after it), hands out body bytes only from the bytes of the current call,
 *   and keeps every span within the head, which stays as it was recorded
 *   across compactions until the message ends;
 * - a body has the length its framing says, within the body limit; an
 *   error is one of the statuses the parser documents, with a message;
 * - both readings give the same transcript (but see fuzz_same_transcript:
 *   a limit on a span against llhttp's refusal of a byte in that span) (heads, bodies, trailers,
 *   errors): how the bytes were split never changes what was parsed;
 * - the responses written for the messages (server/http/http1_out.c, the
 *   request's target echoed in a field, its body echoed, an error closing)
 *   read back through the response parser (server/http/h1resp.c) as the
 *   same statuses, targets and bodies, framed: nothing left over, no
 *   response running into the next.
 */
#include "fuzz.h"

#include <stdbool.h>

#include "h1resp.h"
#include "http1.h"
#include "http1_out.h"
#include "pool.h"

#define MAX_HEAD 1024
#define MAX_FIELDS 16
#define MAX_BODY 4096
#define CAP (MAX_HEAD + 4096) /* server/req/server.c: rbuf_size */
#define MAX_RESPONSES 256

static const mp_http1_limits limits = {
    .max_header_size = MAX_HEAD, .max_body_size = MAX_BODY, .max_headers = MAX_FIELDS};

/* A response written, and what reading it back must give. */
typedef struct expect {
  int status;
  bool head_only;
  bool close;
  bool has_target;
  fuzz_log target;
  fuzz_log body;
} expect;

typedef struct conn {
  mp_http1 h1;
  mp_http1_msg msg;
  mp_hfield fields[MAX_FIELDS];
  char *rbuf; /* exactly rlen bytes */
  size_t rlen, rpos;
  size_t lo;         /* where the current call's bytes start */
  fuzz_log *log;     /* the transcript */
  fuzz_log head;     /* the head as recorded at MP_H1_HEAD */
  fuzz_log body;     /* the current message's body */
  fuzz_log trailers; /* its trailer fields, tagged by kind */
  int tr_kind;
  bool stopped;
  /* Responses (the first reading only). */
  bool respond;
  mp_buf out;
  expect expects[MAX_RESPONSES];
  unsigned nexpects;
} conn;

static int on_body(void *ud, const char *p, size_t n) {
  conn *c = ud;
  FUZZ_CHECK(p >= c->rbuf + c->lo && p + n <= c->rbuf + c->rlen,
             "body bytes outside the call's input");
  fuzz_put(&c->body, p, n);
  return 0;
}

static int on_trailer(void *ud, int what, const char *p, size_t n) {
  conn *c = ud;
  FUZZ_CHECK(what == MP_H1_TRAILER_NAME || what == MP_H1_TRAILER_VALUE ||
                 what == MP_H1_TRAILER_END, "trailer callback kind %d", what);
  FUZZ_CHECK(n == 0 || (p >= c->rbuf + c->lo && p + n <= c->rbuf + c->rlen),
             "trailer bytes outside the call's input");
  /* Pieces of one name or value join up; a tag marks each change. */
  if (what != c->tr_kind || what == MP_H1_TRAILER_END) {
    char tag = (char)('0' + what);
    fuzz_put(&c->trailers, &tag, 1);
  }
  c->tr_kind = what;
  fuzz_put(&c->trailers, p, n);
  return 0;
}

static void check_span(const mp_http1_msg *m, mp_span s, const char *what) {
  FUZZ_CHECK((uint64_t)s.off + s.len <= m->head_len,
             "%s span [%u, +%u) past the head's %u bytes", what, s.off, s.len,
             m->head_len);
}

static void put_span(fuzz_log *l, const char *base, mp_span s) {
  fuzz_printf(l, "%u:", s.len);
  fuzz_put(l, base + s.off, s.len);
  fuzz_put(l, "|", 1);
}

/* The head as it reads from the buffer now. */
static void record_head(conn *c, fuzz_log *l) {
  const mp_http1_msg *m = &c->msg;
  const char *base = c->rbuf + c->h1.msg_off;
  FUZZ_CHECK(m->nfields <= MAX_FIELDS, "%u fields", m->nfields);
  FUZZ_CHECK(m->head_len <= MAX_HEAD, "a head of %u bytes", m->head_len);
  FUZZ_CHECK(c->h1.msg_off + m->head_len <= c->rlen, "head past the buffer");
  check_span(m, m->target, "target");
  check_span(m, m->path, "path");
  check_span(m, m->query, "query");
  check_span(m, m->authority, "authority");
  FUZZ_CHECK(m->target.len > 0, "an empty target");
  fuzz_printf(l, "HEAD m%u %u.%u ka%d ch%d up%d ex%d cl%lld ", m->method,
              m->http_major, m->http_minor, m->keep_alive, m->chunked,
              m->upgrade, m->expect_continue, (long long)m->content_length);
  put_span(l, base, m->target);
  put_span(l, base, m->path);
  put_span(l, base, m->query);
  put_span(l, base, m->authority);
  for (unsigned i = 0; i < m->nfields; i++) {
    check_span(m, m->fields[i].name, "field name");
    check_span(m, m->fields[i].value, "field value");
    FUZZ_CHECK(m->fields[i].name.len > 0, "an empty field name");
    put_span(l, base, m->fields[i].name);
    put_span(l, base, m->fields[i].value);
  }
  fuzz_put(l, "\n", 1);
}

static const char DATE[] = "Date: Thu, 01 Jan 2026 00:00:00 GMT\r\n";

static void respond(conn *c, int status, bool head_only, bool close,
                    const char *body, size_t body_len) {
  if (!c->respond || c->nexpects == MAX_RESPONSES) return;
  expect *e = &c->expects[c->nexpects++];
  *e = (expect){.status = status, .head_only = head_only, .close = close};
  fuzz_log extra = {0};
  if (status == 200) {
    const char *t = c->rbuf + c->h1.msg_off + c->msg.target.off;
    if (mp_http1_valid_value(t, c->msg.target.len)) {
      e->has_target = true;
      fuzz_put(&e->target, t, c->msg.target.len);
      fuzz_put(&extra, "X-Target: ", 10);
      fuzz_put(&extra, t, c->msg.target.len);
      fuzz_put(&extra, "\r\n", 2);
    }
  }
  mp_http1_head h = {
      .status = status,
      .date = DATE,
      .date_len = sizeof DATE - 1,
      .content_type = status == 200 ? "text/plain" : "application/json",
      .content_length = (int64_t)body_len,
      .extra = extra.p,
      .extra_len = extra.len,
      .connection = close                        ? MP_H1_CONN_CLOSE
                    : c->msg.http_minor == 0 ? MP_H1_CONN_KEEPALIVE
                                             : MP_H1_CONN_NONE};
  FUZZ_CHECK(mp_http1_write_head(&c->out, &h) == 0, "write_head failed");
  if (!head_only) {
    FUZZ_CHECK(mp_buf_append(&c->out, body, body_len) == 0, "out of memory");
    fuzz_put(&e->body, body, body_len);
  }
  fuzz_log_free(&extra);
}

static void message_done(conn *c) {
  const mp_http1_msg *m = &c->msg;
  fuzz_log now = {0};
  record_head(c, &now);
  FUZZ_CHECK(now.len == c->head.len && memcmp(now.p, c->head.p, now.len) == 0,
             "the head changed between MP_H1_HEAD and the message's end:\n%s%s",
             c->head.p, now.p);
  fuzz_log_free(&now);
  FUZZ_CHECK(c->body.len == m->body_len, "%zu body bytes, body_len %llu",
             c->body.len, (unsigned long long)m->body_len);
  FUZZ_CHECK(m->body_len <= MAX_BODY, "a body of %llu bytes",
             (unsigned long long)m->body_len);
  if (m->content_length >= 0)
    FUZZ_CHECK(m->body_len == (uint64_t)m->content_length,
               "%llu body bytes for Content-Length %lld",
               (unsigned long long)m->body_len, (long long)m->content_length);
  else if (!m->chunked)
    FUZZ_CHECK(m->body_len == 0, "a body without framing");
  if (!m->chunked) FUZZ_CHECK(c->trailers.len == 0, "trailers without chunks");
  fuzz_printf(c->log, "BODY %zu:", c->body.len);
  fuzz_put(c->log, c->body.p, c->body.len);
  fuzz_printf(c->log, "\nTRAILERS %zu:", c->trailers.len);
  fuzz_put(c->log, c->trailers.p, c->trailers.len);
  fuzz_put(c->log, "\n", 1);
  respond(c, 200, m->method == HTTP_HEAD, !m->keep_alive, c->body.p,
          c->body.len);
  c->body.len = c->trailers.len = 0;
  c->tr_kind = -1;
  if (!m->keep_alive) {
    fuzz_put(c->log, "CLOSE\n", 6);
    c->stopped = true;
  }
}

static void error_done(conn *c) {
  int s = c->h1.status;
  FUZZ_CHECK(s == 400 || s == 413 || s == 414 || s == 417 || s == 431 ||
                 s == 501 || s == 505, "error status %d", s);
  FUZZ_CHECK(c->h1.error != NULL && c->h1.error[0] != '\0', "no error text");
  fuzz_printf(c->log, "ERROR %d %s\n", s, c->h1.error);
  static const char body[] = "{\"error\":\"bad request\"}";
  respond(c, s, false, true, body, sizeof body - 1);
  c->stopped = true;
}

/* Parses what the buffer holds, as conn_process does with a handler that
 * answers at once. */
static void process(conn *c) {
  for (unsigned iter = 0;; iter++) {
    FUZZ_CHECK(iter < 4 * c->rlen + 16, "the parser does not progress");
    size_t before = c->rpos;
    c->lo = before;
    int rc = mp_http1_execute(&c->h1, c->rbuf, c->rlen, &c->rpos);
    FUZZ_CHECK(c->rpos >= before && c->rpos <= c->rlen,
               "pos went from %zu to %zu of %zu", before, c->rpos, c->rlen);
    switch (rc) {
      case MP_H1_NEED_MORE:
        /* All consumed, but a head's CR, which waits for the next byte. */
        FUZZ_CHECK(c->rpos == c->rlen ||
                       (c->rpos + 1 == c->rlen && c->rbuf[c->rpos] == '\r' &&
                        c->h1.state == MP_H1_IN_HEAD),
                   "NEED_MORE with %zu bytes left", c->rlen - c->rpos);
        return;
      case MP_H1_ERROR:
        error_done(c);
        return;
      case MP_H1_HEAD:
        FUZZ_CHECK(c->h1.state != MP_H1_IN_HEAD, "HEAD in the head");
        FUZZ_CHECK(c->h1.msg_off + c->msg.head_len <= c->rpos,
                   "head not consumed");
        c->head.len = 0;
        record_head(c, &c->head);
        fuzz_put(c->log, c->head.p, c->head.len);
        break;
      case MP_H1_MESSAGE:
        FUZZ_CHECK(c->h1.state == MP_H1_DONE, "MESSAGE in state %d",
                   c->h1.state);
        FUZZ_CHECK(c->head.len > 0, "a message without a head");
        message_done(c);
        c->head.len = 0;
        if (c->stopped) return;
        mp_http1_next(&c->h1, c->rpos);
        break;
      default:
        FUZZ_CHECK(0, "execute answered %d", rc);
    }
  }
}

static size_t head_to_keep(const conn *c) {
  if (c->h1.state == MP_H1_IN_HEAD) return c->rpos - c->h1.msg_off;
  return c->msg.head_len;
}

/* conn.c's compact(), then the block cut to the bytes it holds. */
static void compact(conn *c) {
  size_t head = head_to_keep(c);
  size_t unparsed = c->rlen - c->rpos;
  if (c->h1.msg_off > 0) memmove(c->rbuf, c->rbuf + c->h1.msg_off, head);
  if (c->rpos != head) memmove(c->rbuf + head, c->rbuf + c->rpos, unparsed);
  c->rpos = head;
  c->rlen = head + unparsed;
  mp_http1_moved(&c->h1, 0);
  char *b = fuzz_exact(c->rbuf, c->rlen);
  free(c->rbuf);
  c->rbuf = b;
}

static void append(conn *c, const uint8_t *p, size_t n) {
  char *b = malloc(c->rlen + n);
  FUZZ_CHECK(b != NULL, "out of memory");
  if (c->rlen > 0) memcpy(b, c->rbuf, c->rlen);
  memcpy(b + c->rlen, p, n);
  free(c->rbuf);
  c->rbuf = b;
  c->rlen += n;
}

/* Reads the input in pieces (rng NULL: as large as the buffer allows). */
static void run(conn *c, const uint8_t *data, size_t size, fuzz_rng *rng) {
  mp_http1_init(&c->h1, &limits, on_body, on_trailer, c);
  mp_http1_attach(&c->h1, &c->msg);
  c->msg.fields = c->fields;
  c->tr_kind = -1;
  size_t off = 0;
  while (off < size && !c->stopped) {
    if (CAP - c->rlen < CAP / 4) compact(c);
    size_t room = CAP - c->rlen;
    FUZZ_CHECK(room > 0, "the read buffer is full");
    size_t n = rng ? fuzz_split(rng) : room;
    if (n > room) n = room;
    if (n > size - off) n = size - off;
    append(c, data + off, n);
    off += n;
    process(c);
  }
  if (!c->stopped) fuzz_printf(c->log, "EOF %d\n", mp_http1_idle(&c->h1));
}

static void conn_free(conn *c) {
  free(c->rbuf);
  fuzz_log_free(&c->head);
  fuzz_log_free(&c->body);
  fuzz_log_free(&c->trailers);
  mp_buf_release(&c->out);
  for (unsigned i = 0; i < c->nexpects; i++) {
    fuzz_log_free(&c->expects[i].target);
    fuzz_log_free(&c->expects[i].body);
  }
}

static bool field_is(const char *base, const mp_hfield *f, const char *name) {
  size_t n = strlen(name);
  return f->name.len == n && strncasecmp(base + f->name.off, name, n) == 0;
}

/* Reads the responses back as a client would, each from its first byte. */
static void read_back(conn *c) {
  char *buf = fuzz_exact(c->out.data, c->out.len);
  size_t len = c->out.len, start = 0;
  mp_h1resp *r = malloc(sizeof *r);
  FUZZ_CHECK(r != NULL, "out of memory");
  mp_h1resp_init(r, 64 * 1024, MP_HTTPC_MAX_FIELDS);
  fuzz_log body = {0};
  for (unsigned i = 0; i < c->nexpects; i++) {
    const expect *e = &c->expects[i];
    mp_h1resp_start(r, e->head_only);
    size_t pos = 0;
    bool head = false;
    body.len = 0;
    for (;;) {
      int rc = mp_h1resp_feed(r, buf + start, len - start, &pos);
      FUZZ_CHECK(rc != MP_HTTPC_ERROR, "response %u: %s", i, r->error);
      FUZZ_CHECK(rc != MP_HTTPC_MORE, "response %u is not framed", i);
      if (rc == MP_HTTPC_HEAD) {
        head = true;
        FUZZ_CHECK(r->status == e->status, "response %u: status %d, want %d",
                   i, r->status, e->status);
        const char *base = buf + start + r->head_start;
        bool found = false;
        for (unsigned k = 0; k < r->nfields; k++) {
          const mp_hfield *f = &r->fields[k];
          if (!field_is(base, f, "x-target")) continue;
          found = true;
          FUZZ_CHECK(f->value.len == e->target.len &&
                         memcmp(base + f->value.off, e->target.p,
                                e->target.len) == 0,
                     "response %u: the target read back differs", i);
        }
        FUZZ_CHECK(found == e->has_target, "response %u: X-Target %s", i,
                   found ? "unexpected" : "missing");
      } else if (rc == MP_HTTPC_BODY) {
        fuzz_put(&body, r->body, r->body_len);
      } else {
        break;
      }
    }
    FUZZ_CHECK(head, "response %u ended without a head", i);
    FUZZ_CHECK(body.len == e->body.len &&
                   (body.len == 0 || memcmp(body.p, e->body.p, body.len) == 0),
               "response %u: %zu body bytes read back, %zu written", i,
               body.len, e->body.len);
    FUZZ_CHECK(r->keep_alive == !e->close, "response %u: keep-alive %d", i,
               r->keep_alive);
    start += pos;
  }
  FUZZ_CHECK(start == len, "%zu bytes after the last response", len - start);
  fuzz_log_free(&body);
  free(r);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_log whole = {0}, split = {0};
  conn *a = calloc(1, sizeof *a);
  conn *b = calloc(1, sizeof *b);
  FUZZ_CHECK(a != NULL && b != NULL, "out of memory");
  a->log = &whole;
  a->respond = true;
  run(a, data, size, NULL);
  fuzz_rng rng = fuzz_rng_of(data, size);
  b->log = &split;
  run(b, data, size, &rng);
  static const char *const span_limits[] = {"too many header fields", "trailer fields or chunk extensions too large", NULL};
  FUZZ_CHECK(fuzz_same_transcript(&whole, &split, span_limits),
             "read whole and in pieces, the transcripts differ at byte %zu:\n"
             "--- whole\n%s--- in pieces\n%s",
             fuzz_diff_at(&whole, &split), whole.p, split.p);
  read_back(a);
  conn_free(a);
  conn_free(b);
  free(a);
  free(b);
  fuzz_log_free(&whole);
  fuzz_log_free(&split);
  return 0;
}
