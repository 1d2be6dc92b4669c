/*
 * The protocol module on strings: whole requests, every split of a request
 * into two reads and one byte per read, pipelining, every rejection the
 * pre-scan and the limits add to llhttp, and the bytes of response heads.
 * Requests are copied to the very end of a heap buffer so that AddressSanitizer
 * catches any read past the input.
 */
#include <stdlib.h>

#include "check.h"
#include "errors.h"
#include "http1.h"
#include "http1_out.h"
#include "pool.h"
#include "str.h"

#define MAX_FIELDS 100

typedef struct parsed {
  mp_http1 h;
  mp_http1_msg msg;
  mp_hfield fields[MAX_FIELDS];
  char body[4096];
  size_t body_len;
} parsed;

static mp_http1_limits limits = {
    .max_header_size = 1024, .max_body_size = 64, .max_headers = 8};

static int collect(void *ud, const char *p, size_t n) {
  parsed *t = ud;
  if (t->body_len + n > sizeof t->body) return -1;
  memcpy(t->body + t->body_len, p, n);
  t->body_len += n;
  return 0;
}

static void setup(parsed *t) {
  memset(t, 0, sizeof *t);
  t->msg.fields = t->fields;
  mp_http1_init(&t->h, &limits, collect, NULL, t);
  mp_http1_attach(&t->h, &t->msg);
}

/* mp_http1_execute, going on after a whole head as the connection does;
 * counts the heads reported. */
static int heads_seen;
static int exec(parsed *t, const char *buf, size_t len, size_t *pos) {
  int rc;
  while ((rc = mp_http1_execute(&t->h, buf, len, pos)) == MP_H1_HEAD)
    heads_seen++;
  return rc;
}

/* Feeds s as reads of `step` bytes (0: all at once) into one buffer that
 * ends exactly where the input does. Returns the last result; *pos is how
 * far the parser got. */
static int feedn(parsed *t, const char *s, size_t len, size_t step,
                 char **bufp, size_t *pos) {
  char *buf = malloc(len ? len : 1);
  memcpy(buf, s, len);
  *bufp = buf;
  *pos = 0;
  int rc = MP_H1_NEED_MORE;
  size_t avail = 0;
  while (avail < len) {
    avail = step == 0 ? len : (avail + step < len ? avail + step : len);
    rc = exec(t, buf, avail, pos);
    if (rc != MP_H1_NEED_MORE) break;
  }
  return rc;
}

static int feed(parsed *t, const char *s, size_t step, char **bufp,
                size_t *pos) {
  return feedn(t, s, strlen(s), step, bufp, pos);
}

static const char *field_value(parsed *t, const char *buf, const char *name) {
  static char out[256];
  for (unsigned i = 0; i < t->msg.nfields; i++) {
    mp_hfield *f = &t->msg.fields[i];
    if (f->name.len == strlen(name) &&
        mp_str_ieq(buf + f->name.off, name, f->name.len)) {
      snprintf(out, sizeof out, "%.*s", (int)f->value.len, buf + f->value.off);
      return out;
    }
  }
  return NULL;
}

static const char *REQ =
    "POST /users/42?q=a+b&x=%41 HTTP/1.1\r\n"
    "Host: example.test\r\n"
    "Content-Length: 5\r\n"
    "X-Empty:\r\n"
    "X-Long-Name: value with spaces\r\n"
    "\r\n"
    "hello";

static void check_req(parsed *t, const char *buf) {
  CHECK_EQ_INT(t->msg.method, HTTP_POST);
  CHECK_EQ_INT(t->msg.http_minor, 1);
  CHECK(t->msg.keep_alive);
  CHECK_SPAN(buf + t->msg.target.off, t->msg.target.len, "/users/42?q=a+b&x=%41");
  CHECK_SPAN(buf + t->msg.path.off, t->msg.path.len, "/users/42");
  CHECK_SPAN(buf + t->msg.query.off, t->msg.query.len, "q=a+b&x=%41");
  CHECK_EQ_INT(t->msg.nfields, 4);
  CHECK(field_value(t, buf, "host") && strcmp(field_value(t, buf, "host"), "example.test") == 0);
  CHECK(field_value(t, buf, "x-empty") && strcmp(field_value(t, buf, "x-empty"), "") == 0);
  CHECK(field_value(t, buf, "X-LONG-NAME") && strcmp(field_value(t, buf, "X-LONG-NAME"), "value with spaces") == 0);
  CHECK_EQ_INT(t->msg.content_length, 5);
  CHECK_SPAN(t->body, t->body_len, "hello");
}

