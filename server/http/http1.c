/*
 * HTTP/1.1 as bytes (see http1.h for the contract).
 *
 * Invariants:
 * - While a head is being parsed, every byte llhttp sees has first passed
 *   the pre-scan, and llhttp is never given a byte past the head's final LF
 *   until the pre-scan has seen that blank line. Body bytes are not scanned.
 * - Spans are offsets from h->msg_off. llhttp flushes a span that is cut by
 *   the end of its input by calling back with the part it has, and starts a
 *   new piece at the next execute; pieces of one span are adjacent in the
 *   caller's buffer, so a span grows by its pieces' lengths.
 * - After MP_H1_MESSAGE llhttp is paused and h->state is MP_H1_DONE until
 *   mp_http1_next().
 * - llhttp never sees a chunk extension. While h->chunk_line is set, llhttp
 *   stands at a chunk-size line: the core gives it the size's hex digits,
 *   reads the extensions itself (everything from the first ';' or blank
 *   after them up to the CR), and hands llhttp the line's end. llhttp
 *   pauses after each chunk but the last, so the core knows where the next
 *   size line starts.
 * - Whether the connection stays open is decided from the head alone, and
 *   llhttp is told the same before it decides for itself after the message,
 *   so both go on to a next message, or neither does.
 */
#define _GNU_SOURCE /* memmem */
#include "http1.h"

#include "errors.h"
#include "h1scan.h"
#include "str.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

/* Positions within a chunk-size line (RFC 9112 section 7.1.1):
 *   chunk-size *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ) CRLF
 * where ext-val is a token or a quoted-string. */
enum {
  CL_NONE,        /* not in a size line: llhttp reads on */
  CL_SIZE,        /* in the hex digits, which llhttp reads */
  CL_BWS,         /* blanks after the size or a value: ';' must follow */
  CL_NAME_START,  /* after ';' */
  CL_NAME,
  CL_AFTER_NAME,  /* blanks after a name: '=' or ';' must follow */
  CL_VALUE_START, /* after '=' */
  CL_TOKEN,
  CL_QUOTED,
  CL_QUOTED_PAIR, /* after a backslash in a quoted-string */
  CL_AFTER_QUOTED
};

static mp_http1 *from_parser(llhttp_t *p) { return (mp_http1 *)p->data; }

/* Byte classes as tables: one load per byte, since Host is checked on
 * every request. */
#define ALNUM ['a' ... 'z'] = 1, ['A' ... 'Z'] = 1, ['0' ... '9'] = 1
/* RFC 9110 tchar. */
static const uint8_t TCHAR[256] = {
    ALNUM,    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1,
    ['\''] = 1, ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1,
    ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1};
/* RFC 3986 unreserved and sub-delims: what a reg-name holds besides
 * percent-encodings. */
