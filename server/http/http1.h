/*
 * HTTP/1.1 requests as bytes, and the grammar of their parts (query
 * strings, field names and values). No I/O. Response heads are
 * http1_out.h's.
 *
 * mp_http1 wraps llhttp (strict mode, no lenient flag) and adds what
 * llhttp 8.1.0 lets through: a pre-scan of every head byte rejects NUL, a CR
 * not followed by LF, and obs-fold, before llhttp sees the byte. It checks
 * what llhttp leaves to the server (Host and an absolute-form authority,
 * the request-target forms, Expect, the codings of Transfer-Encoding, the
 * Connection options) and parses chunk extensions itself, by their RFC 9112
 * grammar (llhttp 8.1.0 refuses a quoted-pair in them). It enforces the
 * head, header-count and body limits and maps every failure to the status
 * the client gets (400, 413, 414, 431, 501, 505).
 *
 * The caller owns one contiguous input buffer. A message's method, target
 * and headers are recorded as spans: offsets relative to the first byte of
 * the message, so the caller may move the message within its buffer between
 * calls (mp_http1_moved) as long as the head bytes stay contiguous. Body
 * bytes are handed to a callback and may be dropped once it returns.
 *
 * The parser stops after each whole head (MP_H1_HEAD), so a handler can
 * start before its body arrives, and after each whole message
 * (MP_H1_MESSAGE); it parses the next message only after mp_http1_next():
 * responses stay in request order without any queue.
 */
#ifndef MP_HTTP1_H
#define MP_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <llhttp.h>

#include "h1scan.h"

typedef struct mp_span {
  uint32_t off; /* from the first byte of the message */
  uint32_t len;
} mp_span;

typedef struct mp_hfield {
  mp_span name;
  mp_span value;
} mp_hfield;

typedef struct mp_http1_limits {
  size_t max_header_size; /* bytes of request line and header fields */
  size_t max_body_size;   /* bytes of decoded body */
  unsigned max_headers;   /* header fields */
} mp_http1_limits;

/* One parsed request head. `fields` is the caller's array of
 * limits->max_headers entries. */
typedef struct mp_http1_msg {
  uint8_t method; /* llhttp_method_t */
  uint8_t http_major;
  uint8_t http_minor;
  bool keep_alive;     /* valid from MP_H1_HEAD on; trailers never change it */
  bool chunked;
  bool upgrade;
  bool expect_continue; /* Expect: 100-continue, and no 100 sent yet */
  int64_t content_length; /* -1 when absent */
  uint64_t body_len;      /* decoded body bytes seen so far */
  mp_span target;
  mp_span path;  /* target up to '?' */
  mp_span query; /* after '?', without it; len 0 when absent */
  mp_span authority; /* of an absolute-form target; len 0 otherwise */
  uint32_t head_len; /* bytes from message start to the end of the head */
  unsigned nfields;
  mp_hfield *fields;
} mp_http1_msg;

enum {
  MP_H1_NEED_MORE = 0, /* every byte given was consumed, but for a CR that
                          ends a head's bytes: it is parsed with the byte
                          after it (h1scan.h), so *pos stays before it */
  MP_H1_MESSAGE = 1,   /* a whole message; call mp_http1_next() */
  MP_H1_ERROR = 2,     /* see status and error; the connection must close */
  MP_H1_HEAD = 3       /* a whole head; its body (if any) follows */
};

typedef enum { MP_H1_IN_HEAD, MP_H1_IN_BODY, MP_H1_DONE } mp_h1_state;

/* Receives decoded body bytes. Returns 0, or non-zero to fail the message
 * with a 500. */
typedef int (*mp_http1_body_cb)(void *ud, const char *p, size_t n);

/* Receives a trailer field in pieces (they are not kept in the caller's
 * buffer): MP_H1_TRAILER_NAME and MP_H1_TRAILER_VALUE with bytes, then
 * MP_H1_TRAILER_END. Returns 0, or non-zero to fail with a 500. */
enum { MP_H1_TRAILER_NAME, MP_H1_TRAILER_VALUE, MP_H1_TRAILER_END };
typedef int (*mp_http1_trailer_cb)(void *ud, int what, const char *p, size_t n);

typedef struct mp_http1 {
  llhttp_t parser;
  const mp_http1_limits *limits;
  mp_http1_msg *msg;
  mp_http1_body_cb on_body;
  mp_http1_trailer_cb on_trailer;
  void *ud;
  const char *base;  /* the caller's buffer during mp_http1_execute */
  size_t msg_off;    /* where the current message starts in that buffer */
  mp_h1_state state;
  /* pre-scan */
  mp_h1scan scan;
  bool in_value;         /* last header span was a value */
  bool saw_version;      /* the request line had an HTTP-version */
  bool head_done;        /* MP_H1_HEAD not reported yet */
  uint8_t chunk_line;    /* where in a chunk-size line the core is; 0: in none */
  bool last_chunk;       /* the last chunk is in: trailer fields follow */
  uint32_t trailer_name; /* bytes of the trailer field name being parsed */
  size_t extra;          /* trailer and chunk-extension bytes so far */
  /* failure */
  int status;        /* HTTP status to answer with, after MP_H1_ERROR */
  const char *error; /* static text for the error body */
} mp_http1;

void mp_http1_init(mp_http1 *h, const mp_http1_limits *limits,
                   mp_http1_body_cb on_body, mp_http1_trailer_cb on_trailer,
                   void *ud);

/* Attaches the head record the next message is parsed into. */
void mp_http1_attach(mp_http1 *h, mp_http1_msg *msg);

/* Parses buf[*pos, len), where the current message starts at h->msg_off.
 * Advances *pos past what was consumed. Returns MP_H1_NEED_MORE,
 * MP_H1_HEAD, MP_H1_MESSAGE or MP_H1_ERROR. After MP_H1_HEAD, calling again
 * goes on with the body. May call on_body; never runs Lua. */
int mp_http1_execute(mp_http1 *h, const char *buf, size_t len, size_t *pos);

/* Starts the next message at offset pos of the caller's buffer. */
void mp_http1_next(mp_http1 *h, size_t pos);

/* The caller moved the current message to start at new_off. */
static inline void mp_http1_moved(mp_http1 *h, size_t new_off) {
  h->msg_off = new_off;
}

/* True when no byte of a next message has been seen yet. */
static inline bool mp_http1_idle(const mp_http1 *h) {
  return h->state == MP_H1_IN_HEAD && h->scan.scanned == 0;
}

/* Finds the first query parameter called name (compared after decoding) in
 * the raw query string; decodes its value into dst (at least qlen bytes)
 * and returns the length, or -1 when absent. */
long mp_http1_query_get(const char *query, size_t qlen, const char *name,
                        size_t nlen, char *dst);

/* True for a valid field-name token / field-value (no control byte but
 * HTAB: no CR, LF, NUL or DEL). */
bool mp_http1_valid_name(const char *p, size_t n);
bool mp_http1_valid_value(const char *p, size_t n);

#endif
