/*
 * Regular expressions for Lua (see ../ffi.h): PCRE2 patterns that the mock
 * library matches requests with (lua/moonport/core/regex.lua). A pattern
 * matches a whole subject, as Java's String.matches (WireMock's) does, and
 * every match runs within limits, so a pattern that backtracks
 * catastrophically cannot hold the worker.
 *
 * It also matches for ngx.re (lua/moonport/ngx/re.lua, through
 * lua/moonport/core/regex.lua): mp_re_* patterns compiled with
 * OpenResty's options, matched anywhere from an offset, with every
 * group's position and the pattern's group names. Each such pattern
 * carries its own match block, sized for its groups; the limits are the
 * same.
 */
#include "ffi.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "errors.h"

/* One match may take REGEX_STEPS plus REGEX_STEPS_PER_BYTE for every byte
 * of its subject steps of PCRE2's matcher (the JIT honours this limit
 * too), and as much backtracking depth, within REGEX_HEAP_LIMIT_KIB of
 * heap (the interpreter's limits). A pattern that backtracks
 * catastrophically costs about a tenth of a millisecond on a header, and
 * a pattern that is merely linear has room for a megabyte of body. */
#define REGEX_STEPS 100000u
#define REGEX_STEPS_PER_BYTE 8u
#define REGEX_HEAP_LIMIT_KIB 32768u

void *mp_regex_compile(const char *pattern, size_t len, int flags, char *err,
                       size_t errlen) {
  int code;
  PCRE2_SIZE at;
  /* Anchored at both ends. Invalid UTF-8 in a subject just fails to
   * match. */
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_ANCHORED |
                     ((flags & MP_REGEX_CASELESS) ? PCRE2_CASELESS : 0);
  /* PCRE2 refuses partial matching with PCRE2_ENDANCHORED: the partial
   * form ends the pattern with \z instead, which a partial match may stop
   * short of. */
  char *wrapped = NULL;
  bool partial = (flags & MP_REGEX_PARTIAL) != 0;
  if (partial) {
    if (len > SIZE_MAX - 6 || (wrapped = malloc(len + 6)) == NULL) {
      snprintf(err, errlen, "out of memory");
      return NULL;
    }
    memcpy(wrapped, "(?:", 3);
    memcpy(wrapped + 3, pattern, len);
    memcpy(wrapped + 3 + len, ")\\z", 3);
    pattern = wrapped;
    len += 6;
  } else {
    options |= PCRE2_ENDANCHORED;
  }
  pcre2_code *re =
      pcre2_compile((PCRE2_SPTR)pattern, len, options, &code, &at, NULL);
  free(wrapped);
  if (re == NULL) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    snprintf(err, errlen, "%s at offset %zu", (const char *)msg, (size_t)at);
    return NULL;
  }
  /* The interpreter otherwise. */
  pcre2_jit_compile(re, partial ? PCRE2_JIT_PARTIAL_HARD : PCRE2_JIT_COMPLETE);
  return re;
}

/* The match context of every match, with the limits above set for a
 * subject of len bytes; NULL when it cannot be made. */
static pcre2_match_context *limits_for(size_t len) {
  static pcre2_match_context *mc;
  if (mc == NULL) {
    if ((mc = pcre2_match_context_create(NULL)) == NULL) return NULL;
    pcre2_set_heap_limit(mc, REGEX_HEAP_LIMIT_KIB);
  }
  uint64_t steps = REGEX_STEPS + (uint64_t)REGEX_STEPS_PER_BYTE * len;
  uint32_t limit = steps > UINT32_MAX ? UINT32_MAX : (uint32_t)steps;
  pcre2_set_match_limit(mc, limit);
  pcre2_set_depth_limit(mc, limit);
  return mc;
}

/* Runs re over all of subject with the limits above. One match block
 * serves every match: only success is looked at. */
static int regex_run(void *re, const char *subject, size_t len,
                     uint32_t options) {
  static pcre2_match_data *md;
  if (md == NULL && (md = pcre2_match_data_create(1, NULL)) == NULL)
    return PCRE2_ERROR_NOMEMORY;
  pcre2_match_context *mc = limits_for(len);
  if (mc == NULL) return PCRE2_ERROR_NOMEMORY;
  return pcre2_match(re, (PCRE2_SPTR)subject, len, 0, options, md, mc);
}

int mp_regex_match(void *re, const char *subject, size_t len) {
  int rc = regex_run(re, subject, len, 0);
  if (rc >= 0) return MP_REGEX_MATCH;
  if (rc == PCRE2_ERROR_NOMATCH) return MP_REGEX_NOMATCH;
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
      rc == PCRE2_ERROR_HEAPLIMIT)
    return MP_REGEX_LIMIT;
  return MP_INVALID;
}

/* Whether the first n bytes of subject match, or could if more followed
 * (re compiled with MP_REGEX_PARTIAL). An empty subject is never a
 * partial match to PCRE2: the caller takes it as one. */
static int regex_viable(void *re, const char *subject, size_t n) {
  int rc = regex_run(re, subject, n, PCRE2_PARTIAL_HARD);
  if (rc >= 0 || rc == PCRE2_ERROR_PARTIAL) return 1;
  return rc == PCRE2_ERROR_NOMATCH ? 0 : MP_INVALID;
}

int mp_regex_prefix(void *re, const char *subject, size_t len) {
  if (len > INT_MAX) return MP_INVALID;
  /* Binary search: a prefix of a viable prefix is viable. */
  size_t lo = 0, hi = len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    int rc = regex_viable(re, subject, mid);
    if (rc < 0) return rc;
    if (rc)
      lo = mid;
    else
      hi = mid - 1;
  }
  return (int)lo;
}