static void test_whole_and_every_step(void) {
  size_t len = strlen(REQ);
  for (size_t step = 0; step <= len; step++) {
    parsed t;
    setup(&t);
    char *buf;
    size_t pos;
    int rc = feed(&t, REQ, step, &buf, &pos);
    CHECK_EQ_INT(rc, MP_H1_MESSAGE);
    CHECK_EQ_INT(pos, len);
    if (rc == MP_H1_MESSAGE) check_req(&t, buf);
    free(buf);
  }
}

/* Every split into two reads: the first read ends at each byte position. */
static void test_every_split(void) {
  size_t len = strlen(REQ);
  for (size_t cut = 1; cut < len; cut++) {
    parsed t;
    setup(&t);
    char *buf = malloc(len);
    memcpy(buf, REQ, len);
    size_t pos = 0;
    heads_seen = 0;
    int rc = exec(&t, buf, cut, &pos);
    CHECK_EQ_INT(rc, MP_H1_NEED_MORE);
    /* Every byte consumed, but a head's CR, which waits for its LF. */
    bool held = buf[cut - 1] == '\r' && !mp_h1scan_done(&t.h.scan);
    CHECK_EQ_INT(pos, held ? cut - 1 : cut);
    rc = exec(&t, buf, len, &pos);
    CHECK_EQ_INT(heads_seen, 1);
    CHECK_EQ_INT(rc, MP_H1_MESSAGE);
    if (rc == MP_H1_MESSAGE) check_req(&t, buf);
    free(buf);
  }
}

/* The head is reported before any body byte is parsed, and a message
 * without a body is whole right after its head. */
static void test_head_first(void) {
  const char *req = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhel";
  parsed t;
  setup(&t);
  char *buf = malloc(strlen(req));
  memcpy(buf, req, strlen(req));
  size_t pos = 0;
  CHECK_EQ_INT(mp_http1_execute(&t.h, buf, strlen(req), &pos), MP_H1_HEAD);
  CHECK_EQ_INT(t.body_len, 0);
  CHECK_EQ_INT(pos, strlen(req) - 3);
  CHECK_EQ_INT(mp_http1_execute(&t.h, buf, strlen(req), &pos), MP_H1_NEED_MORE);
  CHECK_SPAN(t.body, t.body_len, "hel");
  free(buf);

  const char *get = "GET /x HTTP/1.1\r\nHost: x\r\n\r\n";
  setup(&t);
  pos = 0;
  CHECK_EQ_INT(mp_http1_execute(&t.h, get, strlen(get), &pos), MP_H1_HEAD);
  CHECK_EQ_INT(pos, strlen(get));
  CHECK_EQ_INT(mp_http1_execute(&t.h, get, strlen(get), &pos), MP_H1_MESSAGE);
}

static void test_pipelined(void) {
  const char *two =
      "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
      "GET /c";
  parsed t;
  setup(&t);
  char *buf;
  size_t pos;
  int rc = feed(&t, two, 0, &buf, &pos);
  CHECK_EQ_INT(rc, MP_H1_MESSAGE);
  CHECK_SPAN(buf + t.h.msg_off + t.msg.path.off, t.msg.path.len, "/a");
  CHECK(t.msg.keep_alive);
  mp_http1_next(&t.h, pos);
  rc = exec(&t, buf, strlen(two), &pos);
  CHECK_EQ_INT(rc, MP_H1_MESSAGE);
  CHECK_SPAN(buf + t.h.msg_off + t.msg.path.off, t.msg.path.len, "/b");
  CHECK(t.msg.keep_alive); /* HTTP/1.0 asking for keep-alive */
  mp_http1_next(&t.h, pos);
  CHECK(mp_http1_idle(&t.h));
  rc = exec(&t, buf, strlen(two), &pos);
  CHECK_EQ_INT(rc, MP_H1_NEED_MORE); /* the start of a third */
  CHECK(!mp_http1_idle(&t.h));
  CHECK_EQ_INT(pos, strlen(two));
  free(buf);
}

#define CHUNKED_HEAD \
  "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"

/* Keep-alive from the head's Connection fields. When the connection stays
 * open, llhttp goes on too: a request pipelined behind is read, not
 * refused as data after the end, and a Connection field in the trailer
 * section changes nothing. */
