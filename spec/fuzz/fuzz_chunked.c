/*
 * libFuzzer target: the chunked decoders. The input is a chunked body
 * (RFC 9112 section 7.1), given after a head that declares it to both
 * parsers of server/http/: the request parser (http1.c, whose chunk-size
 * lines and extensions the core reads itself) and the client's response
 * parser (h1resp.c, llhttp's alone), each in reads of sizes drawn from
 * the input's hash, from heap blocks of exactly the bytes held.
 *
 * Invariants:
 * - a parser that completes the message has consumed a prefix of the
 *   input that is a whole chunked body by a lenient reading of the grammar
 *   (any extension bytes on a CRLF-ended size line, trailer lines ended by
 *   CRLF or a bare LF), and has
 *   decoded the same bytes that reading does;
 * - when both parsers complete, they agree on where the body ends;
 * - body bytes come only from the bytes of the current call.
 */
#include "fuzz.h"

#include <stdbool.h>

#include "h1resp.h"
#include "http1.h"

#define MAX_HEAD 1024 /* also bounds extensions and trailers together */
#define MAX_BODY (1 << 20)

static const char REQ_HEAD[] =
    "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
static const char RESP_HEAD[] =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

/* A lenient decoder: 1 and the body's length in *used for a whole body,
 * 0 when more bytes are needed, -1 for what no reading accepts. */
static int reference(const uint8_t *d, size_t n, fuzz_log *body, size_t *used) {
  size_t i = 0;
  for (;;) {
    uint64_t size = 0;
    size_t digits = 0;
    while (i < n) {
      int v = d[i] >= '0' && d[i] <= '9'   ? d[i] - '0'
              : d[i] >= 'a' && d[i] <= 'f' ? d[i] - 'a' + 10
              : d[i] >= 'A' && d[i] <= 'F' ? d[i] - 'A' + 10
                                           : -1;
      if (v < 0) break;
      if (size > (UINT64_MAX >> 4)) return -1;
      size = size * 16 + (uint64_t)v;
      digits++;
      i++;
    }
    if (i == n) return 0;
    if (digits == 0) return -1;
    /* Extensions: anything up to the line's CRLF. */
    while (i < n && d[i] != '\r' && d[i] != '\n') i++;
    if (i + 1 >= n) return 0;
    if (d[i] != '\r' || d[i + 1] != '\n') return -1;
    i += 2;
    if (size == 0) break;
    if (n - i < size + 2) return 0;
    fuzz_put(body, d + i, (size_t)size);
    i += (size_t)size;
    if (d[i] != '\r' || d[i + 1] != '\n') return -1;
    i += 2;
  }
  /* Trailer fields, each on a line, then an empty line. As in a head, a
   * line may end in a bare LF (RFC 9112 section 2.2), not a bare CR. */
  for (;;) {
    if (i < n && d[i] == '\n') {
      *used = i + 1;
      return 1;
    }
    if (i + 1 < n && d[i] == '\r' && d[i + 1] == '\n') {
      *used = i + 2;
      return 1;
    }
    while (i < n && d[i] != '\r' && d[i] != '\n') i++;
    if (i == n) return 0;
    if (d[i] == '\n') {
      i++;
      continue;
    }
    if (i + 1 >= n) return 0;
    if (d[i + 1] != '\n') return -1;
    i += 2;
  }
}

typedef struct req_side {
  char *buf;
  size_t len;
  size_t lo;
  fuzz_log body;
} req_side;

static int req_body(void *ud, const char *p, size_t n) {
  req_side *s = ud;
  FUZZ_CHECK(p >= s->buf + s->lo && p + n <= s->buf + s->len,
             "body bytes outside the call's input");
  fuzz_put(&s->body, p, n);
  return 0;
}

static void grow(char **buf, size_t *len, const void *p, size_t n) {
  char *b = malloc(*len + n);
  FUZZ_CHECK(b != NULL, "out of memory");
  if (*len > 0) memcpy(b, *buf, *len);
  memcpy(b + *len, p, n);
  free(*buf);
  *buf = b;
  *len += n;
}

/* The request parser: 1 and the body bytes consumed in *used when the
 * message completes, 0 when it wants more, -1 on an error. */