void mp_regex_free(void *re) { pcre2_code_free(re); }

/* ---- ngx.re ---- */

/* A pattern for ngx.re: the code, a match block sized for its groups, and
 * the MP_RE_* flags that act at match time. */
typedef struct re {
  pcre2_code *code;
  pcre2_match_data *md;
  uint32_t ncaptures;
  int flags;
} re;

/* DFA matching's workspace, in ints: enough for patterns of some hundred
 * items; a larger one fails with PCRE2's "workspace size exceeded". */
#define DFA_WORKSPACE 1000

void *mp_re_compile(const char *pattern, size_t len, int flags, char *err,
                    size_t errlen) {
  int code;
  PCRE2_SIZE at;
  uint32_t options = 0;
  if (flags & MP_RE_CASELESS) options |= PCRE2_CASELESS;
  if (flags & MP_RE_MULTILINE) options |= PCRE2_MULTILINE;
  if (flags & MP_RE_DOTALL) options |= PCRE2_DOTALL;
  if (flags & MP_RE_EXTENDED) options |= PCRE2_EXTENDED;
  if (flags & MP_RE_ANCHORED) options |= PCRE2_ANCHORED;
  if (flags & MP_RE_UTF) options |= PCRE2_UTF;
  if (flags & MP_RE_DUPNAMES) options |= PCRE2_DUPNAMES;
  /* PCRE1's JavaScript compatibility, as PCRE2 spells it. */
  if (flags & MP_RE_JAVASCRIPT)
    options |= PCRE2_ALT_BSUX | PCRE2_ALLOW_EMPTY_CLASS |
               PCRE2_MATCH_UNSET_BACKREF;
  re *r = calloc(1, sizeof *r);
  if (r == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  r->flags = flags;
  r->code = pcre2_compile((PCRE2_SPTR)pattern, len, options, &code, &at, NULL);
  if (r->code == NULL) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    snprintf(err, errlen, "pcre2_compile() failed: %s in \"%.*s\" at offset %zu",
             (const char *)msg, (int)(len > 200 ? 200 : len), pattern,
             (size_t)at);
    goto err;
  }
  pcre2_pattern_info(r->code, PCRE2_INFO_CAPTURECOUNT, &r->ncaptures);
  r->md = pcre2_match_data_create(r->ncaptures + 1, NULL);
  if (r->md == NULL) {
    snprintf(err, errlen, "out of memory");
    goto err;
  }
  /* Only with 'j', as OpenResty: JIT compiling costs more than one
   * interpreted match. The interpreter when the JIT is unavailable. */
  if ((flags & MP_RE_JIT) && !(flags & MP_RE_DFA))
    pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE);
  return r;

err:
  mp_re_free(r);
  return NULL;
}

int mp_re_info(void *p, int *ncaptures, const unsigned char **names,
               int *entry_size) {
  re *r = p;
  uint32_t count = 0, size = 0;
  PCRE2_SPTR table = NULL;
  pcre2_pattern_info(r->code, PCRE2_INFO_NAMECOUNT, &count);
  pcre2_pattern_info(r->code, PCRE2_INFO_NAMEENTRYSIZE, &size);
  pcre2_pattern_info(r->code, PCRE2_INFO_NAMETABLE, &table);
  *ncaptures = (int)r->ncaptures;
  *names = table;
  *entry_size = (int)size;
  return (int)count;
}

int mp_re_exec(void *p, const char *subject, size_t len, size_t offset,
               int *ov, char *err, size_t errlen) {
  re *r = p;
  int rc;
  if (len > INT_MAX || offset > len) {
    snprintf(err, errlen, "the subject or the offset is out of range");
    return MP_INVALID;
  }
  pcre2_match_context *mc = limits_for(len);
  if (mc == NULL) {
    snprintf(err, errlen, "out of memory");
    return MP_INVALID;
  }
  if (r->flags & MP_RE_DFA) {
    int ws[DFA_WORKSPACE];
    rc = pcre2_dfa_match(r->code, (PCRE2_SPTR)subject, len, offset, 0, r->md,
                         mc, ws, DFA_WORKSPACE);
    /* 0: more matches than the block holds; the first, the longest, is
     * there. */
    if (rc == 0) rc = 1;
  } else {
    rc = pcre2_match(r->code, (PCRE2_SPTR)subject, len, offset, 0, r->md, mc);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return MP_REGEX_NOMATCH;
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
      rc == PCRE2_ERROR_HEAPLIMIT)
    return MP_REGEX_LIMIT;
  if (rc < 0) {
    PCRE2_UCHAR msg[200];
    pcre2_get_error_message(rc, msg, sizeof msg);
    snprintf(err, errlen, "pcre2_match() failed: %s", (const char *)msg);
    return MP_INVALID;
  }
  /* Every group's pair, -1 for those that took no part (PCRE2 leaves the
   * pairs past rc as they were). A DFA match has group 0 alone. */
  PCRE2_SIZE *v = pcre2_get_ovector_pointer(r->md);
  uint32_t pairs = r->ncaptures + 1;
  for (uint32_t i = 0; i < pairs; i++) {
    int set = i < (uint32_t)rc && !(r->flags & MP_RE_DFA && i > 0) &&
              v[2 * i] != PCRE2_UNSET;
    ov[2 * i] = set ? (int)v[2 * i] : -1;
    ov[2 * i + 1] = set ? (int)v[2 * i + 1] : -1;
  }
  return MP_REGEX_MATCH;
}

void mp_re_free(void *p) {
  re *r = p;
  if (r == NULL) return;
  pcre2_match_data_free(r->md);
  pcre2_code_free(r->code);
  free(r);
}