static void test_keep_alive_rules(void) {
  struct { const char *req; bool keep; } cases[] = {
      {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
      /* Connection is a list; whitespace around its members is OWS,
       * tabs included (RFC 9110 sections 5.6.1 and 7.6.1). */
      {"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\t\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\t,foo\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: x\r\nConnection: foo,\tCLOSE\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: x\r\nConnection: foo\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: x\r\nConnection: closed, unclose\r\n\r\n", true},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\t\r\n\r\n", true},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\t, x\r\n\r\n", true},
      {"GET / HTTP/1.0\r\nConnection: x ,\tkeep-alive\r\n\r\n", true},
      {"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\t\r\nUpgrade: x\r\n\r\n", false},
      {CHUNKED_HEAD "5\r\nhello\r\n0\r\nConnection: close\r\n\r\n", true},
  };
  static const char next[] = "GET /next HTTP/1.1\r\nHost: x\r\n\r\n";
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char req[256];
    snprintf(req, sizeof req, "%s%s", cases[i].req, cases[i].keep ? next : "");
    for (size_t step = 0; step <= 1; step++) {
      parsed t;
      setup(&t);
      char *buf;
      size_t pos;
      CHECK_EQ_INT(feed(&t, req, step, &buf, &pos), MP_H1_MESSAGE);
      CHECK_EQ_INT(t.msg.keep_alive, cases[i].keep);
      int rc = MP_H1_MESSAGE;
      if (cases[i].keep) {
        mp_http1_next(&t.h, pos);
        rc = exec(&t, buf, strlen(req), &pos);
        CHECK_EQ_INT(rc, MP_H1_MESSAGE);
        if (rc == MP_H1_MESSAGE)
          CHECK_SPAN(buf + t.h.msg_off + t.msg.path.off, t.msg.path.len, "/next");
      }
      if (t.msg.keep_alive != cases[i].keep || rc != MP_H1_MESSAGE)
        fprintf(stderr, "  %d %s for request: %s\n", t.h.status, t.h.error, req);
      free(buf);
    }
  }
}

static void test_chunked(void) {
  const char *req =
      "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";
  for (size_t step = 0; step < 4; step++) {
    parsed t;
    setup(&t);
    char *buf;
    size_t pos;
    CHECK_EQ_INT(feed(&t, req, step, &buf, &pos), MP_H1_MESSAGE);
    CHECK(t.msg.chunked);
    CHECK_SPAN(t.body, t.body_len, "hello world");
    free(buf);
  }
}

static void test_trailers_and_extensions(void) {
  /* Trailers and chunk extensions are skipped: not merged into the head's
   * fields, and the body is intact. */
  const char *req =
      "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=\"value\"\r\nhello\r\n0\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n";
  for (size_t step = 0; step < 3; step++) {
    parsed t;
    setup(&t);
    char *buf;
    size_t pos;
    int rc = feed(&t, req, step, &buf, &pos);
    CHECK_EQ_INT(rc, MP_H1_MESSAGE);
    if (rc != MP_H1_MESSAGE) fprintf(stderr, "  %d %s\n", t.h.status, t.h.error);
    CHECK_SPAN(t.body, t.body_len, "hello");
    CHECK_EQ_INT(t.msg.nfields, 2);
    CHECK(field_value(&t, buf, "x-trailer") == NULL);
    free(buf);
  }
}

static void expect_error_n(const char *req, size_t len, int status,
                           size_t step) {
  parsed t;
  setup(&t);
  char *buf;
  size_t pos;
  int rc = feedn(&t, req, len, step, &buf, &pos);
  CHECK_EQ_INT(rc, MP_H1_ERROR);
  CHECK_EQ_INT(t.h.status, status);
  if (rc != MP_H1_ERROR || t.h.status != status)
    fprintf(stderr, "  for request: %s\n", req);
  free(buf);
}

static void expect_error(const char *req, int status, size_t step) {
  expect_error_n(req, strlen(req), status, step);
}

/* A whole message, read at once and in reads of 1 to max_step bytes;
 * with body, that is its body. */
static void expect_message_n(const char *req, size_t max_step,
                             const char *body) {
  for (size_t step = 0; step <= max_step; step++) {
    parsed t;
    setup(&t);
    char *buf;
    size_t pos;
    int rc = feed(&t, req, step, &buf, &pos);
    CHECK_EQ_INT(rc, MP_H1_MESSAGE);
    if (rc != MP_H1_MESSAGE)
      fprintf(stderr, "  %d %s for request: %s\n", t.h.status, t.h.error, req);
    if (body != NULL) CHECK_SPAN(t.body, t.body_len, body);
    free(buf);
  }
}

static void expect_message(const char *req) { expect_message_n(req, 1, NULL); }

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Each of n items put into the request fmt: refused with status (read at
 * once and a byte at a time), or, for status 0, a whole message. */