static const uint8_t REG_NAME[256] = {
    ALNUM,    ['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1, ['!'] = 1,
    ['$'] = 1, ['&'] = 1, ['\''] = 1, ['('] = 1, [')'] = 1, ['*'] = 1,
    ['+'] = 1, [','] = 1, [';'] = 1, ['='] = 1};
#undef ALNUM

static bool is_tchar(unsigned char c) { return TCHAR[c] != 0; }

static int fail(mp_http1 *h, int status, const char *error) {
  h->status = status;
  h->error = error;
  return -1;
}

static uint32_t offset_of(mp_http1 *h, const char *at) {
  return (uint32_t)(at - (h->base + h->msg_off));
}

static void span_grow(mp_http1 *h, mp_span *s, const char *at, size_t n) {
  if (s->len == 0) s->off = offset_of(h, at);
  s->len += (uint32_t)n;
}

static int on_message_begin(llhttp_t *p) {
  mp_http1 *h = from_parser(p);
  mp_http1_msg *m = h->msg;
  mp_hfield *fields = m->fields;
  memset(m, 0, sizeof *m);
  m->fields = fields;
  m->content_length = -1;
  h->in_value = false;
  return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n) {
  mp_http1 *h = from_parser(p);
  span_grow(h, &h->msg->target, at, n);
  return 0;
}

static int on_version(llhttp_t *p, const char *at, size_t n) {
  (void)at;
  (void)n;
  from_parser(p)->saw_version = true;
  return 0;
}

/* Bytes after the head that are not body: trailer fields and chunk
 * extensions. They are not kept (the head's spans are; body bytes around
 * them may already be gone), and together they may not pass the head
 * limit. */
static int extra_bytes(mp_http1 *h, size_t n) {
  h->extra += n;
  if (h->extra > h->limits->max_header_size)
    return fail(h, 431, "trailer fields or chunk extensions too large");
  return 0;
}

/* A piece of a trailer field: counted, and handed to the caller. */
static int trailer(mp_http1 *h, int what, const char *at, size_t n) {
  if (extra_bytes(h, n) != 0) return -1;
  if (h->on_trailer != NULL && h->on_trailer(h->ud, what, at, n) != 0)
    return fail(h, 500, "internal server error");
  return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n) {
  mp_http1 *h = from_parser(p);
  mp_http1_msg *m = h->msg;
  if (h->state != MP_H1_IN_HEAD) {
    h->trailer_name += (uint32_t)n;
    return trailer(h, MP_H1_TRAILER_NAME, at, n);
  }
  if (h->in_value || m->nfields == 0) {
    if (m->nfields == h->limits->max_headers)
      return fail(h, 431, "too many header fields");
    memset(&m->fields[m->nfields++], 0, sizeof(mp_hfield));
    h->in_value = false;
  }
  span_grow(h, &m->fields[m->nfields - 1].name, at, n);
  return 0;
}

static int on_header_field_complete(llhttp_t *p) {
  mp_http1 *h = from_parser(p);
  mp_http1_msg *m = h->msg;
  /* llhttp 8.1 lets ": value" through, in the head and in trailers; a field
   * name is a token (RFC 9110 section 5.1), never empty. */
  if (h->state != MP_H1_IN_HEAD) {
    if (h->trailer_name == 0) return fail(h, 400, "empty trailer field name");
    h->trailer_name = 0;
    return 0;
  }
  if (m->nfields == 0 || m->fields[m->nfields - 1].name.len == 0)
    return fail(h, 400, "empty header field name");
  /* A value may be empty, in which case on_header_value never runs: open
   * the value here so the next name starts a new field. */
  h->in_value = true;
  m->fields[m->nfields - 1].value = (mp_span){0, 0};
  return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n) {
  mp_http1 *h = from_parser(p);
  mp_http1_msg *m = h->msg;
  if (h->state != MP_H1_IN_HEAD) return trailer(h, MP_H1_TRAILER_VALUE, at, n);
  span_grow(h, &m->fields[m->nfields - 1].value, at, n);
  return 0;
}

static bool field_is(mp_http1 *h, const mp_hfield *f, const char *name,
                     size_t len) {
  return f->name.len == len &&
         mp_str_ieq(h->base + h->msg_off + f->name.off, name, len);
}

static bool is_hex(unsigned char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* An IP-literal without its brackets: an IPv6 address or an IPvFuture. */
static bool valid_ip_literal(const char *p, size_t n) {
  if (n > 0 && (p[0] == 'v' || p[0] == 'V')) {
    size_t i = 1;
    while (i < n && is_hex((unsigned char)p[i])) i++;
    if (i == 1 || i + 1 >= n || p[i] != '.') return false;
    for (i++; i < n; i++)
      if (p[i] != ':' && !REG_NAME[(unsigned char)p[i]]) return false;
    return true;
  }
  char text[INET6_ADDRSTRLEN];
  struct in6_addr addr;
  if (n == 0 || n >= sizeof text) return false;
  memcpy(text, p, n);
  text[n] = '\0';
  return inet_pton(AF_INET6, text, &addr) == 1;
}

/* Is v[0, n) a uri-host [":" port] (RFC 9112 section 3.2, RFC 3986 section
 * 3.2.2), with a host that is not empty? No userinfo, path or whitespace;
 * a port of at most 65535. */
static bool valid_authority(const char *v, size_t n) {
  size_t i = 0;
  if (n > 0 && v[0] == '[') {
    const char *end = memchr(v, ']', n);
    if (end == NULL || !valid_ip_literal(v + 1, (size_t)(end - v) - 1))
      return false;
    i = (size_t)(end - v) + 1;
  } else {
    while (i < n) {
      if (REG_NAME[(unsigned char)v[i]]) {
        i++;
      } else if (v[i] == '%') {
        if (i + 2 >= n || !is_hex((unsigned char)v[i + 1]) ||
            !is_hex((unsigned char)v[i + 2]))
          return false;
        i += 3;
      } else {
        break; /* the port's ':', or a byte that fails below */
      }
    }
    if (i == 0) return false; /* http URIs need a host (RFC 9110 4.2.1) */
  }
  if (i == n) return true;
  if (v[i++] != ':' || n - i > 5) return false;
  unsigned port = 0;
  for (; i < n; i++) {
    if (v[i] < '0' || v[i] > '9') return false;
    port = port * 10 + (unsigned)(v[i] - '0');
  }
  return port <= 65535;
}

/* What llhttp 8.1.0 leaves to the server: Host, Expect, the codings of
 * Transfer-Encoding and the Connection options. */
static int check_fields(mp_http1 *h, llhttp_t *p) {
  mp_http1_msg *m = h->msg;
  const char *base = h->base + h->msg_off;
  unsigned hosts = 0, options = 0;
  bool te = false, other_coding = false, last_chunked = false;
  bool upgrade_field = false;
  for (unsigned i = 0; i < m->nfields; i++) {
    const mp_hfield *f = &m->fields[i];
    const char *v = base + f->value.off;
    if (field_is(h, f, "host", 4)) {
      hosts++;
      /* Empty: the target has no authority (RFC 9110 section 7.2). */
      if (f->value.len > 0 && !valid_authority(v, f->value.len))
        return fail(h, 400, "invalid Host header");
    } else if (field_is(h, f, "expect", 6)) {
      if (f->value.len != 12 || !mp_str_ieq(v, "100-continue", 12))
        return fail(h, 417, "unsupported expectation");
      /* RFC 9110 section 10.1.1: ignored in an HTTP/1.0 request. */
      m->expect_continue = m->http_minor >= 1;
    } else if (field_is(h, f, "transfer-encoding", 17)) {
      if (m->http_minor == 0)
        return fail(h, 400, "Transfer-Encoding in an HTTP/1.0 request");
      te = true;
      mp_h1_read_codings(v, f->value.len, &other_coding, &last_chunked);
    } else if (field_is(h, f, "connection", 10)) {
      options |= mp_h1_read_connection(v, f->value.len);
    } else if (field_is(h, f, "upgrade", 7)) {
      upgrade_field = true;
    }
  }
  /* RFC 9112 section 6.3: a list not ending in chunked cannot be framed
   * (400); one that does but holds another coding is not supported (501). */
  if (te && !last_chunked)
    return fail(h, 400, "transfer coding list does not end in chunked");
  if (te && other_coding) return fail(h, 501, "unsupported transfer coding");
  if (hosts > 1) return fail(h, 400, "more than one Host header");
  if (hosts == 0 && m->http_minor == 1)
    return fail(h, 400, "missing Host header");
  /* RFC 9112 section 9.3. An upgrade is not supported: the request is
   * answered, then the connection closes. */
  m->keep_alive =
      !(options & MP_H1_OPT_CLOSE) &&
      (m->http_minor >= 1 || (options & MP_H1_OPT_KEEP_ALIVE)) &&
      !((options & MP_H1_OPT_UPGRADE) && upgrade_field) && !p->upgrade;
  return 0;
}

/* Splits the target into path and query. An absolute-form target
 * ("http://host:8080/p?q", RFC 9112 section 3.2.2) has its path start after
 * the authority, which stands for the Host field and is checked as one;
 * with no path at all, the path span is empty and means "/". The
 * asterisk-form ("*", RFC 9112 section 3.2.4) is for OPTIONS only, and its
 * path is "*". Returns 0, or -1 after recording a 400. */
static int split_target(mp_http1 *h, mp_http1_msg *m) {
  const char *t = h->base + h->msg_off + m->target.off;
  uint32_t len = m->target.len, start = 0;
  if (len > 0 && t[0] == '*') {
    if (len != 1) return fail(h, 400, "invalid request target");
    if (m->method != HTTP_OPTIONS)
      return fail(h, 400, "the asterisk-form target is for OPTIONS only");
  } else if (len > 0 && t[0] != '/') {
    const char *sep = len > 3 ? memmem(t, len < 16 ? len : 16, "://", 3) : NULL;
    if (sep != NULL) {
      start = (uint32_t)(sep - t) + 3;
      m->authority.off = m->target.off + start;
      while (start < len && t[start] != '/' && t[start] != '?') start++;
      m->authority.len = m->target.off + start - m->authority.off;
      if (!valid_authority(h->base + h->msg_off + m->authority.off,
                           m->authority.len))
        return fail(h, 400, "invalid authority in the request target");
    }
  }
  const char *q = memchr(t + start, '?', len - start);
  uint32_t end = q ? (uint32_t)(q - t) : len;
  m->path.off = m->target.off + start;
  m->path.len = end - start;
  if (q != NULL) {
    m->query.off = m->target.off + end + 1;
    m->query.len = len - end - 1;
  }
  return 0;
}

/* llhttp drops the whitespace before a value but not after it (RFC 9110
 * section 5.5: neither belongs to the value). */
static int on_header_value_complete(llhttp_t *p) {
  mp_http1 *h = from_parser(p);
  if (h->state != MP_H1_IN_HEAD) return trailer(h, MP_H1_TRAILER_END, NULL, 0);
  mp_span *v = &h->msg->fields[h->msg->nfields - 1].value;
  const char *start = h->base + h->msg_off + v->off;
  while (v->len > 0 && (start[v->len - 1] == ' ' || start[v->len - 1] == '\t'))
    v->len--;
  return 0;
}

static int on_headers_complete(llhttp_t *p) {
  mp_http1 *h = from_parser(p);
  mp_http1_msg *m = h->msg;
  m->method = p->method;
  m->http_major = p->http_major;
  m->http_minor = p->http_minor;
  m->head_len = h->scan.scanned;
  if (!h->saw_version)
    return fail(h, 400, "request line without an HTTP version");
  if (m->http_major != 1 || m->http_minor > 1)
    return fail(h, 505, "HTTP version not supported");
  /* A tunnel is for proxies (RFC 9110 section 9.3.6). */
  if (m->method == HTTP_CONNECT) return fail(h, 501, "CONNECT is not supported");
  /* Known from the head already (keep_alive too): the handler may answer
   * before the body is in. */
  if (check_fields(h, p) != 0 || split_target(h, m) != 0) return -1;
  if (m->expect_continue && !(p->flags & (F_CHUNKED | F_CONTENT_LENGTH)))
    m->expect_continue = false; /* no body to wait for */
  m->chunked = (p->flags & F_CHUNKED) != 0;
  m->upgrade = p->upgrade != 0;
  h->head_done = true;
  if (p->flags & F_CONTENT_LENGTH) {
    if (p->content_length > h->limits->max_body_size)
      return fail(h, 413, "request body too large");
    m->content_length = (int64_t)p->content_length;
  }
  if (m->chunked) h->chunk_line = CL_SIZE;
  h->state = MP_H1_IN_BODY;
  return HPE_PAUSED;
}

/* The size line of a chunk is whole. A size that alone goes past the body
 * limit is refused now, not after its bytes. */
static int on_chunk_header(llhttp_t *p) {
  mp_http1 *h = from_parser(p);
  if (p->content_length > h->limits->max_body_size - h->msg->body_len)
    return fail(h, 413, "request body too large");
  h->last_chunk = p->content_length == 0;
  return 0;
}

/* A chunk and its CRLF are in: a size line follows, unless this was the
 * last chunk (then its trailer section is in too). */
static int on_chunk_complete(llhttp_t *p) {
  mp_http1 *h = from_parser(p);
  if (h->last_chunk) return 0;
  h->chunk_line = CL_SIZE;
  return HPE_PAUSED;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  mp_http1 *h = from_parser(p);
  mp_http1_msg *m = h->msg;
  m->body_len += n;
  if (m->body_len > h->limits->max_body_size)
    return fail(h, 413, "request body too large");
  if (h->on_body(h->ud, at, n) != 0)
    return fail(h, 500, "internal server error");
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  mp_http1 *h = from_parser(p);
  /* llhttp decides again once this returns, from Connection fields it has
   * read its own way, trailers included (RFC 9110 section 6.5.1: they
   * cannot change the connection), and refuses any next message if it
   * thinks the connection ends. The head's decision stands for both. */
  p->flags &= (uint16_t)~(F_CONNECTION_CLOSE | F_CONNECTION_KEEP_ALIVE);
  p->flags |= h->msg->keep_alive ? F_CONNECTION_KEEP_ALIVE : F_CONNECTION_CLOSE;
  h->state = MP_H1_DONE;
  return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_version = on_version,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_chunk_header = on_chunk_header,
    .on_chunk_complete = on_chunk_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void mp_http1_init(mp_http1 *h, const mp_http1_limits *limits,
                   mp_http1_body_cb on_body_cb, mp_http1_trailer_cb on_trailer,
                   void *ud) {
  memset(h, 0, sizeof *h);
  llhttp_init(&h->parser, HTTP_REQUEST, &settings);
  h->parser.data = h;
  h->limits = limits;
  h->on_body = on_body_cb;
  h->on_trailer = on_trailer;
  h->ud = ud;
  h->state = MP_H1_IN_HEAD;
  mp_h1scan_start(&h->scan);
}

void mp_http1_attach(mp_http1 *h, mp_http1_msg *msg) { h->msg = msg; }

void mp_http1_next(mp_http1 *h, size_t pos) {
  if (llhttp_get_errno(&h->parser) == HPE_PAUSED) llhttp_resume(&h->parser);
  h->state = MP_H1_IN_HEAD;
  mp_h1scan_start(&h->scan);
  h->in_value = false;
  h->saw_version = false;
  h->chunk_line = CL_NONE;
  h->last_chunk = false;
  h->trailer_name = 0;
  h->extra = 0;
  h->msg_off = pos;
}

/* Scans head bytes (h1scan.h). Returns how many of the n bytes belong to
 * the head, or -1 after recording the error. */
static long scan_head(mp_http1 *h, const char *p, size_t n) {
  long k = mp_h1scan_head(&h->scan, p, n, h->limits->max_header_size);
  switch (k) {
    case MP_H1SCAN_NUL: return fail(h, 400, "NUL byte in request head");
    case MP_H1SCAN_BARE_CR: return fail(h, 400, "bare CR in request head");
    case MP_H1SCAN_OBS_FOLD:
      return fail(h, 400, "obsolete line folding in request head");
    case MP_H1SCAN_TOO_LARGE:
      return h->scan.first_line
                 ? fail(h, 414, "request line too long")
                 : fail(h, 431, "request header fields too large");
  }
  return k;
}

static bool is_blank(unsigned char c) { return c == ' ' || c == '\t'; }

/* What a quoted-string may hold besides '"' and '\\' (RFC 9110 section
 * 5.6.4): HTAB, SP, VCHAR and obs-text; the same after a backslash. */
static bool is_qdtext(unsigned char c) {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* Reads chunk extensions in p[0, n), from position h->chunk_line (past
 * CL_SIZE). Returns how many bytes belong to them: all n, or those before
 * the CR that ends the line, which is left to llhttp (h->chunk_line is
 * then CL_NONE). -1 after recording the error: 400 for bytes outside the
 * grammar, 431 past the limit on extension and trailer bytes. */
static long scan_extensions(mp_http1 *h, const char *p, size_t n) {
  uint8_t st = h->chunk_line;
  size_t i = 0;
  for (; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    switch (st) {
      case CL_BWS:
        if (c == ';') st = CL_NAME_START;
        else if (!is_blank(c)) goto bad;
        break;
      case CL_NAME_START:
        if (is_tchar(c)) st = CL_NAME;
        else if (!is_blank(c)) goto bad;
        break;
      case CL_NAME:
      case CL_TOKEN:
        if (is_tchar(c)) break;
        /* fall through */
      case CL_AFTER_QUOTED:
        if (c == '\r') {
          st = CL_NONE; /* the CR is llhttp's */
          goto done;
        } else if (c == ';') {
          st = CL_NAME_START;
        } else if (c == '=' && st == CL_NAME) {
          st = CL_VALUE_START;
        } else if (is_blank(c)) {
          st = st == CL_NAME ? CL_AFTER_NAME : CL_BWS;
        } else {
          goto bad;
        }
        break;
      case CL_AFTER_NAME:
        if (c == '=') st = CL_VALUE_START;
        else if (c == ';') st = CL_NAME_START;
        else if (!is_blank(c)) goto bad;
        break;
      case CL_VALUE_START:
        if (c == '"') st = CL_QUOTED;
        else if (is_tchar(c)) st = CL_TOKEN;
        else if (!is_blank(c)) goto bad;
        break;
      case CL_QUOTED:
        if (c == '"') st = CL_AFTER_QUOTED;
        else if (c == '\\') st = CL_QUOTED_PAIR;
        else if (!is_qdtext(c)) goto bad;
        break;
      case CL_QUOTED_PAIR:
        if (!is_qdtext(c)) goto bad;
        st = CL_QUOTED;
        break;
    }
  }
done:
  h->chunk_line = st;
  return extra_bytes(h, i) != 0 ? -1 : (long)i;
bad:
  /* The bytes before the bad one count first, as they would have had they
   * come in a read of their own: past the limit, the answer is 431. */
  if (extra_bytes(h, i) != 0) return -1;
  return fail(h, 400, "invalid chunk extension");
}

/* Where llhttp stands at a chunk-size line: returns how many bytes of
 * p[0, n) go to llhttp now (the size's digits, or 0 when the extensions
 * begin and the core reads on), after moving h->chunk_line on. */
static size_t chunk_size_bytes(mp_http1 *h, const char *p, size_t n) {
  size_t k = 0;
  while (k < n && is_hex((unsigned char)p[k])) k++;
  if (k > 0) return k;
  if (p[0] == ';' || is_blank((unsigned char)p[0])) {
    h->chunk_line = CL_BWS;
    return 0;
  }
  h->chunk_line = CL_NONE; /* the line's end (or a bad byte: llhttp says) */
  return n;
}

static void map_llhttp_error(mp_http1 *h, llhttp_errno_t e) {
  if (h->status != 0) return; /* one of our callbacks failed */
  h->status = 400;
  h->error = llhttp_get_error_reason(&h->parser);
  llhttp_t *p = &h->parser;
  /* A version llhttp could read but will not take is 505; a malformed
   * request line that happens to hold a good version is 400. */
  if (e == HPE_INVALID_VERSION && !(p->http_major == 1 && p->http_minor <= 1)) {
    h->status = 505;
    h->error = "HTTP version not supported";
  }
  if (e == HPE_PAUSED_H2_UPGRADE) { /* the HTTP/2 connection preface */
    h->status = 505;
    h->error = "HTTP/2 is not supported";
  }
  if (h->error == NULL) h->error = llhttp_errno_name(e);
}

int mp_http1_execute(mp_http1 *h, const char *buf, size_t len, size_t *pos) {
  h->base = buf;
  while (*pos < len) {
    if (h->state == MP_H1_DONE) return MP_H1_MESSAGE;
    const char *p = buf + *pos;
    size_t n = len - *pos;
    if (h->state == MP_H1_IN_HEAD && !mp_h1scan_done(&h->scan)) {
      long k = scan_head(h, p, n);
      if (k < 0) return MP_H1_ERROR;
      if (k == 0) break; /* a CR held back for the byte after it */
      n = (size_t)k;
    } else if (h->chunk_line == CL_SIZE) {
      n = chunk_size_bytes(h, p, n);
      if (n == 0) continue;
    } else if (h->chunk_line != CL_NONE) {
      long k = scan_extensions(h, p, n);
      if (k < 0) return MP_H1_ERROR;
      *pos += (size_t)k;
      continue;
    }
    llhttp_errno_t e = llhttp_execute(&h->parser, p, n);
    if (e == HPE_OK) {
      *pos += n;
      /* llhttp takes a request line without a version for HTTP/0.9 and
       * waits for header fields that will not come. */
      if (h->state == MP_H1_IN_HEAD && !h->scan.first_line && !h->saw_version) {
        fail(h, 400, "request line without an HTTP version");
        return MP_H1_ERROR;
      }
      continue;
    }
    if (e == HPE_PAUSED) {
      *pos = (size_t)(llhttp_get_error_pos(&h->parser) - buf);
      /* Paused in on_message_complete: stays so until mp_http1_next. */
      if (h->state == MP_H1_DONE) return MP_H1_MESSAGE;
      llhttp_resume(&h->parser);
      if (!h->head_done) continue; /* paused after a chunk */
      h->head_done = false;        /* paused in on_headers_complete */
      if (!h->msg->chunked && h->msg->content_length <= 0) {
        /* No body: llhttp ends the message without needing a byte. */
        e = llhttp_execute(&h->parser, buf + *pos, 0);
        if (e != HPE_OK && e != HPE_PAUSED) {
          map_llhttp_error(h, e);
          return MP_H1_ERROR;
        }
      }
      return MP_H1_HEAD;
    }
    map_llhttp_error(h, e);
    return MP_H1_ERROR;
  }
  return h->state == MP_H1_DONE ? MP_H1_MESSAGE : MP_H1_NEED_MORE;
}

long mp_http1_query_get(const char *query, size_t qlen, const char *name,
                        size_t nlen, char *dst) {
  size_t i = 0;
  while (i <= qlen) {
    size_t end = i;
    while (end < qlen && query[end] != '&') end++;
    const char *pair = query + i;
    size_t plen = end - i;
    const char *eq = memchr(pair, '=', plen);
    size_t klen = eq ? (size_t)(eq - pair) : plen;
    if (plen > 0) {
      /* Decode the key into dst (it is at least qlen long) to compare. */
      size_t dk = mp_str_unescape(dst, pair, klen, true);
      if (dk == nlen && memcmp(dst, name, nlen) == 0) {
        if (eq == NULL) return 0;
        return (long)mp_str_unescape(dst, eq + 1, plen - klen - 1, true);
      }
    }
    i = end + 1;
  }
  return -1;
}

bool mp_http1_valid_name(const char *p, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++)
    if (!is_tchar((unsigned char)p[i])) return false;
  return true;
}

bool mp_http1_valid_value(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}
