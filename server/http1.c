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
 */
#define _GNU_SOURCE /* memmem */
#include "http1.h"

#include "errors.h"

#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Pre-scan positions within the head. */
enum {
  SC_PRE,        /* before the request line: blank lines are skipped */
  SC_PRE_CR,     /* CR before the request line */
  SC_LINE_START, /* first byte of a line after the request line */
  SC_IN_LINE,
  SC_CR,       /* CR inside a line: LF must follow */
  SC_BLANK_CR, /* CR at a line start: it can only begin the blank line */
  SC_DONE      /* the blank line ending the head has been scanned */
};

static mp_http1 *from_parser(llhttp_t *p) { return (mp_http1 *)p->data; }

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

static int on_chunk_extension(llhttp_t *p, const char *at, size_t n) {
  (void)at;
  return extra_bytes(from_parser(p), n);
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
  if (h->state != MP_H1_IN_HEAD) return trailer(h, MP_H1_TRAILER_NAME, at, n);
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
  if (h->state != MP_H1_IN_HEAD) return 0;
  /* llhttp 8.1 lets ": value" through; a field name is a token (RFC 9110
   * section 5.1), never empty. */
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
         mp_http1_ieq(h->base + h->msg_off + f->name.off, name, len);
}

/* Reads the codings of one Transfer-Encoding value: *other is set when
 * one is not "chunked", *last_chunked says whether the value's last one
 * is (left as it was for an empty value). */
static void read_codings(const char *v, size_t len, bool *other,
                         bool *last_chunked) {
  size_t i = 0;
  while (i < len) {
    while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
    size_t start = i;
    while (i < len && v[i] != ',' && v[i] != ' ' && v[i] != '\t') i++;
    if (i == start) continue;
    bool chunked = i - start == 7 && mp_http1_ieq(v + start, "chunked", 7);
    if (!chunked) *other = true;
    *last_chunked = chunked;
  }
}

/* What llhttp 8.1.0 leaves to the server: Host, Expect and the codings of
 * Transfer-Encoding. */
