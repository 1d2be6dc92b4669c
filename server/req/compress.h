/*
 * Response compression: gzip (zlib's deflate with a gzip wrapper) of the
 * bodies handlers send, when the app asks for it (--gzip for every
 * response, or moonport.compress / res:compress for some) and the client
 * accepts it.
 *
 * What to compress is a "rule": the Content-Types it applies to (prefixes
 * such as "text/" or whole types), the least body length and the level.
 * Rules are registered once per worker (at load) and named by a small
 * number; a request carries the number of its rule (r->compress, 0: none).
 * A whole body (mp_response_send) is compressed in one go through the
 * worker's one deflate stream into the worker's scratch buffer; a
 * streamed body gets a stream of its own, flushed at every write so each
 * piece reaches the client when it is written.
 */
#ifndef MP_COMPRESS_H
#define MP_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "pool.h"
#include "request.h"

/* The most rules a worker keeps (equal rules share a number). */
#define MP_COMPRESS_MAX_RULES 64

/* The types --gzip and a rule without types compress. */
#define MP_COMPRESS_DEFAULT_TYPES                                            \
  "text/,application/json,application/javascript,application/xml,"          \
  "application/xhtml+xml,application/rss+xml,application/atom+xml,"         \
  "application/manifest+json,application/ld+json,application/problem+json," \
  "image/svg+xml"

/* Registers a rule: types (comma-separated prefixes or types, NULL for
 * the default list), the least body length to compress (a streamed body
 * is compressed whatever its length), level 1 to 9. Returns its number
 * (1 up), MP_INVALID for a level out of range or types too long, or
 * MP_NOMEM when the worker has MP_COMPRESS_MAX_RULES already. */
int mp_compress_rule(const char *types, size_t min_length, int level);

/* Whether r's response is to be compressed, its Content-Type being
 * content_type (ctlen bytes): a rule applies and matches the type, the
 * status has a body and is not 206, no Content-Encoding was set, and the
 * client accepts gzip. *vary is set when a rule matches the type, so that
 * the answer must say Vary: Accept-Encoding whether or not it is
 * compressed. */
bool mp_compress_wanted(mp_request *r, const char *content_type,
                        size_t ctlen, bool *vary);

/* Compresses a whole body of len bytes (at least the rule's least length;
 * else *out is in and *outlen len, and it returns 1: send as it is).
 * Returns 0 with *out pointing into the worker's scratch buffer (valid
 * until the next call), or MP_NOMEM. */
int mp_compress_whole(mp_request *r, const char *in, size_t len,
                      const char **out, size_t *outlen);

/* A streamed body: starts r's own deflate stream (0 or MP_NOMEM),
 * compresses len bytes with a sync flush into out (appended), and ends
 * the stream into out (final is true) or frees it unended (out NULL). */
int mp_compress_stream_start(mp_request *r);
int mp_compress_stream(mp_request *r, const char *in, size_t len, bool final,
                       mp_buf *out);
void mp_compress_stream_free(mp_request *r);

#endif
