/*
 * HTTP/1.1 response heads as bytes: status lines, reason phrases, the Date
 * line, framing and the Server field. No I/O.
 */
#ifndef MP_HTTP1_OUT_H
#define MP_HTTP1_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "pool.h"

/* The reason phrase for a status code ("OK", "Not Found"), or "Unknown". */
const char *mp_http1_reason(int status);

/* Formats "Date: <IMF-fixdate>\r\n" into out (at least 40 bytes); returns
 * its length. */
size_t mp_http1_date_line(char *out, time_t t);

enum {
  MP_H1_CONN_NONE = 0,      /* say nothing: HTTP/1.1 keep-alive */
  MP_H1_CONN_CLOSE = 1,     /* "Connection: close" */
  MP_H1_CONN_KEEPALIVE = 2  /* "Connection: keep-alive", for HTTP/1.0 */
};

#define MP_H1_LENGTH_CHUNKED (-1) /* Transfer-Encoding: chunked */
#define MP_H1_LENGTH_NONE (-2)    /* no framing header (ends at close, or no body) */

typedef struct mp_http1_head {
  int status;
  bool own_server;    /* extra holds a Server field: the default one is left out */
  const char *reason; /* the reason phrase; NULL for the standard one */
  size_t reason_len;
  const char *date; /* a whole "Date: ...\r\n" line */
  size_t date_len;
  const char *content_type; /* NULL for none */
  int64_t content_length;   /* >= 0, or MP_H1_LENGTH_* */
  const char *extra;        /* header lines, each ending in CRLF */
  size_t extra_len;
  int connection; /* MP_H1_CONN_* */
} mp_http1_head;

/* Appends the head (status line through the blank line) to out, with the
 * Server field mp_http1_set_server chose unless h->own_server. Returns 0
 * or MP_NOMEM. */
int mp_http1_write_head(mp_buf *out, const mp_http1_head *h);

#define MP_H1_SERVER_MAX 128 /* bytes of a Server field value */

/* Chooses the Server field of every head written from now on: value, or
 * none for NULL ("moonport" until called). The line is formatted here,
 * once. Returns 0, or MP_INVALID (and changes nothing) for a value that is
 * empty, longer than MP_H1_SERVER_MAX or not a valid field value.
 * Process-wide: call at startup, before any head is written. */
int mp_http1_set_server(const char *value);

#endif