static int check_fields(mp_http1 *h, llhttp_t *p) {
  mp_http1_msg *m = h->msg;
  const char *base = h->base + h->msg_off;
  unsigned hosts = 0;
  bool te = false, other_coding = false, last_chunked = false;
  for (unsigned i = 0; i < m->nfields; i++) {
    const mp_hfield *f = &m->fields[i];
    const char *v = base + f->value.off;
    if (field_is(h, f, "host", 4)) {
      hosts++;
    } else if (field_is(h, f, "expect", 6)) {
      if (f->value.len != 12 || !mp_http1_ieq(v, "100-continue", 12))
        return fail(h, 417, "unsupported expectation");
      m->expect_continue = true;
    } else if (field_is(h, f, "transfer-encoding", 17)) {
      if (m->http_minor == 0)
        return fail(h, 400, "Transfer-Encoding in an HTTP/1.0 request");
      te = true;
      read_codings(v, f->value.len, &other_coding, &last_chunked);
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
  (void)p;
  return 0;
}

/* Splits the target into path and query. An absolute-form target
 * ("http://host:8080/p?q", RFC 9112 section 3.2.2) has its path start after
 * the authority, and its authority stands for the Host field; with no path
 * at all, the path span is empty and means "/". */
static void split_target(mp_http1 *h, mp_http1_msg *m) {
  const char *t = h->base + h->msg_off + m->target.off;
  uint32_t len = m->target.len, start = 0;
  if (len > 0 && t[0] != '/') {
    const char *sep = len > 3 ? memmem(t, len < 16 ? len : 16, "://", 3) : NULL;
    if (sep != NULL) {
      start = (uint32_t)(sep - t) + 3;
      m->authority.off = m->target.off + start;
      while (start < len && t[start] != '/' && t[start] != '?') start++;
      m->authority.len = m->target.off + start - m->authority.off;
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
  m->head_len = h->scanned;
  if (!h->saw_version)
    return fail(h, 400, "request line without an HTTP version");
  if (m->http_major != 1 || m->http_minor > 1)
    return fail(h, 505, "HTTP version not supported");
  if (check_fields(h, p) != 0) return -1;
  if (m->expect_continue && !(p->flags & (F_CHUNKED | F_CONTENT_LENGTH)))
    m->expect_continue = false; /* no body to wait for */
  m->chunked = (p->flags & F_CHUNKED) != 0;
  m->upgrade = p->upgrade != 0;
  /* Known from the head already: the handler may answer before the body
   * is in. An upgrade is not supported: answer it, then close. */
  m->keep_alive = llhttp_should_keep_alive(p) && !p->upgrade;
  h->head_done = true;
  if (p->flags & F_CONTENT_LENGTH) {
    if (p->content_length > h->limits->max_body_size)
      return fail(h, 413, "request body too large");
    m->content_length = (int64_t)p->content_length;
  }

  split_target(h, m);
  h->state = MP_H1_IN_BODY;
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
  /* An upgrade is not supported: answer the request, then close. */
  h->msg->keep_alive = llhttp_should_keep_alive(p) && !p->upgrade;
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
    .on_chunk_extension_name = on_chunk_extension,
    .on_chunk_extension_value = on_chunk_extension,
    .on_headers_complete = on_headers_complete,
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
  h->scan = SC_PRE;
  h->scan_first_line = true;
}

void mp_http1_attach(mp_http1 *h, mp_http1_msg *msg) { h->msg = msg; }

void mp_http1_next(mp_http1 *h, size_t pos) {
  if (llhttp_get_errno(&h->parser) == HPE_PAUSED) llhttp_resume(&h->parser);
  h->state = MP_H1_IN_HEAD;
  h->scan = SC_PRE;
  h->scan_first_line = true;
  h->scanned = 0;
  h->in_value = false;
  h->saw_version = false;
  h->extra = 0;
  h->msg_off = pos;
}

/* Bytes the pre-scan must look at; everything else inside a line is
 * skipped, 16 bytes at a time where SSE2 is there. */
static const uint8_t special[256] = {['\0'] = 1, ['\r'] = 1, ['\n'] = 1};

/* The index of the first NUL, CR or LF in p[i, lim), or lim. */
static size_t skip_plain(const char *p, size_t i, size_t lim) {
#ifdef __SSE2__
  const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
  const __m128i nul = _mm_setzero_si128();
  while (i + 16 <= lim) {
    __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, cr),
                                            _mm_cmpeq_epi8(v, lf)),
                               _mm_cmpeq_epi8(v, nul));
    int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return i + (size_t)__builtin_ctz((unsigned)mask);
    i += 16;
  }
#endif
  while (i < lim && !special[(unsigned char)p[i]]) i++;
  return i;
}

/* Scans head bytes. Returns how many of the n bytes belong to the head
 * (all of them, or up to and including the blank line's LF), or -1 after
 * recording the error. Looks at no more than one byte past the head limit. */
static long scan_head(mp_http1 *h, const char *p, size_t n) {
  size_t max = h->limits->max_header_size;
  size_t allowance = max + 1 - h->scanned; /* scanned <= max here */
  size_t lim = n < allowance ? n : allowance;
  size_t i = 0;
  while (i < lim && h->scan != SC_DONE) {
    if (h->scan == SC_IN_LINE) {
      i = skip_plain(p, i, lim);
      if (i == lim) break;
    }
    unsigned char c = (unsigned char)p[i++];
    if (c == '\0') return fail(h, 400, "NUL byte in request head");
    switch (h->scan) {
      case SC_PRE:
        if (c == '\r')
          h->scan = SC_PRE_CR;
        else if (c != '\n')
          h->scan = SC_IN_LINE;
        break;
      case SC_PRE_CR:
        if (c != '\n') return fail(h, 400, "bare CR in request head");
        h->scan = SC_PRE;
        break;
      case SC_LINE_START:
        if (c == ' ' || c == '\t')
          return fail(h, 400, "obsolete line folding in request head");
        if (c == '\n')
          h->scan = SC_DONE;
        else if (c == '\r')
          h->scan = SC_BLANK_CR;
        else
          h->scan = SC_IN_LINE;
        break;
      case SC_IN_LINE: /* c is CR or LF */
        if (c == '\r') {
          h->scan = SC_CR;
        } else {
          h->scan = SC_LINE_START;
          h->scan_first_line = false;
        }
        break;
      case SC_CR:
        if (c != '\n') return fail(h, 400, "bare CR in request head");
        h->scan = SC_LINE_START;
        h->scan_first_line = false;
        break;
      case SC_BLANK_CR:
        if (c != '\n') return fail(h, 400, "bare CR in request head");
        h->scan = SC_DONE;
        break;
    }
  }
  h->scanned += (uint32_t)i;
  if (h->scanned > max)
    return h->scan_first_line ? fail(h, 414, "request line too long")
                              : fail(h, 431, "request header fields too large");
  return (long)i;
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
    if (h->state == MP_H1_IN_HEAD && h->scan != SC_DONE) {
      long k = scan_head(h, p, n);
      if (k < 0) return MP_H1_ERROR;
      n = (size_t)k;
    }
    llhttp_errno_t e = llhttp_execute(&h->parser, p, n);
    if (e == HPE_OK) {
      *pos += n;
      continue;
    }
    if (e == HPE_PAUSED) {
      *pos = (size_t)(llhttp_get_error_pos(&h->parser) - buf);
      /* Paused in on_message_complete: stays so until mp_http1_next. */
      if (h->state == MP_H1_DONE) return MP_H1_MESSAGE;
      llhttp_resume(&h->parser); /* paused in on_headers_complete */
      h->head_done = false;
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

/* ---- Bytes out ---- */

const char *mp_http1_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 418: return "I'm a teapot";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 425: return "Too Early";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 451: return "Unavailable For Legal Reasons";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
  }
  return "Unknown";
}

size_t mp_http1_date_line(char *out, time_t t) {
  struct tm tm;
  gmtime_r(&t, &tm);
  /* strftime's %a and %b follow the locale; IMF-fixdate needs English. */
  static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int n = snprintf(out, 40, "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n",
                   days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
                   tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return n > 0 ? (size_t)n : 0;
}

size_t mp_http1_json_string(char *out, size_t cap, const char *text,
                            size_t len) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (cap < 2) return 0;
  out[o++] = '"';
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    char esc[6];
    size_t k;
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      k = 2;
    } else if (c == '\n') {
      memcpy(esc, "\\n", 2);
      k = 2;
    } else if (c == '\t') {
      memcpy(esc, "\\t", 2);
      k = 2;
    } else if (c < 0x20 || c == 0x7f) {
      memcpy(esc, "\\u00", 4);
      esc[4] = hex[c >> 4];
      esc[5] = hex[c & 15];
      k = 6;
    } else {
      esc[0] = (char)c;
      k = 1;
    }
    if (o + k + 1 > cap) break;
    memcpy(out + o, esc, k);
    o += k;
  }
  out[o++] = '"';
  return o;
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t mp_http1_unescape(char *dst, const char *src, size_t len,
                         bool plus_space) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    char c = src[i];
    if (c == '%' && i + 2 < len) {
      int hi = hexval((unsigned char)src[i + 1]);
      int lo = hexval((unsigned char)src[i + 2]);
      if (hi >= 0 && lo >= 0) {
        dst[o++] = (char)(hi * 16 + lo);
        i += 2;
        continue;
      }
    } else if (c == '+' && plus_space) {
      c = ' ';
    }
    dst[o++] = c;
  }
  return o;
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
      size_t dk = mp_http1_unescape(dst, pair, klen, true);
      if (dk == nlen && memcmp(dst, name, nlen) == 0) {
        if (eq == NULL) return 0;
        return (long)mp_http1_unescape(dst, eq + 1, plen - klen - 1, true);
      }
    }
    i = end + 1;
  }
  return -1;
}

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c) {
  if (c >= 'a' && c <= 'z') return true;
  if (c >= 'A' && c <= 'Z') return true;
  if (c >= '0' && c <= '9') return true;
  return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
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
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

bool mp_http1_ieq(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
    if (x >= 'A' && x <= 'Z') x += 32;
    if (y >= 'A' && y <= 'Z') y += 32;
    if (x != y) return false;
  }
  return true;
}