static int run_request(const uint8_t *data, size_t size, fuzz_rng *rng,
                       fuzz_log *body, size_t *used) {
  static const mp_http1_limits limits = {
      .max_header_size = MAX_HEAD, .max_body_size = MAX_BODY, .max_headers = 8};
  mp_hfield fields[8];
  mp_http1_msg msg = {.fields = fields};
  req_side s = {0};
  mp_http1 h;
  mp_http1_init(&h, &limits, req_body, NULL, &s);
  mp_http1_attach(&h, &msg);
  grow(&s.buf, &s.len, REQ_HEAD, sizeof REQ_HEAD - 1);
  size_t pos = 0, off = 0, head = sizeof REQ_HEAD - 1;
  int result = 0;
  for (;;) {
    s.lo = pos;
    int rc = mp_http1_execute(&h, s.buf, s.len, &pos);
    FUZZ_CHECK(pos >= s.lo && pos <= s.len, "pos moved backwards");
    if (rc == MP_H1_HEAD) {
      FUZZ_CHECK(msg.chunked && pos == head, "the head is not as sent");
      continue;
    }
    if (rc == MP_H1_MESSAGE) {
      FUZZ_CHECK(msg.body_len == s.body.len, "body_len %llu for %zu bytes",
                 (unsigned long long)msg.body_len, s.body.len);
      *used = pos - head;
      result = 1;
      break;
    }
    if (rc == MP_H1_ERROR) {
      FUZZ_CHECK(h.status == 400 || h.status == 413 || h.status == 431,
                 "status %d for a chunked body", h.status);
      result = -1;
      break;
    }
    FUZZ_CHECK(rc == MP_H1_NEED_MORE && pos == s.len, "execute answered %d",
               rc);
    if (off == size) break;
    size_t n = fuzz_split(rng);
    if (n > size - off) n = size - off;
    grow(&s.buf, &s.len, data + off, n);
    off += n;
  }
  fuzz_put(body, s.body.p, s.body.len);
  fuzz_log_free(&s.body);
  free(s.buf);
  return result;
}

/* The response parser, the same way. */
static int run_response(const uint8_t *data, size_t size, fuzz_rng *rng,
                        fuzz_log *body, size_t *used) {
  mp_h1resp *r = malloc(sizeof *r);
  FUZZ_CHECK(r != NULL, "out of memory");
  mp_h1resp_init(r, MAX_HEAD, 8);
  mp_h1resp_start(r, false);
  char *buf = NULL;
  size_t len = 0, pos = 0, off = 0, head = sizeof RESP_HEAD - 1;
  grow(&buf, &len, RESP_HEAD, head);
  int result = 0;
  for (;;) {
    size_t before = pos;
    int rc = mp_h1resp_feed(r, buf, len, &pos);
    FUZZ_CHECK(pos >= before && pos <= len, "pos moved backwards");
    if (rc == MP_HTTPC_HEAD) {
      FUZZ_CHECK(r->chunked && pos == head, "the head is not as sent");
      continue;
    }
    if (rc == MP_HTTPC_BODY) {
      FUZZ_CHECK(r->body_len == 0 || (r->body >= buf + before &&
                                      r->body + r->body_len <= buf + pos),
                 "a body piece outside the bytes just consumed");
      fuzz_put(body, r->body, r->body_len);
      continue;
    }
    if (rc == MP_HTTPC_DONE) {
      *used = pos - head;
      result = 1;
      break;
    }
    if (rc == MP_HTTPC_ERROR) {
      result = -1;
      break;
    }
    FUZZ_CHECK(rc == MP_HTTPC_MORE && pos == len, "feed answered %d", rc);
    if (off == size) break;
    size_t n = fuzz_split(rng);
    if (n > size - off) n = size - off;
    grow(&buf, &len, data + off, n);
    off += n;
  }
  free(buf);
  free(r);
  return result;
}

static void check_against(const char *who, int rc, const fuzz_log *body,
                          size_t used, const uint8_t *data, size_t size) {
  if (rc != 1) return;
  fuzz_log want = {0};
  size_t want_used = 0;
  int ref = reference(data, used, &want, &want_used);
  FUZZ_CHECK(ref == 1 && want_used == used,
             "the %s parser took %zu of %zu bytes as a whole body; the "
             "reference reading says %d (%zu bytes)",
             who, used, size, ref, want_used);
  FUZZ_CHECK(want.len == body->len &&
                 (want.len == 0 || memcmp(want.p, body->p, want.len) == 0),
             "the %s parser decoded %zu bytes, the reference %zu", who,
             body->len, want.len);
  fuzz_log_free(&want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_rng rng = fuzz_rng_of(data, size);
  fuzz_log qbody = {0}, rbody = {0};
  size_t qused = 0, rused = 0;
  int q = run_request(data, size, &rng, &qbody, &qused);
  int r = run_response(data, size, &rng, &rbody, &rused);
  check_against("request", q, &qbody, qused, data, size);
  check_against("response", r, &rbody, rused, data, size);
  if (q == 1 && r == 1)
    FUZZ_CHECK(qused == rused, "the request body ends at %zu, the response "
               "body at %zu", qused, rused);
  fuzz_log_free(&qbody);
  fuzz_log_free(&rbody);
  return 0;
}