static void expect_each(const char *fmt, const char *const *items, size_t n,
                        int status) {
  char req[256];
  for (size_t i = 0; i < n; i++) {
    snprintf(req, sizeof req, fmt, items[i]);
    if (status == 0) {
      expect_message(req);
    } else {
      expect_error(req, status, 0);
      expect_error(req, status, 1);
    }
  }
}

static void test_host(void) {
  /* RFC 9112 section 3.2: Host = uri-host [ ":" port ]. */
  const char *bad[] = {"user@example.test", "example.test/path",
                       "exa mple.test", ":8080", "[::1", "[::1]x", "[zz::1]",
                       "[]", "[v1]", "example.test:http", "example.test:65536",
                       "example.test:000080", "a%zzb", "a%4", "ex\"ample",
                       "ex\\ample", "a\tb"};
  const char *good[] = {"example.test", "example.test:8080", "127.0.0.1:80",
                        "[::1]", "[::1]:8080", "[v1.fe80::a+b]", "a%41b",
                        "example.test:", "_under~score!$&'()*+,;=-.",
                        "xn--bcher-kva.example", ""};
  expect_each("GET / HTTP/1.1\r\nHost: %s\r\n\r\n", bad, COUNT(bad), 400);
  expect_each("GET / HTTP/1.1\r\nHost: %s\r\n\r\n", good, COUNT(good), 0);
  /* Byte by byte: a reg-name holds unreserved and sub-delims characters
   * (RFC 3986 section 3.2.2); ':', '%' and '[' mean something else. */
  for (int c = 0x21; c < 0x7f; c++) {
    char req[64];
    snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: a%cb\r\n\r\n", c);
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || strchr("-._~!$&'()*+,;=", c);
    if (ok) expect_message(req);
    else expect_error(req, 400, 0);
  }
  /* An absolute-form target's authority is held to the same rule. */
  const char *bad_targets[] = {"http://user@example.test/p", "http:///p",
                               "http://:80/p", "http://example.test:x/p",
                               "https://user:pw@example.test"};
  const char *good_targets[] = {"http://[::1]:8080/p", "http://example.test:8080?q",
                                "https://example.test"};
  expect_each("GET %s HTTP/1.1\r\nHost: x\r\n\r\n", bad_targets,
              COUNT(bad_targets), 400);
  expect_each("GET %s HTTP/1.1\r\nHost: x\r\n\r\n", good_targets,
              COUNT(good_targets), 0);
}

/* llhttp takes a line without a version for an HTTP/0.9 request and would
 * wait for header fields: the line alone is refused. */
static void test_no_version_at_once(void) {
  for (size_t step = 0; step <= 1; step++) {
    expect_error("GET /\r\n", 400, step);
    expect_error("GET /\n", 400, step);
    expect_error("\r\nGET /x?y\r\n", 400, step);
    expect_error("GET /\r\nHost: x\r\n", 400, step);
  }
}

/* RFC 9112 section 7.1.1: chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS
 * ( token / quoted-string ) ] ). llhttp 8.1.0 refuses a quoted-pair. */
static void test_chunk_extensions(void) {
  const char *good[] = {
      "5;a=\"b;c\"", "5;a=\"b\\\"c\"", "5;a=\"b\\\\c\"", "5 ; a = b", "5\t;a",
      "5;a=\"x\";b=y", "5;a", "5;a;b=c", "5;a=\"\t \xc3\xa9\"", "5;a=\"\"",
      "5;a=\"q\" ;b", "5;a=\"\\\t\"", "5;a=b \t;c", "5;A-b.c!=D~"};
  char req[256];
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    snprintf(req, sizeof req, CHUNKED_HEAD "%s\r\nhello\r\n0\r\n\r\n", good[i]);
    expect_message_n(req, 3, "hello");
  }
  const char *bad[] = {"5;a=\"b", "5;a=b c", "5;=b", "5;a=\"\x01\"", "5;a=\"\x7f\"",
                       "5;", "5;a=", "5;a=b ", "5;a ", "5 ", "5;a=\"b\"c",
                       "5;a=\"\\\x01\"", "5;a@b", "5;a=b@", "5;a\nhello\r",
                       "5;a=b\rX", ";a=b"};
  expect_each(CHUNKED_HEAD "%s\r\nhello\r\n0\r\n\r\n", bad, COUNT(bad), 400);
}

/* A chunk size that alone goes past --max-body-size is refused as soon as
 * its line is in, not after bytes that may never come. */
