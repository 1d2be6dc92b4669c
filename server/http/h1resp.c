/*
 * HTTP/1.1 responses as bytes (see h1resp.h for the contract).
 *
 * Invariants:
 * - While a head is parsed, every byte llhttp sees has passed the shared
 *   pre-scan, and llhttp is given no byte past the head's blank line until
 *   the pre-scan has seen it. Body, chunk framing and trailers are
 *   llhttp's alone.
 * - llhttp is paused at each point the caller hears of: in
 *   on_headers_complete (a final head), in on_body (one piece of body) and
 *   in on_message_complete (the end). The paused position is where *pos
 *   stands, so the caller's view and llhttp's agree; the next feed
 *   resumes llhttp first and runs it even with no new bytes, since a
 *   response without a body ends without needing one.
 * - An interim (1xx) response pauses only at its end. The parser then
 *   starts over on the next head in the same buffer, a fresh llhttp
 *   included, and head_start moves there: spans are relative to it.
 * - A response has no body when the request was HEAD or its status is 1xx,
 *   204 or 304: llhttp is told so with F_SKIPBODY before it decides.
 * - Whether the connection stays open is decided from the final head
 *   alone; llhttp's own decision does not matter, since every response
 *   starts on a fresh llhttp.
 */
#include "h1resp.h"

#include "str.h"

#include <string.h>

/* h->state */
enum { ST_HEAD, ST_BODY, ST_DONE, ST_FAILED };

/* h->event: why llhttp paused. */
enum { EV_NONE, EV_HEAD, EV_BODY, EV_INTERIM, EV_DONE };

static mp_h1resp *from_parser(llhttp_t *p) { return (mp_h1resp *)p->data; }

static int fail(mp_h1resp *h, const char *error) {
  h->error = error;
  return -1;
}

static uint32_t offset_of(mp_h1resp *h, const char *at) {
  return (uint32_t)(at - (h->base + h->head_start));
}

static void span_grow(mp_h1resp *h, mp_span *s, const char *at, size_t n) {
  if (s->len == 0) s->off = offset_of(h, at);
  s->len += (uint32_t)n;
}

static bool field_is(mp_h1resp *h, const mp_hfield *f, const char *name,
                     size_t len) {
  return f->name.len == len &&
         mp_str_ieq(h->base + h->head_start + f->name.off, name, len);
}

static int on_message_begin(llhttp_t *p) {
  mp_h1resp *h = from_parser(p);
  h->nfields = 0;
  h->reason = (mp_span){0, 0};
  h->in_value = h->interim = h->saw_cl = h->saw_te = false;
  h->content_length = -1;
  return 0;
}

static int on_status(llhttp_t *p, const char *at, size_t n) {
  mp_h1resp *h = from_parser(p);
  span_grow(h, &h->reason, at, n);
  return 0;
}

/* Chunk extensions and trailer fields are not kept, but together they
 * may not pass the head limit. */
static int extra_bytes(mp_h1resp *h, size_t n) {
  h->extra += n;
  if (h->extra > h->max_head)
    return fail(h, "trailer fields or chunk extensions too large");
  return 0;
}

static int on_extension(llhttp_t *p, const char *at, size_t n) {
  (void)at;
  return extra_bytes(from_parser(p), n);
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  mp_h1resp *h = from_parser(p);
  if (h->state != ST_HEAD) {
    h->trailer_name += (uint32_t)n;
    return extra_bytes(h, n);
  }
  if (h->in_value || h->nfields == 0) {
    if (h->nfields == h->max_fields) return fail(h, "too many header fields");
    memset(&h->fields[h->nfields++], 0, sizeof(mp_hfield));
    h->in_value = false;
  }
  span_grow(h, &h->fields[h->nfields - 1].name, at, n);
  return 0;
}

static int on_header_field_complete(llhttp_t *p) {
  mp_h1resp *h = from_parser(p);
  /* llhttp 8.1 lets ": value" through; a field name is a token. */
  if (h->state != ST_HEAD) {
    if (h->trailer_name == 0) return fail(h, "empty trailer field name");
    h->trailer_name = 0;
    return 0;
  }
  if (h->nfields == 0 || h->fields[h->nfields - 1].name.len == 0)
    return fail(h, "empty header field name");
  mp_hfield *f = &h->fields[h->nfields - 1];
  /* Noted before llhttp reads the value, since it refuses a second
   * Content-Length there, in words that do not say which case it is. */
  if (field_is(h, f, "content-length", 14)) h->saw_cl = true;
  if (field_is(h, f, "transfer-encoding", 17)) h->saw_te = true;
  /* A value may be empty, in which case on_header_value never runs: open
   * it here so the next name starts a new field. */
  h->in_value = true;
  f->value = (mp_span){0, 0};
  return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  mp_h1resp *h = from_parser(p);
  if (h->state != ST_HEAD) return extra_bytes(h, n);
  span_grow(h, &h->fields[h->nfields - 1].value, at, n);
  return 0;
}

