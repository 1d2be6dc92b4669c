/*
 * libFuzzer target: the HTTP client's response parser
 * (server/http/h1resp.c) as moonport.http drives it (lua/moonport/http.lua):
 * one buffer holding the current response from its first byte, reads
 * appended while the head comes, the consumed bytes dropped once the
 * head is read and the parser wants more body, the next response
 * started after the bytes of a whole one, and the end of the input
 * taken as the connection closing (mp_h1resp_eof).
 *
 * The input is the bytes a server sends. Whether each response answers a
 * HEAD request is drawn from the input's hash. The bytes are read twice,
 * in reads as large as the input and in reads of drawn sizes, each time
 * from a heap block of exactly the bytes held, so AddressSanitizer
 * catches a read past them. Invariants:
 * - the parser never moves backwards, says MORE only with every byte
 *   consumed (but a head's last CR, held for the byte after it), hands out body pieces only from the bytes not yet consumed,
 *   and keeps the reason and the fields within the final head;
 * - a final head is never 1xx; a response to HEAD, a 204 and a 304 have
 *   no body, one with Content-Length has exactly that many bytes, and
 *   Content-Length and chunked never come together;
 * - both readings give the same transcript (but see fuzz_same_transcript:
 *   a limit on a span against llhttp's refusal of a byte in that span) (heads, bodies, errors, the
 *   end): how the bytes were split never changes what was parsed.
 */
#include "fuzz.h"

#include <stdbool.h>

#include "h1resp.h"

#define MAX_HEAD 2048
#define MAX_FIELDS 32
#define MAX_RESPONSES 64

typedef struct client {
  mp_h1resp r;
  char *buf; /* exactly len bytes: the current response from its first byte */
  size_t len, pos;
  fuzz_rng kind; /* draws head_only, the same way in both readings */
  bool head_only;
  bool head_seen;
  bool over; /* an error, or the connection cannot be reused */
  unsigned responses;
  fuzz_log body;
  fuzz_log *log;
} client;

static void replace(client *c, size_t from) {
  char *b = fuzz_exact(c->buf + from, c->len - from);
  free(c->buf);
  c->buf = b;
  c->len -= from;
}

static void append(client *c, const uint8_t *p, size_t n) {
  char *b = malloc(c->len + n);
  FUZZ_CHECK(b != NULL, "out of memory");
  if (c->len > 0) memcpy(b, c->buf, c->len);
  memcpy(b + c->len, p, n);
  free(c->buf);
  c->buf = b;
  c->len += n;
}

static void start(client *c) {
  c->head_only = (fuzz_next(&c->kind) & 3) == 0;
  c->head_seen = false;
  c->body.len = 0;
  mp_h1resp_start(&c->r, c->head_only);
}

static void check_span(const client *c, mp_span s, const char *what) {
  FUZZ_CHECK(c->r.head_start + (uint64_t)s.off + s.len <= c->pos,
             "%s span [%u, +%u) past the head", what, s.off, s.len);
}

static void put_span(fuzz_log *l, const char *base, mp_span s) {
  fuzz_printf(l, "%u:", s.len);
  fuzz_put(l, base + s.off, s.len);
  fuzz_put(l, "|", 1);
}

static void on_head(client *c) {
  const mp_h1resp *r = &c->r;
  FUZZ_CHECK(!c->head_seen, "two final heads");
  c->head_seen = true;
  FUZZ_CHECK(r->status >= 200 && r->status <= 999, "final status %d",
             r->status);
  FUZZ_CHECK(r->nfields <= MAX_FIELDS, "%u fields", r->nfields);
  FUZZ_CHECK(!(r->chunked && r->content_length >= 0),
             "chunked with Content-Length %lld", (long long)r->content_length);
  check_span(c, r->reason, "reason");
  const char *base = c->buf + r->head_start;
  fuzz_printf(c->log, "HEAD %d ka%d ch%d cl%lld close%d ", r->status,
              r->keep_alive, r->chunked, (long long)r->content_length,
              r->to_close);
  put_span(c->log, base, r->reason);
  for (unsigned i = 0; i < r->nfields; i++) {
    check_span(c, r->fields[i].name, "field name");
    check_span(c, r->fields[i].value, "field value");
    put_span(c->log, base, r->fields[i].name);
    put_span(c->log, base, r->fields[i].value);
  }
  fuzz_put(c->log, "\n", 1);
}

