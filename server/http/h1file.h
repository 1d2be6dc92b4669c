/*
 * HTTP's rules for serving a file, on strings: the media type an extension
 * stands for, the validators (ETag, Last-Modified), the conditional
 * headers, byte ranges and Accept-Encoding. No I/O; handlers/static.c
 * applies them to files it has opened.
 */
#ifndef MP_H1FILE_H
#define MP_H1FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The Content-Type for a file name, from its extension (case does not
 * matter), as nginx's mime.types has it; text types carry
 * "; charset=utf-8". "application/octet-stream" for an unknown or missing
 * extension. The string is static. */
const char *mp_h1file_type(const char *name, size_t len);

/* Writes the ETag of a file of size bytes last modified at mtime (seconds)
 * as nginx does: "<mtime hex>-<size hex>", quotes included, into out (at
 * least MP_H1FILE_ETAG_MAX bytes). Returns its length. */
#define MP_H1FILE_ETAG_MAX 40
size_t mp_h1file_etag(char *out, int64_t mtime, uint64_t size);

/* Writes t as an HTTP date (IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT")
 * into out (at least 30 bytes). Returns its length (29). */
size_t mp_h1file_date(char *out, time_t t);

/* Parses an HTTP date in IMF-fixdate form. Returns false for anything
 * else (the obsolete forms included), which callers ignore. */
bool mp_h1file_parse_date(const char *s, size_t n, time_t *out);

/* Whether an If-None-Match value (a list of entity tags, or "*") matches
 * etag, compared weakly (a W/ prefix on either side does not matter). */
bool mp_h1file_none_match(const char *list, size_t n, const char *etag,
                          size_t elen);

/* Whether an If-Range value lets a Range apply: an entity tag compared
 * strongly (a weak tag never matches), or a date equal to mtime. */
bool mp_h1file_if_range(const char *v, size_t n, const char *etag,
                        size_t elen, time_t mtime);

typedef struct mp_h1file_range {
  uint64_t first; /* the first byte's offset */
  uint64_t len;   /* bytes, at least 1 */
} mp_h1file_range;

/* What mp_h1file_ranges found. */
enum {
  MP_H1FILE_RANGE_IGNORE = 0,         /* not a bytes range set we take: 200 */
  MP_H1FILE_RANGE_UNSATISFIABLE = -1  /* none of them fits the file: 416 */
};

/* Parses a Range value ("bytes=0-99,200-", "bytes=-500") against a file
 * of size bytes into at most max ranges, in the order asked, each cut to
 * the file's end. Returns how many (>= 1); MP_H1FILE_RANGE_IGNORE for a
 * malformed value, another unit or more than max ranges (the whole file is
 * served); MP_H1FILE_RANGE_UNSATISFIABLE when no range overlaps the
 * file. */
int mp_h1file_ranges(const char *v, size_t n, uint64_t size,
                     mp_h1file_range *out, int max);

/* Whether an Accept-Encoding value accepts coding ("gzip", "br") with a
 * non-zero weight, itself or through "*". "x-gzip" counts as gzip. */
bool mp_h1file_accepts(const char *v, size_t n, const char *coding);

#endif