static void test_chunk_size_limit(void) {
  for (size_t step = 0; step <= 1; step++) {
    expect_error(CHUNKED_HEAD "41\r\n", 413, step);
    expect_error(CHUNKED_HEAD "ffffffffffffffff\r\n", 413, step);
    expect_error(CHUNKED_HEAD "41;a=\"b\"\r\n", 413, step);
    expect_error(CHUNKED_HEAD "20\r\n01234567890123456789012345678901\r\n21\r\n",
                 413, step);
  }
  expect_message(CHUNKED_HEAD "20\r\n01234567890123456789012345678901\r\n"
                 "20\r\n01234567890123456789012345678901\r\n0\r\n\r\n");
}

static void test_trailer_names(void) {
  for (size_t step = 0; step <= 1; step++) {
    expect_error(CHUNKED_HEAD "0\r\n: v\r\n\r\n", 400, step);
    expect_error(CHUNKED_HEAD "5\r\nhello\r\n0\r\nX: 1\r\n:v\r\n\r\n", 400, step);
  }
}

/* RFC 9110 section 10.1.1: 100-continue in HTTP/1.0 is ignored. */
static void test_expect(void) {
  const char *reqs[] = {
      "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
      "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
  };
  for (size_t i = 0; i < 2; i++) {
    parsed t;
    setup(&t);
    size_t pos = 0;
    CHECK_EQ_INT(mp_http1_execute(&t.h, reqs[i], strlen(reqs[i]), &pos), MP_H1_HEAD);
    CHECK_EQ_INT(t.msg.expect_continue, i == 0);
  }
}

/* before, 1100 bytes of pad, then after: refused with status. */
static void expect_padded(const char *before, char pad, const char *after,
                          int status) {
  char req[2048];
  size_t n = strlen(before);
  memcpy(req, before, n);
  memset(req + n, pad, 1100);
  snprintf(req + n + 1100, sizeof req - n - 1100, "%s", after);
  expect_error(req, status, 0);
  expect_error(req, status, 1);
}