static void on_done(client *c) {
  const mp_h1resp *r = &c->r;
  FUZZ_CHECK(c->head_seen, "a response done without a head");
  if (c->head_only || r->status == 204 || r->status == 304)
    FUZZ_CHECK(c->body.len == 0, "%zu body bytes where none may be",
               c->body.len);
  else if (r->content_length >= 0)
    FUZZ_CHECK(c->body.len == (uint64_t)r->content_length,
               "%zu body bytes for Content-Length %lld", c->body.len,
               (long long)r->content_length);
  fuzz_printf(c->log, "BODY %zu:", c->body.len);
  fuzz_put(c->log, c->body.p, c->body.len);
  fuzz_printf(c->log, "\nDONE ka%d\n", r->keep_alive);
}

/* Runs the parser over what the buffer holds, until it needs more. */
static void process(client *c) {
  size_t bound = 4 * c->len + 16; /* the buffer shrinks as responses end */
  for (size_t iter = 0; !c->over; iter++) {
    FUZZ_CHECK(iter < bound, "the parser does not progress");
    size_t before = c->pos;
    int rc = mp_h1resp_feed(&c->r, c->buf, c->len, &c->pos);
    FUZZ_CHECK(c->pos >= before && c->pos <= c->len,
               "pos went from %zu to %zu of %zu", before, c->pos, c->len);
    switch (rc) {
      case MP_HTTPC_MORE:
        /* All consumed, but a head's CR, which waits for the next byte. */
        FUZZ_CHECK(c->pos == c->len ||
                       (c->pos + 1 == c->len && c->buf[c->pos] == '\r' &&
                        !c->head_seen),
                   "MORE with %zu bytes left", c->len - c->pos);
        /* moonport.http keeps only the unparsed bytes once the head is in. */
        if (c->head_seen) {
          replace(c, c->pos);
          c->pos = 0;
        }
        return;
      case MP_HTTPC_HEAD:
        on_head(c);
        break;
      case MP_HTTPC_BODY:
        FUZZ_CHECK(c->head_seen, "body before the head");
        FUZZ_CHECK(c->r.body_len == 0 ||
                       (c->r.body >= c->buf + before &&
                        c->r.body + c->r.body_len <= c->buf + c->pos),
                   "a body piece outside the bytes just consumed");
        fuzz_put(&c->body, c->r.body, c->r.body_len);
        break;
      case MP_HTTPC_DONE:
        on_done(c);
        if (!c->r.keep_alive || ++c->responses == MAX_RESPONSES) {
          c->over = true;
          return;
        }
        replace(c, c->pos);
        c->pos = 0;
        start(c);
        break;
      case MP_HTTPC_ERROR:
        FUZZ_CHECK(c->r.error != NULL && c->r.error[0] != '\0',
                   "an error without a message");
        fuzz_printf(c->log, "ERROR %s\n", c->r.error);
        c->over = true;
        return;
      default:
        FUZZ_CHECK(0, "feed answered %d", rc);
    }
  }
}

static void run(client *c, const uint8_t *data, size_t size, fuzz_rng *rng) {
  mp_h1resp_init(&c->r, MAX_HEAD, MAX_FIELDS);
  c->kind = fuzz_rng_of(data, size);
  c->kind.s ^= 0x5bd1e995;
  start(c);
  size_t off = 0;
  while (off < size && !c->over) {
    size_t n = rng ? fuzz_split(rng) : size;
    if (n > size - off) n = size - off;
    append(c, data + off, n);
    off += n;
    process(c);
  }
  if (c->over) return;
  int rc = mp_h1resp_eof(&c->r);
  FUZZ_CHECK(rc == MP_HTTPC_DONE || rc == MP_HTTPC_ERROR, "eof answered %d",
             rc);
  if (rc == MP_HTTPC_DONE) {
    FUZZ_CHECK(c->head_seen && c->r.to_close,
               "done at the close without a body that runs to it");
    on_done(c);
  } else {
    fuzz_printf(c->log, "CLOSED head%d\n", c->head_seen);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_log whole = {0}, split = {0};
  client *a = calloc(1, sizeof *a);
  client *b = calloc(1, sizeof *b);
  FUZZ_CHECK(a != NULL && b != NULL, "out of memory");
  a->log = &whole;
  run(a, data, size, NULL);
  fuzz_rng rng = fuzz_rng_of(data, size);
  b->log = &split;
  run(b, data, size, &rng);
  static const char *const span_limits[] = {"too many header fields", "trailer fields or chunk extensions too large", NULL};
  FUZZ_CHECK(fuzz_same_transcript(&whole, &split, span_limits),
             "read whole and in pieces, the transcripts differ at byte %zu:\n"
             "--- whole\n%s--- in pieces\n%s",
             fuzz_diff_at(&whole, &split), whole.p, split.p);
  client *cs[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    free(cs[i]->buf);
    fuzz_log_free(&cs[i]->body);
    free(cs[i]);
  }
  fuzz_log_free(&whole);
  fuzz_log_free(&split);
  return 0;
}