/* Appends the decimal digits of v. */
static size_t put_u64(char *out, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}

#define PUT(lit)                          \
  do {                                    \
    memcpy(p, lit, sizeof(lit) - 1);      \
    p += sizeof(lit) - 1;                 \
  } while (0)

int mp_http1_write_head(mp_buf *out, const mp_http1_head *h) {
  const char *reason = h->reason ? h->reason : mp_http1_reason(h->status);
  size_t rlen = h->reason ? h->reason_len : strlen(reason);
  size_t ctlen = h->content_type ? strlen(h->content_type) : 0;
  size_t need = 16 + rlen + h->date_len + 16 + ctlen + 40 + h->extra_len + 32;
  if (mp_buf_reserve(out, need) != 0) return MP_NOMEM;

  char *p = out->data + out->len;
  if (h->status == 200 && h->reason == NULL) {
    PUT("HTTP/1.1 200 OK\r\n");
  } else {
    PUT("HTTP/1.1 ");
    p += put_u64(p, (uint64_t)h->status);
    *p++ = ' ';
    memcpy(p, reason, rlen);
    p += rlen;
    PUT("\r\n");
  }
  memcpy(p, h->date, h->date_len);
  p += h->date_len;
  if (h->content_type != NULL) {
    PUT("Content-Type: ");
    memcpy(p, h->content_type, ctlen);
    p += ctlen;
    PUT("\r\n");
  }
  if (h->content_length >= 0) {
    PUT("Content-Length: ");
    p += put_u64(p, (uint64_t)h->content_length);
    PUT("\r\n");
  } else if (h->content_length == MP_H1_LENGTH_CHUNKED) {
    PUT("Transfer-Encoding: chunked\r\n");
  }
  if (h->extra_len > 0) {
    memcpy(p, h->extra, h->extra_len);
    p += h->extra_len;
  }
  if (h->connection == MP_H1_CONN_CLOSE)
    PUT("Connection: close\r\n");
  else if (h->connection == MP_H1_CONN_KEEPALIVE)
    PUT("Connection: keep-alive\r\n");
  PUT("\r\n");
  out->len = (size_t)(p - out->data);
  return 0;
}