static void test_rejections(void) {
  char big[2048];
  for (size_t step = 0; step <= 1; step++) {
    /* What llhttp 8.1.0 lets through. */
    expect_error("GET / HTTP/1.1\r\nHost: a\r\n\rX\r\n\r\n", 400, step);
    expect_error("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400, step);
    expect_error("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400, step);
    expect_error("GET / HTTP/1.1\r\nA: b\r\n\tc\r\n\r\n", 400, step);
    expect_error_n("GET / HTTP/1.1\r\nA: b\0c\r\n\r\n", 25, 400, step);
    /* Plain malformations. */
    expect_error("GET / HTTP/1.1\r\nBad Header\r\n\r\n", 400, step);
    expect_error("\x01\x02garbage\r\n\r\n", 400, step);
    expect_error("GET / HTTP/2.0\r\n\r\n", 505, step);
    expect_error("GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505, step);
    expect_error("GET /\r\n\r\n", 400, step); /* HTTP/0.9 request line */
    /* What llhttp leaves to the server. */
    expect_error("GET / HTTP/1.1\r\n\r\n", 400, step);
    expect_error("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, step);
    expect_error("GET / HTTP/1.1\r\nHost: a\r\nExpect: nothing\r\n\r\n", 417, step);
    expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, step);
    expect_error("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400, step);
    expect_error("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, step);
    expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, step);
    expect_error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, step);
    expect_error("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n", 400, step);
    expect_error("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, step);
    /* Limits. */
    expect_error("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 65\r\n\r\n", 413, step);
    expect_error("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "40\r\n0123456789012345678901234567890123456789012345678901234567890123\r\n"
                 "1\r\nx\r\n0\r\n\r\n", 413, step);
    expect_error("GET / HTTP/1.1\r\nA: 1\r\nA: 2\r\nA: 3\r\nA: 4\r\nA: 5\r\n"
                 "A: 6\r\nA: 7\r\nA: 8\r\nA: 9\r\n\r\n", 431, step);
  }
  /* A request line past the head limit is 414; a head past it, 431. */
  memset(big, 'a', sizeof big);
  memcpy(big, "GET /", 5);
  big[sizeof big - 1] = '\0';
  expect_error(big, 414, 0);
  memcpy(big, "GET / HTTP/1.1\r\nHost: x\r\nX: ", 28);
  expect_error(big, 431, 0);
  expect_error(big, 431, 100);
  /* Trailers and chunk extensions count against the head limit too, a
   * quoted extension value with ';' in it as well. */
  expect_padded(CHUNKED_HEAD "1;ext=", 'e', "\r\nx\r\n0\r\n\r\n", 431);
  expect_padded(CHUNKED_HEAD "1;ext=\"", ';', "\"\r\nx\r\n0\r\n\r\n", 431);
  expect_padded(CHUNKED_HEAD "0\r\nT: ", 't', "\r\n\r\n", 431);
}

static void test_limits_exact(void) {
  /* A body of exactly the limit passes. */
  char req[256];
  snprintf(req, sizeof req, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 64\r\n\r\n%064d", 0);
  parsed t;
  setup(&t);
  char *buf;
  size_t pos;
  CHECK_EQ_INT(feed(&t, req, 7, &buf, &pos), MP_H1_MESSAGE);
  CHECK_EQ_INT(t.body_len, 64);
  free(buf);
  /* Eight fields (the limit) pass. */
  setup(&t);
  CHECK_EQ_INT(feed(&t, "GET / HTTP/1.1\r\nHost: x\r\nA: 2\r\nA: 3\r\nA: 4\r\n"
                        "A: 5\r\nA: 6\r\nA: 7\r\nA: 8\r\n\r\n", 0, &buf, &pos),
               MP_H1_MESSAGE);
  CHECK_EQ_INT(t.msg.nfields, 8);
  free(buf);
}

/* The message may move within the caller's buffer between reads. */
static void test_moved(void) {
  const char *part1 = "GET /moved HTTP/1.1\r\nHo";
  const char *part2 = "st: x\r\n\r\n";
  parsed t;
  setup(&t);
  char buf[128];
  memcpy(buf + 10, part1, strlen(part1));
  t.h.msg_off = 10;
  size_t pos = 10;
  size_t end = 10 + strlen(part1);
  CHECK_EQ_INT(exec(&t, buf, end, &pos), MP_H1_NEED_MORE);
  memmove(buf, buf + 10, strlen(part1));
  mp_http1_moved(&t.h, 0);
  pos -= 10;
  memcpy(buf + pos, part2, strlen(part2));
  CHECK_EQ_INT(exec(&t, buf, pos + strlen(part2), &pos), MP_H1_MESSAGE);
  CHECK_SPAN(buf + t.msg.path.off, t.msg.path.len, "/moved");
  CHECK(field_value(&t, buf, "host") && strcmp(field_value(&t, buf, "host"), "x") == 0);
}

static void test_target_forms(void) {
  struct { const char *req; const char *path; const char *query; const char *authority; } cases[] = {
      {"GET http://example.test:8080/users/1?x=1 HTTP/1.1\r\nHost: e\r\n\r\n", "/users/1", "x=1", "example.test:8080"},
      {"GET https://example.test HTTP/1.1\r\nHost: e\r\n\r\n", "", "", "example.test"},
      {"GET /plain?a HTTP/1.1\r\nHost: e\r\n\r\n", "/plain", "a", ""},
      {"OPTIONS * HTTP/1.1\r\nHost: e\r\n\r\n", "*", "", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    parsed t;
    setup(&t);
    char *buf;
    size_t pos;
    CHECK_EQ_INT(feed(&t, cases[i].req, 0, &buf, &pos), MP_H1_MESSAGE);
    CHECK_SPAN(buf + t.msg.path.off, t.msg.path.len, cases[i].path);
    CHECK_SPAN(buf + t.msg.query.off, t.msg.query.len, cases[i].query);
    CHECK_SPAN(buf + t.msg.authority.off, t.msg.authority.len, cases[i].authority);
    free(buf);
  }
  for (size_t step = 0; step <= 1; step++) {
    /* The asterisk-form is for OPTIONS only (RFC 9112 section 3.2.4). */
    expect_error("GET * HTTP/1.1\r\nHost: e\r\n\r\n", 400, step);
    expect_error("POST * HTTP/1.1\r\nHost: e\r\nContent-Length: 0\r\n\r\n", 400, step);
    expect_error("OPTIONS *x HTTP/1.1\r\nHost: e\r\n\r\n", 400, step);
    expect_error("OPTIONS ** HTTP/1.1\r\nHost: e\r\n\r\n", 400, step);
    /* A tunnel is not an origin server's business. */
    expect_error("CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n",
                 501, step);
  }
}

static void test_value_whitespace(void) {
  parsed t;
  setup(&t);
  char *buf;
  size_t pos;
  CHECK_EQ_INT(feed(&t, "GET / HTTP/1.1\r\nHost: e\r\nX-A: \t spaced value \t \r\nX-B:   \r\n\r\n",
                    3, &buf, &pos), MP_H1_MESSAGE);
  CHECK(field_value(&t, buf, "x-a") && strcmp(field_value(&t, buf, "x-a"), "spaced value") == 0);
  CHECK(field_value(&t, buf, "x-b") && strcmp(field_value(&t, buf, "x-b"), "") == 0);
  free(buf);
}

static void test_heads_out(void) {
  mp_pool pool;
  mp_pool_init(&pool, 64, 4);
  mp_buf out = {.pool = &pool};
  mp_http1_head h = {
      .status = 404,
      .date = "Date: X\r\n",
      .date_len = 9,
      .content_type = "application/json",
      .content_length = 21,
      .extra = "A: b\r\n",
      .extra_len = 6,
      .connection = MP_H1_CONN_CLOSE,
  };
  CHECK_EQ_INT(mp_http1_write_head(&out, &h), 0);
  CHECK_SPAN(out.data, out.len,
             "HTTP/1.1 404 Not Found\r\nServer: moonport\r\nDate: X\r\n"
             "Content-Type: application/json\r\n"
             "Content-Length: 21\r\nA: b\r\nConnection: close\r\n\r\n");
  out.len = 0;
  h.status = 200;
  h.content_type = NULL;
  h.content_length = MP_H1_LENGTH_CHUNKED;
  h.extra_len = 0;
  h.connection = MP_H1_CONN_KEEPALIVE;
  CHECK_EQ_INT(mp_http1_write_head(&out, &h), 0);
  CHECK_SPAN(out.data, out.len,
             "HTTP/1.1 200 OK\r\nServer: moonport\r\nDate: X\r\n"
             "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n");

  /* The Server field: another name, none, or the handler's own. */
  out.len = 0;
  h.content_length = 0;
  h.connection = MP_H1_CONN_NONE;
  CHECK_EQ_INT(mp_http1_set_server("edge/2.1 (test)"), 0);
  CHECK_EQ_INT(mp_http1_write_head(&out, &h), 0);
  CHECK_SPAN(out.data, out.len,
             "HTTP/1.1 200 OK\r\nServer: edge/2.1 (test)\r\nDate: X\r\n"
             "Content-Length: 0\r\n\r\n");
  out.len = 0;
  h.own_server = true;
  h.extra = "Server: mine\r\n";
  h.extra_len = 14;
  CHECK_EQ_INT(mp_http1_write_head(&out, &h), 0);
  CHECK_SPAN(out.data, out.len,
             "HTTP/1.1 200 OK\r\nDate: X\r\nContent-Length: 0\r\n"
             "Server: mine\r\n\r\n");
  h.own_server = false;
  h.extra_len = 0;
  out.len = 0;
  CHECK_EQ_INT(mp_http1_set_server(NULL), 0);
  CHECK_EQ_INT(mp_http1_write_head(&out, &h), 0);
  CHECK_SPAN(out.data, out.len,
             "HTTP/1.1 200 OK\r\nDate: X\r\nContent-Length: 0\r\n\r\n");
  char longname[MP_H1_SERVER_MAX + 2];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  CHECK_EQ_INT(mp_http1_set_server(longname), MP_INVALID);
  CHECK_EQ_INT(mp_http1_set_server(""), MP_INVALID);
  CHECK_EQ_INT(mp_http1_set_server("a\x01b"), MP_INVALID);
  CHECK_EQ_INT(mp_http1_set_server("a\r\nX: y"), MP_INVALID);
  longname[MP_H1_SERVER_MAX] = '\0';
  CHECK_EQ_INT(mp_http1_set_server(longname), 0);
  CHECK_EQ_INT(mp_http1_set_server("moonport"), 0);
  out.len = 0;
  CHECK_EQ_INT(mp_http1_write_head(&out, &h), 0);
  CHECK_SPAN(out.data, out.len,
             "HTTP/1.1 200 OK\r\nServer: moonport\r\nDate: X\r\n"
             "Content-Length: 0\r\n\r\n");
  mp_buf_release(&out);
  CHECK_EQ_INT(pool.nused, 0);
  mp_pool_destroy(&pool);

  char date[40];
  size_t n = mp_http1_date_line(date, 784111777); /* RFC 9110's example */
  CHECK_SPAN(date, n, "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");

  char json[64];
  n = mp_str_json(json, sizeof json, "a\"b\\c\n\x01", 7);
  CHECK_SPAN(json, n, "\"a\\\"b\\\\c\\n\\u0001\"");
}

static void test_decoding(void) {
  char dst[64];
  size_t n = mp_str_unescape(dst, "a%20b+c%zz%4", 12, true);
  CHECK_SPAN(dst, n, "a b c%zz%4");
  n = mp_str_unescape(dst, "a+b%2B", 6, false);
  CHECK_SPAN(dst, n, "a+b+");
  const char *q = "x=1&q=a+b+c%C3%A9&flag&q=second&e=";
  long k = mp_http1_query_get(q, strlen(q), "q", 1, dst);
  CHECK_SPAN(dst, (size_t)k, "a b c\xc3\xa9");
  CHECK_EQ_INT(mp_http1_query_get(q, strlen(q), "flag", 4, dst), 0);
  CHECK_EQ_INT(mp_http1_query_get(q, strlen(q), "e", 1, dst), 0);
  CHECK_EQ_INT(mp_http1_query_get(q, strlen(q), "nope", 4, dst), -1);
  CHECK_EQ_INT(mp_http1_query_get("", 0, "q", 1, dst), -1);
  /* tchar (RFC 9110 section 5.6.2), byte by byte. */
  for (int c = 0; c < 256; c++) {
    char name = (char)c;
    bool tchar = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || (c != 0 && strchr("!#$%&'*+-.^_`|~", c));
    CHECK_EQ_INT(mp_http1_valid_name(&name, 1), tchar);
  }
  CHECK(mp_http1_valid_name("X-Custom_1", 10));
  CHECK(!mp_http1_valid_name("Bad Name", 8));
  CHECK(!mp_http1_valid_name("", 0));
  CHECK(mp_http1_valid_value("ok value", 8));
  CHECK(mp_http1_valid_value("tab\there \xc3\xa9", 11));
  CHECK(!mp_http1_valid_value("a\r\nb", 4));
  /* Every control byte but HTAB, and DEL. */
  for (int c = 0; c < 0x20; c++) {
    char v[3] = {'a', (char)c, 'b'};
    CHECK_EQ_INT(mp_http1_valid_value(v, 3), c == '\t');
  }
  CHECK(!mp_http1_valid_value("a\x7f", 2));
}

/* A request that breaks two rules gets the same answer however its bytes
 * arrive: the pre-scan refuses a byte only after the parser has seen the
 * bytes before it, and holds a CR back until the byte after it is in.
 * (Inputs the fuzz target spec/fuzz/fuzz_http1.c found answered by the
 * pre-scan when read at once and by llhttp when read in pieces.) */
static void test_error_independent_of_reads(void) {
  static const struct {
    const char *s;
    size_t len;
  } cases[] = {
      {"\n\x07\0", 3},                /* a bad method byte, then NUL */
      {"\r\nF\r\r\x03\n\0", 8},       /* a CR, then a bare CR */
      {"GET / HTTP/2.0\r\nX: \0\r\n\r\n", 24}, /* 505, then NUL */
      {"GET /a\x01" "b HTTP/1.1\r\nHost: x\r\n\r\n", 30}, /* bad target */
      {"GET / HTTP/1.1\r\nHost: x\r\nX-Y\r\r\n\r\n", 33},
      {"GET /ok\r\nHoT\r\0 /ok\r\n\r\n", 22}, /* no version, then a field */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int status0 = 0;
    const char *error0 = NULL;
    for (size_t step = 0; step <= 3; step++) {
      parsed t;
      setup(&t);
      char *buf;
      size_t pos;
      int rc = feedn(&t, cases[i].s, cases[i].len, step, &buf, &pos);
      CHECK_EQ_INT(rc, MP_H1_ERROR);
      if (step == 0) {
        status0 = t.h.status;
        error0 = t.h.error;
      } else {
        CHECK_EQ_INT(t.h.status, status0);
        CHECK(t.h.error != NULL && error0 != NULL &&
              strcmp(t.h.error, error0) == 0);
      }
      free(buf);
    }
  }
  /* Chunk extensions past the limit, then a byte outside their grammar:
   * 431 whatever the reads, as the bytes before the bad one count first. */
  char req[2048];
  int n = snprintf(req, sizeof req,
                   "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
                   "\r\n\r\n1;a=%01100d@\r\nx\r\n0\r\n\r\n", 0);
  for (size_t step = 0; step <= 64; step += 16) {
    parsed t;
    setup(&t);
    char *buf;
    size_t pos;
    CHECK_EQ_INT(feedn(&t, req, (size_t)n, step, &buf, &pos), MP_H1_ERROR);
    CHECK_EQ_INT(t.h.status, 431);
    free(buf);
  }
}

int main(void) {
  test_whole_and_every_step();
  test_every_split();
  test_head_first();
  test_pipelined();
  test_keep_alive_rules();
  test_chunked();
  test_chunk_extensions();
  test_chunk_size_limit();
  test_trailer_names();
  test_host();
  test_no_version_at_once();
  test_expect();
  test_rejections();
  test_limits_exact();
  test_moved();
  test_target_forms();
  test_trailers_and_extensions();
  test_value_whitespace();
  test_heads_out();
  test_decoding();
  test_error_independent_of_reads();
  return check_report("http1");
}