/* llhttp drops the whitespace before a value but not after it. */
static int on_header_value_complete(llhttp_t *p) {
  mp_h1resp *h = from_parser(p);
  if (h->state != ST_HEAD) return 0;
  mp_span *v = &h->fields[h->nfields - 1].value;
  const char *start = h->base + h->head_start + v->off;
  while (v->len > 0 && (start[v->len - 1] == ' ' || start[v->len - 1] == '\t'))
    v->len--;
  return 0;
}

/* Framing and the connection, from the final head's fields: what llhttp
 * 8.1.0 leaves to its user, or lets through in a response. */
static int check_fields(mp_h1resp *h, llhttp_t *p) {
  const char *base = h->base + h->head_start;
  unsigned options = 0;
  bool te = false, other_coding = false, last_chunked = false;
  for (unsigned i = 0; i < h->nfields; i++) {
    const mp_hfield *f = &h->fields[i];
    const char *v = base + f->value.off;
    if (field_is(h, f, "transfer-encoding", 17)) {
      te = true;
      mp_h1_read_codings(v, f->value.len, &other_coding, &last_chunked);
    } else if (field_is(h, f, "connection", 10)) {
      options |= mp_h1_read_connection(v, f->value.len);
    }
  }
  /* Content-Length with Transfer-Encoding is llhttp's to refuse
   * (llhttp_failed words it). */
  if (te && p->http_minor == 0)
    return fail(h, "Transfer-Encoding in an HTTP/1.0 response");
  /* RFC 9112 section 6.3 would read such a body to the close; a request
   * framed so is refused, and so is this. */
  if (te && !last_chunked)
    return fail(h, "transfer coding list does not end in chunked");
  if (te && other_coding) return fail(h, "unsupported transfer coding");
  h->keep_alive = !(options & MP_H1_OPT_CLOSE) &&
                  (p->http_minor >= 1 || (options & MP_H1_OPT_KEEP_ALIVE));
  return 0;
}

static int on_headers_complete(llhttp_t *p) {
  mp_h1resp *h = from_parser(p);
  h->status = p->status_code;
  if (p->http_major != 1 || p->http_minor > 1)
    return fail(h, "unsupported HTTP version");
  /* llhttp 8.1.0 takes a status of one or two digits ("HTTP/1.1 50"); a
   * status-code is three, 1xx to 5xx and beyond (RFC 9110 section 15). */
  if (h->status < 100) return fail(h, "invalid status code");
  if (h->status == 101) return fail(h, "unexpected 101");
  if (h->status >= 100 && h->status < 200) {
    /* Skipped at its end (on_message_complete); it has no body. */
    h->interim = true;
    p->flags |= F_SKIPBODY;
    return 0;
  }
  if (check_fields(h, p) != 0) return -1;
  bool no_body = h->head_only || h->status == 204 || h->status == 304;
  if (no_body) p->flags |= F_SKIPBODY;
  h->chunked = (p->flags & F_CHUNKED) != 0;
  if (p->flags & F_CONTENT_LENGTH)
    h->content_length = (int64_t)p->content_length;
  h->to_close = !no_body && !h->chunked && h->content_length < 0;
  if (h->to_close) h->keep_alive = false;
  h->state = ST_BODY;
  h->event = EV_HEAD;
  return HPE_PAUSED;
}

static int on_chunk_header(llhttp_t *p) {
  from_parser(p)->last_chunk = p->content_length == 0;
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  mp_h1resp *h = from_parser(p);
  /* llhttp flushes an open body span at the end of every input, also of
   * an empty one after a resume: nothing to hand out. */
  if (n == 0) return 0;
  h->body = at;
  h->body_len = n;
  h->event = EV_BODY;
  return HPE_PAUSED;
}

