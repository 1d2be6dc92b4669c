/*
 * HTTP/1.1 responses as bytes, for the outbound client: the same
 * strictness as the request parser (http1.h), the other way round. No
 * I/O, no Lua.
 *
 * mp_h1resp wraps llhttp in response mode and runs every head byte
 * through the shared pre-scan first (h1scan.h: NUL, bare CR, obs-fold, the
 * head limit). It refuses the framing a request would be refused for
 * (Content-Length with Transfer-Encoding, conflicting Content-Lengths, a
 * coding list not ending in chunked), skips interim (1xx) responses,
 * knows which responses have no body (to HEAD, 204, 304) and which run to
 * the close, and decides from the head whether the connection can carry
 * another request.
 *
 * The caller owns one buffer that holds the current response from its
 * first byte. Status reason and fields are spans: offsets from the first
 * byte of the final head, which starts head_start bytes into the buffer
 * (after any 1xx heads). The head must stay contiguous and in place until
 * it is complete. Body bytes are handed out one piece per call, as
 * pointers into the buffer, and may be dropped once returned.
 */
#ifndef MP_H1RESP_H
#define MP_H1RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llhttp.h>

#include "h1scan.h"
#include "http1.h"

/* The most header fields a parser can hold; a larger max_fields is
 * lowered to it (the parser's size is fixed, for the caller to allocate). */
#define MP_HTTPC_MAX_FIELDS 256

/* mp_h1resp_feed's answers (moonport.http reads them as MP_HTTPC_*). */
enum {
  MP_HTTPC_MORE = 0,  /* every byte consumed (but a CR ending a head's
                         bytes, parsed with the byte after it), nothing
                         complete yet */
  MP_HTTPC_HEAD = 1,  /* a final head is complete */
  MP_HTTPC_BODY = 2,  /* body bytes: mp_h1resp_body */
  MP_HTTPC_DONE = 3,  /* the response ended */
  MP_HTTPC_ERROR = -1 /* see error */
};

typedef struct mp_h1resp {
  llhttp_t parser;
  mp_h1scan scan;
  const char *base;    /* the caller's buffer during mp_h1resp_feed */
  size_t max_head;     /* bytes of status line and fields, and again of
                          chunk extensions and trailers together */
  unsigned max_fields;
  uint8_t state;       /* see h1resp.c */
  uint8_t event;       /* why llhttp paused, see h1resp.c */
  bool paused;         /* llhttp is paused: resume before the next bytes */
  bool head_only;      /* the request was HEAD */
  bool interim;        /* the head being parsed is a 1xx */
  bool in_value;       /* last header span was a value */
  bool saw_cl, saw_te; /* Content-Length, Transfer-Encoding fields seen */
  bool keep_alive;
  bool chunked;
  bool to_close;       /* the body runs to the close */
  bool last_chunk;     /* the last chunk is in: trailer fields follow */
  uint32_t trailer_name; /* bytes of the trailer field name being parsed */
  int status;
  uint32_t head_start; /* where the final head starts in the buffer */
  int64_t content_length; /* -1 when absent */
  size_t extra;        /* chunk-extension and trailer bytes so far */
  const char *body;    /* the last body piece */
  size_t body_len;
  const char *error;   /* static text, after MP_HTTPC_ERROR */
  mp_span reason;
  unsigned nfields;
  mp_hfield fields[MP_HTTPC_MAX_FIELDS];
} mp_h1resp;

/* Readies h for a connection: at most max_head bytes of head (status line
 * and fields; chunk extensions and trailers together have the same
 * limit), at most max_fields fields (and at most MP_HTTPC_MAX_FIELDS). */
void mp_h1resp_init(mp_h1resp *h, size_t max_head, unsigned max_fields);

/* Readies h for the next response on the connection. head_only: the
 * request was HEAD, so no body whatever the head says. */
void mp_h1resp_start(mp_h1resp *h, bool head_only);

/* Parses buf[*pos, len), buf holding the current response from its first
 * byte, and advances *pos past what was consumed. Returns an MP_HTTPC_*
 * answer. After MP_HTTPC_HEAD and MP_HTTPC_BODY, call again (with no new
 * bytes if none are left) to go on. After MP_HTTPC_DONE the bytes from
 * *pos on belong to the next response, which needs mp_h1resp_start first;
 * after MP_HTTPC_DONE and MP_HTTPC_ERROR, further calls answer the same. */
int mp_h1resp_feed(mp_h1resp *h, const char *buf, size_t len, size_t *pos);

/* The connection closed after every byte was fed: MP_HTTPC_DONE when the
 * response is complete or its body runs to the close, else MP_HTTPC_ERROR
 * ("closed"). */
int mp_h1resp_eof(mp_h1resp *h);

#endif
