/*
 * The response a handler builds: status, reason, headers, a whole body or
 * a streamed one, on purpose broken (a mock's fault), or the core's own
 * JSON errors. Everything goes into the request's connection's output;
 * once the client has gone (the request detached), nothing does.
 */
#ifndef MP_RESPONSE_H
#define MP_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>

#include "pool.h"
#include "request.h"
#include "server.h"

/* ---- The response, as the handler builds it. Each returns 0 or a
 * negative code: MP_STATE (already sent), MP_INVALID, MP_NOMEM. ---- */

int mp_response_status(mp_request *r, int status);
/* A reason phrase instead of the standard one (at most 63 bytes of visible
 * characters, spaces and tabs). Returns 0, MP_STATE or MP_INVALID. */
int mp_response_reason(mp_request *r, const char *text, size_t len);
int mp_response_header(mp_request *r, const char *name, size_t nlen,
                       const char *value, size_t vlen);
/* The header lines set so far ("Name: value\r\n" each; not
 * Content-Length), in *out and its length, valid until the next call that
 * changes the response. Returns MP_STATE once the head has gone out. */
int mp_response_headers(mp_request *r, const char **out, size_t *len);
/* Forgets the header fields and the reason phrase set so far, so that
 * another answer can take the response's place (a validator's 500).
 * Returns 0, or MP_STATE once the response has begun. */
int mp_response_reset(mp_request *r);
/* The whole body; content_type is used unless the handler set one. */
int mp_response_send(mp_request *r, const char *body, size_t len,
                     const char *content_type);
/* A piece of a streamed body. Returns 0, MP_STATE, MP_NOMEM, or MP_CLOSED
 * once the client has gone. */
int mp_response_write(mp_request *r, const char *data, size_t len);
int mp_response_finish(mp_request *r);

/* The head of a response whose length bytes of body the caller sends
 * itself, not through the connection's output (a file, with sendfile:
 * handlers/static.c); content_type is used unless the handler set one.
 * Counts what it sends in r->sent, and calls mp_response_finish once
 * r->sent == length. Returns 0, MP_STATE (already begun), MP_CLOSED (the
 * client has gone; r is done) or MP_NOMEM. */
int mp_response_head(mp_request *r, const char *content_type, int64_t length);

/* Breaks the response on purpose, as a mock server's fault does, and ends
 * the connection after the responses owed before it. */
enum {
  MP_FAULT_RESET = 1,           /* a TCP reset, nothing written */
  MP_FAULT_EMPTY = 2,           /* closed without a byte */
  MP_FAULT_MALFORMED_CHUNK = 3, /* a chunked head, then a chunk that is not */
  MP_FAULT_RANDOM_DATA = 4      /* bytes that are not HTTP, then closed */
};
/* Returns 0, MP_STATE once the response has begun, MP_INVALID for an
 * unknown kind. */
int mp_response_fault(mp_request *r, int kind);

/* A JSON error answer from the core: {"error": "<text>"}. When the
 * response has already started, the connection is closed instead. */
void mp_response_error(mp_request *r, int status, const char *text);
/* The same, with extra header lines (each ending in CRLF). */
void mp_response_error_with(mp_request *r, int status, const char *text,
                            const char *extra, size_t extra_len);

/* Appends a whole JSON error response to out, for failures that have no
 * request record (malformed requests). Returns the body's length, or
 * MP_NOMEM. */
int mp_response_error_to(mp_server *s, mp_buf *out, int status,
                         const char *text, bool close, const char *extra,
                         size_t extra_len);

/* r's handler (or one of its light threads: the code running now) wrote
 * past --write-high-water: it waits (the caller must yield right after)
 * until the connection's output drains below it, when the connection
 * resumes it. Returns MP_AGAIN, or 0 when the code running now cannot
 * wait on r's client (it is not r's): then nothing waits. */
int mp_response_wait_write(mp_request *r);

#endif