static int on_message_complete(llhttp_t *p) {
  mp_h1resp *h = from_parser(p);
  h->event = h->interim ? EV_INTERIM : EV_DONE;
  return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_status = on_status,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_chunk_extension_name = on_extension,
    .on_chunk_extension_value = on_extension,
    .on_chunk_header = on_chunk_header,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* A head starts at offset off of the buffer: a fresh llhttp and pre-scan. */
static void start_head(mp_h1resp *h, size_t off) {
  llhttp_init(&h->parser, HTTP_RESPONSE, &settings);
  h->parser.data = h;
  mp_h1scan_start(&h->scan);
  h->state = ST_HEAD;
  h->paused = false;
  h->head_start = (uint32_t)off;
}

void mp_h1resp_init(mp_h1resp *h, size_t max_head, unsigned max_fields) {
  memset(h, 0, offsetof(mp_h1resp, fields));
  h->max_head = max_head;
  h->max_fields =
      max_fields < MP_HTTPC_MAX_FIELDS ? max_fields : MP_HTTPC_MAX_FIELDS;
  mp_h1resp_start(h, false);
}

void mp_h1resp_start(mp_h1resp *h, bool head_only) {
  start_head(h, 0);
  h->head_only = head_only;
  h->event = EV_NONE;
  h->keep_alive = h->chunked = h->to_close = h->last_chunk = false;
  h->trailer_name = 0;
  h->status = 0;
  h->content_length = -1;
  h->extra = 0;
  h->body = NULL;
  h->body_len = 0;
  h->error = NULL;
  h->reason = (mp_span){0, 0};
  h->nfields = 0;
}

static int failed(mp_h1resp *h, const char *error) {
  if (h->error == NULL) h->error = error;
  h->state = ST_FAILED;
  return MP_HTTPC_ERROR;
}

/* Words for an llhttp failure our callbacks did not word. */
static int llhttp_failed(mp_h1resp *h, llhttp_errno_t e) {
  if (h->error != NULL) return failed(h, NULL);
  if (e == HPE_UNEXPECTED_CONTENT_LENGTH)
    return failed(h, h->saw_te ? "Content-Length and Transfer-Encoding"
                               : "conflicting Content-Length");
  if (e == HPE_INVALID_TRANSFER_ENCODING && h->saw_cl)
    return failed(h, "Content-Length and Transfer-Encoding");
  if (e == HPE_INVALID_VERSION) return failed(h, "unsupported HTTP version");
  if (e == HPE_INVALID_CONTENT_LENGTH)
    return failed(h, "invalid Content-Length");
  if (h->state == ST_BODY && h->chunked) return failed(h, "bad chunk");
  return failed(h, "invalid response");
}

/* Runs the pre-scan on head bytes: how many of the n at p belong to the
 * head, or -1 after recording the error. */
static long scan_head(mp_h1resp *h, const char *p, size_t n) {
  long k = mp_h1scan_head(&h->scan, p, n, h->max_head);
  switch (k) {
    case MP_H1SCAN_NUL: return fail(h, "NUL byte in response head");
    case MP_H1SCAN_BARE_CR: return fail(h, "bare CR in response head");
    case MP_H1SCAN_OBS_FOLD:
      return fail(h, "obsolete line folding in response head");
    case MP_H1SCAN_TOO_LARGE: return fail(h, "response head too large");
  }
  return k;
}

int mp_h1resp_feed(mp_h1resp *h, const char *buf, size_t len, size_t *pos) {
  if (h->state == ST_FAILED) return MP_HTTPC_ERROR;
  if (h->state == ST_DONE) return MP_HTTPC_DONE;
  h->base = buf;
  for (;;) {
    bool resumed = h->paused;
    if (resumed) {
      llhttp_resume(&h->parser);
      h->paused = false;
    }
    if (*pos >= len && !resumed) return MP_HTTPC_MORE;
    size_t n = len - *pos;
    bool in_head = h->state == ST_HEAD;
    if (in_head && n > 0) {
      long k = scan_head(h, buf + *pos, n);
      if (k < 0) return failed(h, NULL);
      if (k == 0) return MP_HTTPC_MORE; /* a CR held back (h1scan.h) */
      n = (size_t)k;
    }
    h->event = EV_NONE;
    llhttp_errno_t e = llhttp_execute(&h->parser, buf + *pos, n);
    if (e == HPE_OK) {
      *pos += n;
      /* The pre-scan saw the head end and llhttp did not: they read line
       * ends alike, so this cannot happen, but llhttp must never be given
       * head bytes the pre-scan has not passed. */
      if (in_head && mp_h1scan_done(&h->scan))
        return failed(h, "invalid response");
      continue;
    }
    if (e != HPE_PAUSED) return llhttp_failed(h, e);
    *pos = (size_t)(llhttp_get_error_pos(&h->parser) - buf);
    h->paused = true;
    switch (h->event) {
      case EV_HEAD: return MP_HTTPC_HEAD;
      case EV_BODY: return MP_HTTPC_BODY;
      case EV_DONE: h->state = ST_DONE; return MP_HTTPC_DONE;
      case EV_INTERIM: start_head(h, *pos); break;
      default: return failed(h, "invalid response");
    }
  }
}

int mp_h1resp_eof(mp_h1resp *h) {
  if (h->state == ST_DONE) return MP_HTTPC_DONE;
  if (h->state == ST_BODY && h->to_close) {
    h->state = ST_DONE;
    return MP_HTTPC_DONE;
  }
  return failed(h, "closed");
}
