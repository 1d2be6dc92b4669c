/*
 * The head pre-scan and the list readers both HTTP/1.1 parsers use (see
 * h1scan.h for the contract).
 *
 * The pre-scan keeps one byte of state between calls (where it is in a
 * line), so a head may arrive in any number of pieces. Inside a line only
 * NUL, CR and LF matter; the rest is skipped 16 bytes at a time where SSE2
 * is there, since every head byte passes here before llhttp sees it.
 */
#include "h1scan.h"

#include "str.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Pre-scan positions within the head. */
enum {
  SC_PRE,        /* before the first line: blank lines are skipped */
  SC_PRE_CR,     /* CR before the first line */
  SC_LINE_START, /* first byte of a line after the first line */
  SC_IN_LINE,
  SC_CR,       /* CR inside a line: LF must follow */
  SC_BLANK_CR, /* CR at a line start: it can only begin the blank line */
  SC_DONE      /* the blank line ending the head has been scanned */
};

void mp_h1scan_start(mp_h1scan *s) {
  s->state = SC_PRE;
  s->first_line = true;
  s->refused = 0;
  s->scanned = 0;
}

bool mp_h1scan_done(const mp_h1scan *s) { return s->state == SC_DONE; }

/* Bytes the pre-scan must look at inside a line. */
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

long mp_h1scan_head(mp_h1scan *s, const char *p, size_t n, size_t max) {
  if (s->refused != 0) return s->refused;
  size_t allowance = max - s->scanned; /* scanned <= max here */
  size_t lim = n < allowance ? n : allowance;
  size_t i = 0;
  int refused = 0;
  bool first_line = s->first_line;
  /* A refused byte is neither passed nor moves the state on. */
  while (i < lim && s->state != SC_DONE && refused == 0) {
    if (s->state == SC_IN_LINE) {
      i = skip_plain(p, i, lim);
      if (i == lim) break;
    }
    unsigned char c = (unsigned char)p[i];
    bool after_cr = s->state == SC_CR || s->state == SC_PRE_CR ||
                    s->state == SC_BLANK_CR;
    /* A CR goes with the byte after it: held back until that comes. (After
     * a CR, c is that byte: anything but LF makes the CR a bare one.) */
    if (c == '\r' && i + 1 == n && !after_cr) break;
    if (c == '\0' && !after_cr) {
      refused = MP_H1SCAN_NUL;
      break;
    }
    switch (s->state) {
      case SC_PRE:
        if (c == '\r')
          s->state = SC_PRE_CR;
        else if (c != '\n')
          s->state = SC_IN_LINE;
        break;
      case SC_PRE_CR:
        if (c != '\n') refused = MP_H1SCAN_BARE_CR;
        else s->state = SC_PRE;
        break;
      case SC_LINE_START:
        if (c == ' ' || c == '\t')
          refused = MP_H1SCAN_OBS_FOLD;
        else if (c == '\n')
          s->state = SC_DONE;
        else if (c == '\r')
          s->state = SC_BLANK_CR;
        else
          s->state = SC_IN_LINE;
        break;
      case SC_IN_LINE: /* c is CR or LF */
        if (c == '\r') {
          s->state = SC_CR;
        } else {
          s->state = SC_LINE_START;
          s->first_line = false;
        }
        break;
      case SC_CR:
        if (c != '\n') {
          refused = MP_H1SCAN_BARE_CR;
        } else {
          s->state = SC_LINE_START;
          s->first_line = false;
        }
        break;
      case SC_BLANK_CR:
        if (c != '\n') refused = MP_H1SCAN_BARE_CR;
        else s->state = SC_DONE;
        break;
    }
    if (refused != 0) break;
    i++;
    /* The first line goes to the parser alone, so that what it makes of
     * that line never depends on whether field bytes came with it. */
    if (first_line && !s->first_line) break;
  }
  /* A bare CR is refused at the byte after it, and not passed itself:
   * it is the byte before, in this call, since it was not held back. */
  if (refused == MP_H1SCAN_BARE_CR) i--;
  /* More bytes than the limit allows, and the head not over. */
  if (refused == 0 && lim < n && i == lim && s->state != SC_DONE)
    refused = MP_H1SCAN_TOO_LARGE;
  s->scanned += (uint32_t)i;
  if (refused == 0) return (long)i;
  s->refused = (int8_t)refused;
  return i > 0 ? (long)i : refused;
}

const char *mp_h1_list_next(const char *v, size_t len, size_t *i, size_t *n) {
  while (*i < len) {
    while (*i < len && (v[*i] == ' ' || v[*i] == '\t' || v[*i] == ',')) (*i)++;
    size_t start = *i;
    while (*i < len && v[*i] != ',') (*i)++;
    size_t end = *i;
    while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t')) end--;
    if (end > start) {
      *n = end - start;
      return v + start;
    }
  }
  return NULL;
}

static bool element_is(const char *e, size_t n, const char *lit, size_t len) {
  return n == len && mp_str_ieq(e, lit, len);
}

void mp_h1_read_codings(const char *v, size_t len, bool *other,
                        bool *last_chunked) {
  size_t i = 0, n;
  const char *e;
  while ((e = mp_h1_list_next(v, len, &i, &n)) != NULL) {
    bool chunked = element_is(e, n, "chunked", 7);
    if (!chunked) *other = true;
    *last_chunked = chunked;
  }
}

unsigned mp_h1_read_connection(const char *v, size_t len) {
  size_t i = 0, n;
  const char *e;
  unsigned options = 0;
  while ((e = mp_h1_list_next(v, len, &i, &n)) != NULL) {
    if (element_is(e, n, "close", 5)) options |= MP_H1_OPT_CLOSE;
    else if (element_is(e, n, "keep-alive", 10))
      options |= MP_H1_OPT_KEEP_ALIVE;
    else if (element_is(e, n, "upgrade", 7)) options |= MP_H1_OPT_UPGRADE;
  }
  return options;
}
