/*
 * What the HTTP/1.1 request parser (http1.h) and response parser
 * (h1resp.h) share: the pre-scan of head bytes that rejects what llhttp
 * 8.1.0 lets through (NUL, a CR not followed by LF, obs-fold) and bounds
 * the head, and the readers of the comma-separated lists that decide
 * framing and the connection (Transfer-Encoding, Connection). No I/O.
 * Each parser words the failures for its own side.
 */
#ifndef MP_H1SCAN_H
#define MP_H1SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the pre-scan stands in one head. */
typedef struct mp_h1scan {
  uint8_t state;    /* position within a line, see h1scan.c */
  bool first_line;  /* still in the request or status line */
  int8_t refused;   /* an MP_H1SCAN_* code due at the next call, or 0 */
  uint32_t scanned; /* head bytes scanned and passed so far */
} mp_h1scan;

/* Why mp_h1scan_head refused the head. */
enum {
  MP_H1SCAN_NUL = -1,      /* a NUL byte */
  MP_H1SCAN_BARE_CR = -2,  /* a CR not followed by LF */
  MP_H1SCAN_OBS_FOLD = -3, /* a line starting with SP or HTAB */
  MP_H1SCAN_TOO_LARGE = -4 /* more than max bytes (see first_line) */
};

/* Readies s for a head. Blank lines before its first line are skipped. */
void mp_h1scan_start(mp_h1scan *s);

/* Scans the next n head bytes at p, at most max bytes in all for the
 * head. Returns how many of them may go to the parser now (all n, or up
 * to and including the LF that ends the first line, or the blank line
 * that ends the head), or an MP_H1SCAN_* code. Looks at no byte past the
 * limit.
 *
 * A refusal comes at the byte it is about, whatever the reads: when bytes
 * before that byte are in the same call, their count is returned and the
 * code is kept for the next call, so that the caller's parser sees them
 * first and reports an error of its own among them, as it would have had
 * they come in a read of their own. A CR is passed only with the byte
 * after it: one that ends the n bytes is not counted (the caller keeps it
 * and gives it again with the next bytes), and a bare CR is refused at
 * the byte after it without being passed. So 0 means a lone CR was held
 * back. */
long mp_h1scan_head(mp_h1scan *s, const char *p, size_t n, size_t max);

/* True once the blank line ending the head has been scanned. */
bool mp_h1scan_done(const mp_h1scan *s);

/* The next element of the comma-separated list v[0, len) at or after *i
 * (RFC 9110 section 5.6.1), without the whitespace around it: its start,
 * with its length in *n, or NULL when none is left. Empty elements are
 * skipped. */
const char *mp_h1_list_next(const char *v, size_t len, size_t *i, size_t *n);

/* Reads the codings of one Transfer-Encoding value: *other is set when
 * one is not "chunked", *last_chunked says whether the value's last one
 * is (left as it was for an empty value). */
void mp_h1_read_codings(const char *v, size_t len, bool *other,
                        bool *last_chunked);

/* Connection options that matter (RFC 9110 section 7.6.1), as the bits
 * mp_h1_read_connection returns for one Connection value. */
enum { MP_H1_OPT_CLOSE = 1, MP_H1_OPT_KEEP_ALIVE = 2, MP_H1_OPT_UPGRADE = 4 };
unsigned mp_h1_read_connection(const char *v, size_t len);

#endif
